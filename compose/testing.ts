/**
 * Test helpers: a gateway on a given bench config, served by fastify inject() or on port 0.
 * Shipped (not test-only) so hil-tests and benchmarks build gateways the same way.
 */
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { FastifyInstance } from "fastify";
import { type BenchConfig, parseBenchConfig } from "./bench-config.ts";
import { type StartGatewayOptions, startGateway } from "./start.ts";
import type { Gateway } from "../gateway/gateway.ts";
import { McapRecorder } from "../gateway/recorder/mcap-recorder.ts";
import { gradeRecord } from "../gateway/recorder/replay.ts";

export const AGENT_TOKEN = "agent-test-token";
export const OPERATOR_TOKEN = "operator-test-token";

export interface TestGateway {
  app: FastifyInstance;
  gateway: Gateway;
  agent: { authorization: string };
  operator: { authorization: string };
  close(): Promise<void>;
}

/**
 * A bench config object validated like a bench file (name "test" unless given), its records in a
 * scratch folder unless it names one.
 */
export function scratchBenchConfig(bench: Record<string, unknown> | BenchConfig): BenchConfig {
  const recordsDir =
    (bench as { recordsDir?: string }).recordsDir ?? mkdtempSync(join(tmpdir(), "rg-records-"));
  return parseBenchConfig({ version: 1, name: "test", ...bench, recordsDir }, "test");
}

/**
 * Build a gateway on a bench config object (validated like a bench file) and start an episode.
 * `recorder: false`: no observers (benchmarks of the bare call).
 */
export async function testGateway(
  bench: Record<string, unknown> | BenchConfig,
  opts: { recorder?: boolean; frameStore?: StartGatewayOptions["frameStore"] } = {},
): Promise<TestGateway> {
  const config = scratchBenchConfig(bench);
  const g = await startGateway({
    config,
    agentToken: AGENT_TOKEN,
    operatorToken: OPERATOR_TOKEN,
    ...(opts.recorder === false ? { observers: null } : {}),
    ...(opts.frameStore ? { frameStore: opts.frameStore } : {}),
  });
  const { app, gateway } = g;
  return {
    app,
    gateway,
    agent: { authorization: `Bearer ${AGENT_TOKEN}` },
    operator: { authorization: `Bearer ${OPERATOR_TOKEN}` },
    close: async () => {
      await g.close();
      // every recorded test episode the gateway keeps (its last EPISODES_KEPT) is graded offline at
      // close and must agree with the live result
      for (const r of g.observers) {
        if (!(r instanceof McapRecorder)) continue;
        const { recordPath } = await r.done;
        if (!recordPath) continue;
        const report = await gradeRecord(recordPath);
        if (!report.agree) {
          throw new Error(
            `grade disagrees with the live result for ${recordPath}: ${JSON.stringify(report.differences)}`,
          );
        }
      }
    },
  };
}
