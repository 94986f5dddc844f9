/**
 * One MCP server over an agent client: the SDK's McpServer with the T0 tool layer (./tools.ts)
 * installed. The stdio command and the /mcp endpoint both build it here.
 */
import { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js";
import type { AgentClient } from "../client/client.ts";
import { softwareVersion } from "../recorder/provenance.ts";
import { installTools } from "./tools.ts";

const INSTRUCTIONS =
  "Robot arm under the robot-gateway Standard API. Start with get_task_spec (task card, robot limits, cameras), " +
  "look with get_observation, move with the execute_* / jog / set_gripper tools the level opens, and end with submit_result. " +
  "Poses are in the robot base frame (m, quaternion xyzw); every result carries t and time_left_s in episode seconds; " +
  "an error result carries an RB_ERR code (see docs/errors.md).";

export function createMcpServer(client: AgentClient): McpServer {
  const server = new McpServer(
    { name: "robot-gateway", version: softwareVersion().version },
    { capabilities: { tools: { listChanged: false } }, instructions: INSTRUCTIONS },
  );
  installTools(server, client);
  return server;
}
