/**
 * The one composition: bench config → backend + limits (composeBench) → tasks + observers →
 * Gateway → HTTP app. Used by `serve`, `run`, the test gateways and the benches, so every
 * gateway is built and taken down the same way.
 *
 * Taking down (`close`) follows the shutdown order of issue #10: stop motion first (the one stop
 * path), end the running episode with a recorded reason, finish its record (result.json), shut
 * the backend down, then close the HTTP connections with a deadline (idle keep-alive clients
 * never hold the exit).
 */
import { randomBytes } from "node:crypto";
import { resolve } from "node:path";
import type { FastifyInstance } from "fastify";
import type { StartEpisodeRequest } from "../gateway/api/schemas.ts";
import { type AppOptions, buildApp } from "../gateway/app.ts";
import type { EpisodeObserver } from "../gateway/episode/observer.ts";
import type { StopCause } from "../gateway/episode/stop.ts";
import { type Bench, EPISODES_KEPT, Gateway, type GatewayOptions } from "../gateway/gateway.ts";
import { recorderObservers } from "../gateway/recorder/mcap-recorder.ts";
import type { TaskDefinition } from "../tasks/types.ts";
import type { BenchConfig } from "./bench-config.ts";
import { composeBench } from "./compose.ts";
import { shadowObserver } from "./twin/observer.ts";
import { ShadowBackend } from "./twin/shadow-backend.ts";

/** Observers for one episode, given the composed bench (its provenance and task geometry). */
export type ObserverFactory = (episode: { task: string; seed: number }, bench: Bench) => EpisodeObserver[];

export interface StartGatewayOptions {
  /** the validated bench config */
  config: BenchConfig;
  /** folder the config's relative paths are read from (default: the working directory) */
  baseDir?: string;
  /** bearer tokens (generated when omitted) */
  agentToken?: string;
  operatorToken?: string;
  /**
   * observers of every episode; default: the bench's recorder (one McapRecorder per episode
   * into `config.recordsDir`); `null`: none
   */
  observers?: ObserverFactory | null;
  /** extra task definitions beside the registry's */
  tasks?: readonly TaskDefinition[];
  /** realtime pacing fixed instead of measured (tests, benches) */
  realtime?: GatewayOptions["realtime"];
  /** the frame store's budget and retention (tests, benches; default FRAME_STORE_DEFAULTS) */
  frameStore?: GatewayOptions["frameStore"];
  /** start the first episode (default: yes, with the bench's defaults) */
  firstEpisode?: Partial<StartEpisodeRequest> | false;
  /** listen on a real socket (else the app is only made ready, for inject()) */
  listen?: { host: string; port: number };
  /** max request body, bytes */
  bodyLimitBytes?: number;
  /** structured request logs (pino; tokens never logged); default: none */
  logger?: AppOptions["logger"];
}

export interface StartedGateway {
  bench: Bench;
  gateway: Gateway;
  app: FastifyInstance;
  agentToken: string;
  operatorToken: string;
  /** the listening address (with `listen`) */
  url?: string;
  /**
   * The observers of the episodes the gateway keeps (its last EPISODES_KEPT), oldest first, and
   * any older one whose `done` has not settled yet (a record still being finished)
   */
  readonly observers: readonly EpisodeObserver[];
  /**
   * Stop motion, end the running episode (`cause`; default: the gateway shuts down), finish its
   * record (waiting up to `recordDeadlineMs`, default 10 s), shut the backend down, close
   * connections (force after `deadlineMs`, default 2 s).
   */
  close(cause?: StopCause, opts?: { deadlineMs?: number; recordDeadlineMs?: number }): Promise<void>;
}

/** The bench file's observers: one McapRecorder per episode into its records folder. */
export function defaultObservers(config: BenchConfig): ObserverFactory {
  return (_e, bench) => {
    const recorders = recorderObservers({
      recordsDir: resolve(config.recordsDir),
      ...(bench.provenance ? { provenance: bench.provenance } : {}),
      taskBench: bench.taskBench,
    })();
    // a shadow bench: the twin's divergence on the record's own channel, in result.json and
    // beside the record; its observer ends before the recorder closes
    return bench.backend instanceof ShadowBackend
      ? [
          shadowObserver(bench.backend, resolve(config.recordsDir), {
            ...(recorders[0] ? { recorder: recorders[0] } : {}),
          }),
          ...recorders,
        ]
      : recorders;
  };
}

/** What an observer left behind, for those that say (McapRecorder.done). */
export function observersDone(list: readonly EpisodeObserver[]): Promise<unknown> {
  return Promise.all(list.map((o) => (o as { done?: Promise<unknown> }).done).filter((p) => p !== undefined));
}

/**
 * Close the app's connections: refuse new ones, drop idle keep-alive sockets at once, and force
 * the rest after `deadlineMs`.
 */
export async function closeApp(app: FastifyInstance, deadlineMs: number): Promise<void> {
  const closing = app.close();
  app.server.closeIdleConnections?.();
  let timer: NodeJS.Timeout | undefined;
  const deadline = new Promise<void>((r) => {
    timer = setTimeout(r, deadlineMs);
    timer.unref();
  });
  await Promise.race([closing, deadline]);
  clearTimeout(timer);
  app.server.closeAllConnections?.();
  await closing;
}

/** Compose and start a gateway (see the module note). */
export async function startGateway(o: StartGatewayOptions): Promise<StartedGateway> {
  const bench = await composeBench(o.config, o.baseDir);
  const made: EpisodeObserver[] = [];
  // the episode each observer was made for (1, 2, …), and those whose `done` settled (or that have none)
  const madeFor = new Map<EpisodeObserver, number>();
  const settled = new WeakSet<EpisodeObserver>();
  let episodes = 0;
  const factory: ObserverFactory | undefined =
    o.observers === null ? undefined : (o.observers ?? defaultObservers(o.config));
  const gateway = new Gateway(bench, {
    ...(factory
      ? {
          observers: (e) => {
            const list = factory(e, bench);
            episodes++;
            for (const x of list) {
              madeFor.set(x, episodes);
              const done = (x as { done?: Promise<unknown> }).done;
              const mark = () => void settled.add(x);
              if (done) done.then(mark, mark);
              else mark();
            }
            made.push(...list);
            // bounded like the gateway's episode list: a gateway left running keeps no recorder
            // of an episode it has forgotten, but never drops one that is still finishing
            let kept = 0;
            for (const x of made) {
              if (madeFor.get(x)! <= episodes - EPISODES_KEPT && settled.has(x)) madeFor.delete(x);
              else made[kept++] = x;
            }
            made.length = kept;
            return list;
          },
        }
      : {}),
    ...(o.tasks ? { tasks: o.tasks } : {}),
    ...(o.realtime ? { realtime: o.realtime } : {}),
    ...(o.frameStore ? { frameStore: o.frameStore } : {}),
  });
  const agentToken = o.agentToken ?? randomBytes(16).toString("hex");
  const operatorToken = o.operatorToken ?? randomBytes(16).toString("hex");
  const app = await buildApp({
    gateway,
    agentToken,
    operatorToken,
    ...(o.bodyLimitBytes ? { bodyLimitBytes: o.bodyLimitBytes } : {}),
    ...(o.logger !== undefined ? { logger: o.logger } : {}),
    video: { ffmpegPath: o.config.video.ffmpegPath },
  });
  const close = async (
    cause: StopCause = { source: "operator", detail: "gateway shut down" },
    opts: { deadlineMs?: number; recordDeadlineMs?: number } = {},
  ): Promise<void> => {
    try {
      await gateway.shutdown(cause);
      // a recorder that cannot finish must not hold the exit forever
      let timer: NodeJS.Timeout | undefined;
      const late = new Promise<"late">((r) => {
        timer = setTimeout(() => r("late"), opts.recordDeadlineMs ?? 10_000);
        timer.unref();
      });
      const done = await Promise.race([observersDone(made), late]);
      clearTimeout(timer);
      if (done === "late") console.error("robot-gateway: the episode's record did not finish in time");
    } finally {
      await closeApp(app, opts.deadlineMs ?? 2000);
    }
  };
  let url: string | undefined;
  try {
    if (o.firstEpisode !== false) await gateway.startEpisode(o.firstEpisode ?? {});
    if (o.listen) url = (await app.listen(o.listen)).replace("[::1]", "localhost");
    else await app.ready();
  } catch (e) {
    // the backend is already active (devices open): shut it down before giving up
    await close().catch(() => {});
    throw e;
  }
  return {
    bench,
    gateway,
    app,
    agentToken,
    operatorToken,
    ...(url ? { url } : {}),
    observers: made,
    close,
  };
}
