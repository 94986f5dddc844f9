/**
 * The execute_* MCP tools' `video` option, with the SDK's client over streamable HTTP on a
 * gateway listening on a loopback port: the MP4 of the chunk comes back as an embedded
 * video/mp4 resource (the gateway URL it is served from as its uri) beside the motion data.
 */
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import type { CallToolResult } from "@modelcontextprotocol/sdk/types.js";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { AGENT_TOKEN, type TestGateway, testGateway } from "../../compose/testing.ts";
import { AgentClient } from "../client/client.ts";

let g: TestGateway;
let url: string;

beforeAll(async () => {
  g = await testGateway(
    { backend: { type: "sim" }, task: { id: "free-motion", seed: 1 } },
    { recorder: false },
  );
  url = await g.app.listen({ host: "127.0.0.1", port: 0 });
});
afterAll(async () => {
  await g.close();
});

describe("MCP execute_* with video", () => {
  it("lists the option and returns the chunk's MP4 as a video/mp4 resource", async () => {
    const client = new Client({ name: "mcp-video-test", version: "0" });
    await client.connect(
      new StreamableHTTPClientTransport(new URL("/mcp", url), {
        requestInit: { headers: { authorization: `Bearer ${AGENT_TOKEN}` } },
      }),
    );
    try {
      const { tools } = await client.listTools();
      const exec = tools.find((t) => t.name === "execute_joint_trajectory")!;
      expect(Object.keys(exec.inputSchema.properties ?? {})).toContain("video");

      const r = (await new AgentClient({ url, token: AGENT_TOKEN }).observe({ cameras: [] })).readings[0]!;
      const hold = Array.from({ length: 4 }, () => [...r.q, r.gripper_width_m]);
      const res = (await client.callTool({
        name: "execute_joint_trajectory",
        arguments: { dt: 0.05, rows: hold, video: { fps: 20, cameras: ["front"] } },
      })) as CallToolResult;
      expect(res.isError ?? false).toBe(false);
      const first = res.content[0]!;
      if (first.type !== "text") throw new Error("no JSON text first");
      const data = JSON.parse(first.text);
      expect(data.executed_rows).toBe(4);
      // 0.2 s at 20 fps: a frame at the start and every 50 control periods → 5
      expect(data.videos).toHaveLength(1);
      expect(data.videos[0]).toMatchObject({ camera: "front", frames: 5, fps: 20, codec: "h264" });
      const files = res.content.filter((c) => c.type === "resource");
      expect(files).toHaveLength(1);
      const file = files[0]!;
      if (file.type !== "resource" || !("blob" in file.resource)) throw new Error("no blob resource");
      expect(file.resource.mimeType).toBe("video/mp4");
      // the path the gateway serves it at (GET with the agent token), after the client's base URL
      // the uri is where this gateway serves it: the base the MCP client reached it at
      expect(file.resource.uri).toBe(`${url}${data.videos[0].url}`);
      const mp4 = Buffer.from(file.resource.blob, "base64");
      expect(mp4.byteLength).toBe(data.videos[0].bytes);
      const fetched = await fetch(file.resource.uri, { headers: { authorization: `Bearer ${AGENT_TOKEN}` } });
      expect(fetched.status).toBe(200);
      expect(Buffer.from(await fetched.arrayBuffer()).equals(mp4)).toBe(true);
      expect(mp4.subarray(4, 8).toString("latin1")).toBe("ftyp");

      // without the option: no resource, no videos
      const plain = (await client.callTool({
        name: "execute_joint_trajectory",
        arguments: { dt: 0.05, rows: hold.slice(0, 1) },
      })) as CallToolResult;
      expect(plain.content.some((c) => c.type === "resource")).toBe(false);
    } finally {
      await client.close();
    }
  });
});
