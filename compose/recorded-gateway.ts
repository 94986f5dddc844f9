/**
 * Test and benchmark helper: a gateway on the mirror backend whose episodes are recorded by an
 * McapRecorder, optionally with extra (test-only) task definitions.
 */
import type { FastifyInstance } from "fastify";
import { parseBenchConfig } from "./bench-config.ts";
import { startGateway } from "./start.ts";
import type { Gateway } from "../gateway/gateway.ts";
import type { TaskDefinition } from "../tasks/types.ts";
import { AGENT_TOKEN, OPERATOR_TOKEN } from "./testing.ts";
import { McapRecorder, type McapRecorderOptions } from "../gateway/recorder/mcap-recorder.ts";

export interface RecordedGateway {
  app: FastifyInstance;
  gateway: Gateway;
  recorders: McapRecorder[];
  agent: { authorization: string };
  operator: { authorization: string };
  close(): Promise<void>;
}

export async function recordedGateway(
  recordsDir: string,
  opts: {
    /** bench config fields (default: the mirror backend) */
    bench?: Record<string, unknown>;
    tasks?: TaskDefinition[];
    task?: string;
    recorder?: Partial<McapRecorderOptions>;
  } = {},
): Promise<RecordedGateway> {
  const config = parseBenchConfig(
    { version: 1, name: "recorder-test", backend: { type: "mirror" }, ...opts.bench },
    "test",
  );
  const recorders: McapRecorder[] = [];
  const g = await startGateway({
    config,
    agentToken: AGENT_TOKEN,
    operatorToken: OPERATOR_TOKEN,
    observers: (_e, b) => {
      const r = new McapRecorder({
        recordsDir,
        ...(b.provenance ? { provenance: b.provenance } : {}),
        taskBench: b.taskBench,
        ...opts.recorder,
      });
      recorders.push(r);
      return [r];
    },
    ...(opts.tasks ? { tasks: opts.tasks } : {}),
    firstEpisode: opts.task ? { task: opts.task } : {},
  });
  const { app, gateway } = g;
  return {
    app,
    gateway,
    recorders,
    agent: { authorization: `Bearer ${AGENT_TOKEN}` },
    operator: { authorization: `Bearer ${OPERATOR_TOKEN}` },
    close: () => g.close(),
  };
}
