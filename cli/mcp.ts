/**
 * `robot-gateway mcp --url URL --token T`: an MCP server on stdio for a coding agent, speaking
 * to a running gateway with the agent token through the TS client (the same tool layer as the
 * gateway's /mcp endpoint, gateway/mcp/tools.ts). URL and token default to ROBOT_GATEWAY_URL and
 * ROBOT_GATEWAY_TOKEN, the variables `robot-gateway run` hands its agents. stdout carries only
 * the protocol; diagnostics go to stderr.
 */
import { StdioServerTransport } from "@modelcontextprotocol/sdk/server/stdio.js";
import { Command } from "commander";
import { AgentClient } from "../gateway/client/client.ts";
import { createMcpServer } from "../gateway/mcp/server.ts";
import { isEntryPoint } from "./entry.ts";

export interface McpStdioOptions {
  url: string;
  token: string;
}

/** Serve MCP on this process's stdin/stdout until stdin closes. */
export async function serveMcpStdio(o: McpStdioOptions): Promise<{ close(): Promise<void> }> {
  const server = createMcpServer(new AgentClient({ url: o.url, token: o.token }));
  const transport = new StdioServerTransport();
  await server.connect(transport);
  return { close: () => server.close() };
}

export function mcpCommand(): Command {
  const cmd: Command = new Command("mcp")
    .description("serve the agent tools over MCP on stdio, against a running gateway (agent token)")
    .option("--url <url>", "gateway URL (default $ROBOT_GATEWAY_URL)")
    .option("--token <token>", "agent token (default $ROBOT_GATEWAY_TOKEN)")
    .action(async (o: { url?: string; token?: string }) => {
      const url = o.url ?? process.env.ROBOT_GATEWAY_URL;
      const token = o.token ?? process.env.ROBOT_GATEWAY_TOKEN;
      if (!url) return cmd.error("error: --url (or ROBOT_GATEWAY_URL) is required");
      if (!token) return cmd.error("error: --token (or ROBOT_GATEWAY_TOKEN) is required");
      const s = await serveMcpStdio({ url, token });
      process.stdin.once("end", () => void s.close());
      process.stderr.write(`robot-gateway mcp: serving the agent tools of ${url} on stdio\n`);
    });
  return cmd;
}

if (isEntryPoint(import.meta.url)) {
  await mcpCommand().name("mcp").parseAsync(process.argv);
}
