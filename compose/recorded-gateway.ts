/**
 * Test and benchmark helper: a gateway on the mirror backend whose episodes are recorded by an
 * McapRecorder, optionally with extra (test-only) task definitions.
 */
import type { FastifyInstance } from "fastify";
import { buildApp } from "../gateway/app.ts";
import { parseBenchConfig } from "./bench-config.ts";
import { composeBench } from "./compose.ts";
import { Gateway } from "../gateway/gateway.ts";
import type { TaskDefinition } from "../tasks/types.ts";
import { AGENT_TOKEN, OPERATOR_TOKEN } from "./testing.ts";
import { McapRecorder, type McapRecorderOptions } from "../gateway/recorder/mcap-recorder.ts";
import { provenanceOf } from "../gateway/recorder/provenance.ts";
import { endOnStorageError } from "../gateway/recorder/storage.ts";
import { GatewayError } from "../gateway/errors.ts";

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
    /**
     * Interim stand-in for the episode awaiting its observers' flush(): agent responses are held
     * until the recorders have flushed (a storage error replaces the response with RB_ERR_STORAGE)
     */
    ackAfterFlush?: boolean;
  } = {},
): Promise<RecordedGateway> {
  const config = parseBenchConfig(
    { version: 1, name: "recorder-test", backend: { type: "mirror" }, ...opts.bench },
    "test",
  );
  const bench = await composeBench(config);
  const provenance = provenanceOf(config.name, config, bench.limits);
  const recorders: McapRecorder[] = [];
  bench.observers = () => {
    const r = new McapRecorder({
      recordsDir,
      provenance,
      taskBench: bench.taskBench,
      onError: endOnStorageError,
      ...opts.recorder,
    });
    recorders.push(r);
    return [r];
  };
  const gateway = new Gateway(bench);
  const extra = new Map((opts.tasks ?? []).map((t) => [t.id, t]));
  if (extra.size > 0) {
    const registered = gateway.task.bind(gateway);
    gateway.task = (id: string) => extra.get(id) ?? registered(id);
  }
  await gateway.startEpisode(opts.task ? { task: opts.task } : {});
  const app = await buildApp({ gateway, agentToken: AGENT_TOKEN, operatorToken: OPERATOR_TOKEN });
  if (opts.ackAfterFlush) {
    app.addHook("onSend", async (req, reply, payload) => {
      // only a successful agent call acknowledges something
      const agentCall = req.url.startsWith("/v1/") && !req.url.startsWith("/v1/admin/");
      if (!agentCall || req.method !== "POST" || reply.statusCode >= 400) {
        return payload;
      }
      const current = recorders[recorders.length - 1];
      try {
        await current?.flush();
        return payload;
      } catch (e) {
        if (!(e instanceof GatewayError)) throw e;
        reply.code(e.status);
        return JSON.stringify(e.toBody());
      }
    });
  }
  await app.ready();
  return {
    app,
    gateway,
    recorders,
    agent: { authorization: `Bearer ${AGENT_TOKEN}` },
    operator: { authorization: `Bearer ${OPERATOR_TOKEN}` },
    close: async () => {
      await app.close();
      await gateway.shutdown();
    },
  };
}
