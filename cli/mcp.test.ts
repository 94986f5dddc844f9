/**
 * `robot-gateway mcp` as a process: the SDK's client over stdio, against a gateway that is not
 * there (the codes reach the agent), and without the options it needs.
 */
import { spawnSync } from "node:child_process";
import { createServer } from "node:net";
import { fileURLToPath } from "node:url";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import type { CallToolResult } from "@modelcontextprotocol/sdk/types.js";
import { describe, expect, it } from "vitest";

const ROOT = fileURLToPath(new URL("../", import.meta.url));

async function freePort(): Promise<number> {
  return new Promise((res) => {
    const s = createServer().listen(0, "127.0.0.1", () => {
      const p = (s.address() as { port: number }).port;
      s.close(() => res(p));
    });
  });
}

describe("robot-gateway mcp", () => {
  it("reports an unreachable gateway with its code, on tools/list and on a tool call", async () => {
    const url = `http://127.0.0.1:${await freePort()}`;
    const client = new Client({ name: "test", version: "0" });
    await client.connect(
      new StdioClientTransport({
        command: process.execPath,
        args: ["--import", "tsx", "cli/main.ts", "mcp", "--url", url, "--token", "t"],
        cwd: ROOT,
        stderr: "ignore",
      }),
    );
    try {
      await expect(client.listTools()).rejects.toThrow(/RB_ERR_GATEWAY_UNREACHABLE/);
      const r = (await client.callTool({ name: "get_robot_state", arguments: {} })) as CallToolResult;
      expect(r.isError).toBe(true);
      const first = r.content[0];
      expect(first?.type === "text" && JSON.parse(first.text).error.code).toBe("RB_ERR_GATEWAY_UNREACHABLE");
    } finally {
      await client.close();
    }
  });

  it("needs a URL and a token (options or ROBOT_GATEWAY_URL / ROBOT_GATEWAY_TOKEN)", () => {
    const env = { ...process.env };
    delete env.ROBOT_GATEWAY_URL;
    delete env.ROBOT_GATEWAY_TOKEN;
    const run = (args: string[], extra: Record<string, string> = {}) =>
      spawnSync(process.execPath, ["--import", "tsx", "cli/main.ts", "mcp", ...args], {
        cwd: ROOT,
        env: { ...env, ...extra },
        encoding: "utf8",
        input: "",
      });
    const noUrl = run([]);
    expect(noUrl.status).toBe(1);
    expect(noUrl.stderr).toMatch(/--url \(or ROBOT_GATEWAY_URL\) is required/);
    const noToken = run([], { ROBOT_GATEWAY_URL: "http://127.0.0.1:1" });
    expect(noToken.status).toBe(1);
    expect(noToken.stderr).toMatch(/--token \(or ROBOT_GATEWAY_TOKEN\) is required/);
  });
});
