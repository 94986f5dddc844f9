/**
 * The one stop path, one test per trigger: whatever asks for the stop (tick, watchdog, sensor
 * event, exception, fault outcome, e-stop, signal/shutdown, storage through an observer's
 * ctx.fault), the backend's stop is called AT ONCE — inside the handler that decided it, before
 * the next reading is delivered. Measured in backend ticks, never in wall-clock time.
 */
import { afterEach, describe, expect, it } from "vitest";
import { parseBenchConfig } from "../../compose/bench-config.ts";
import { composeBench } from "../../compose/compose.ts";
import type { MirrorBackend } from "../../drivers/mirror/mirror-backend.ts";
import type { ExecuteOptions, ExecuteResult, JointTrajectory } from "../../seam/types.ts";
import { FREE_MOTION } from "../../tasks/free-motion.ts";
import type { TaskDefinition } from "../../tasks/types.ts";
import { Gateway } from "../gateway.ts";
import { contactTask } from "../recorder/testing/contact-task.ts";
import type { EpisodeObserver, ObserverContext } from "./observer.ts";

interface Rig {
  gateway: Gateway;
  backend: MirrorBackend;
  /** every backend stop: its reason, the ticks delivered before it, whether the motion was aborted */
  stops: { reason: string; tick: number; aborted: boolean | undefined }[];
  /** every motion's abort: the backend stops and the ticks delivered before it */
  aborts: { stops: number; tick: number }[];
  /** readings delivered to the episode so far */
  ticks: () => number;
  /** backend.execute calls so far */
  executes: () => number;
  /** called inside the control loop at each delivered tick, before the episode sees it */
  atTick: (fn: (tick: number) => void) => void;
  /**
   * make the next execute hang (no readings) until its signal aborts; resolves once that execute
   * was called (an act plans its chunk first, in slices: the motion starts a few turns later)
   */
  hangNextExecute: () => Promise<void>;
  row: (dq0: number) => number[];
}

let rig: Rig | undefined;
afterEach(async () => {
  await rig?.gateway.shutdown().catch(() => {});
  rig = undefined;
});

async function makeRig(
  opts: {
    task?: TaskDefinition;
    observers?: () => EpisodeObserver[];
    fault?: boolean;
    /** GatewayOptions.planSliceMs (0: an act's planning pauses at every pause point) */
    planSliceMs?: number;
  } = {},
): Promise<Rig> {
  const config = parseBenchConfig({ version: 1, name: "stop-path", backend: { type: "mirror" } }, "test");
  const bench = await composeBench(config);
  const backend = bench.backend as MirrorBackend;
  const stops: Rig["stops"] = [];
  const aborts: Rig["aborts"] = [];
  let ticks = 0;
  let executes = 0;
  let hook: ((tick: number) => void) | undefined;
  let hang: (() => void) | undefined;
  let signal: AbortSignal | undefined;
  let faults = opts.fault ? 1 : 0;
  const stop = backend.stop.bind(backend);
  backend.stop = (reason: string) => {
    stops.push({ reason, tick: ticks, aborted: signal?.aborted });
    return stop(reason);
  };
  const execute = backend.execute.bind(backend);
  backend.execute = (traj: JointTrajectory, o: ExecuteOptions = {}): Promise<ExecuteResult> => {
    signal = o.signal;
    o.signal?.addEventListener("abort", () => aborts.push({ stops: stops.length, tick: ticks }), {
      once: true,
    });
    executes++;
    if (faults > 0) {
      faults--;
      const fault = { device: "mirror", message: "injected execute failure" };
      return Promise.resolve({
        outcome: "fault",
        samplesExecuted: 0,
        final: backend.read(),
        frames: [],
        fault,
      });
    }
    if (hang) {
      hang();
      hang = undefined;
      return new Promise((resolve) => {
        o.signal?.addEventListener("abort", () =>
          resolve({ outcome: "aborted", samplesExecuted: 0, final: backend.read(), frames: [] }),
        );
      });
    }
    return execute(traj, {
      ...o,
      onTick: (r, i) => {
        ticks++;
        hook?.(ticks);
        return o.onTick ? o.onTick(r, i) : "ok";
      },
    });
  };
  const gateway = new Gateway(bench, {
    ...(opts.task ? { tasks: [opts.task] } : {}),
    ...(opts.observers ? { observers: opts.observers } : {}),
    ...(opts.planSliceMs !== undefined ? { planSliceMs: opts.planSliceMs } : {}),
  });
  await gateway.startEpisode(opts.task ? { task: opts.task.id } : {});
  const q0 = backend.read().q;
  return {
    gateway,
    backend,
    stops,
    aborts,
    ticks: () => ticks,
    executes: () => executes,
    atTick: (fn) => {
      hook = fn;
    },
    hangNextExecute: () =>
      new Promise<void>((resolve) => {
        hang = resolve;
      }),
    row: (dq0) => [...q0.map((v, i) => (i === 0 ? v + dq0 : v)), 0.04],
  };
}

/** 4 rows × 250 ms: 1,000 control ticks of a slow min-jerk move of joint 1 by 0.1 rad. */
function slowChunk(r: Rig) {
  const s = (x: number) => 10 * x ** 3 - 15 * x ** 4 + 6 * x ** 5;
  return {
    type: "joint_position" as const,
    dt: 0.25,
    rows: [1, 2, 3, 4].map((k) => r.row(0.1 * s(k / 4))),
  };
}

describe("the one stop path: the backend's stop is called at once", () => {
  it("tick: the time limit reached in the control loop stops the backend in that tick", async () => {
    const task: TaskDefinition = {
      ...FREE_MOTION,
      id: "test-short",
      budgets: { ...FREE_MOTION.budgets, timeLimitS: 0.2 },
    };
    rig = await makeRig({ task });
    const ep = rig.gateway.requireEpisode();
    const out = await ep.act(slowChunk(rig));
    expect(ep.endReason).toBe("time_limit");
    expect(rig.stops).toHaveLength(1);
    // called in the tick that reached the limit: no reading was delivered after it
    expect(rig.stops[0]!.tick).toBe(rig.ticks());
    expect(rig.ticks()).toBeLessThan(1000);
    expect(out.executed_rows).toBeLessThan(4);
  });

  it("watchdog: readings that stop arriving are stopped from the watchdog's timer", async () => {
    rig = await makeRig();
    const ep = rig.gateway.requireEpisode();
    const limits = ep.config.limits;
    const t0 = rig.backend.now();
    // the backend clock runs on, but no reading arrives
    const now = rig.backend.now.bind(rig.backend);
    let late = 0;
    rig.backend.now = () => now() + late;
    const started = rig.hangNextExecute();
    const act = ep.act(slowChunk(rig)).catch((e: unknown) => e);
    await started;
    late = (limits.staleReadingTimeoutMs / 1000) * 3;
    await act;
    expect(ep.endReason).toBe("fault");
    expect(ep.endDetail).toBe("stale_reading");
    expect(rig.stops).toHaveLength(1);
    // the backend's stop first, then the motion's abort, in the same request (no reading between)
    expect(rig.stops[0]!.aborted).toBe(false);
    expect(rig.aborts[0]).toEqual({ stops: 1, tick: rig.stops[0]!.tick });
    expect(rig.ticks()).toBe(0);
    expect(rig.backend.now()).toBeGreaterThan(t0);
  });

  it("event: a contact stops the backend inside the event handler, not on the next reading", async () => {
    rig = await makeRig({ task: contactTask(2) });
    const r = rig;
    const ep = r.gateway.requireEpisode();
    let stopsRightAfterEmit = -1;
    let emittedAt = -1;
    r.atTick((tick) => {
      if (tick !== 50) return;
      emittedAt = tick;
      r.backend.emit({ type: "contact", t: r.backend.now(), closed: true, source: "test" });
      stopsRightAfterEmit = r.stops.length;
    });
    await ep.act(slowChunk(r));
    expect(stopsRightAfterEmit).toBe(1);
    expect(r.stops[0]!.tick).toBe(emittedAt);
    // the backend's stop first, then the motion's abort, in the same request (no reading between)
    expect(r.stops[0]!.aborted).toBe(false);
    expect(r.aborts[0]).toEqual({ stops: 1, tick: r.stops[0]!.tick });
    expect(ep.endReason).toBe("task_failed");
  });

  it("event: the stop reaches the backend before any bookkeeping of the event (observers, record)", async () => {
    // what each observer saw, in order, and how many backend stops there were when it saw it
    const seen: { what: string; stops: number }[] = [];
    let r: Rig | undefined;
    const observer: EpisodeObserver = {
      onEvent: (_ep, e) => {
        seen.push({ what: `event ${e.type}`, stops: r!.stops.length });
      },
      onSafety: (_ep, e) => {
        seen.push({ what: `safety ${e.kind}`, stops: r!.stops.length });
      },
    };
    r = rig = await makeRig({ task: contactTask(2), observers: () => [observer] });
    const ep = r.gateway.requireEpisode();
    r.atTick((tick) => {
      if (tick === 50)
        r!.backend.emit({ type: "contact", t: r!.backend.now(), closed: true, source: "test" });
    });
    await ep.act(slowChunk(r));
    // the observer saw the event with the backend already stopped; the record keeps its order:
    // the sensor event, then the stop's safety event
    expect(seen[0]).toEqual({ what: "event contact", stops: 1 });
    expect(seen.findIndex((x) => x.what.startsWith("safety"))).toBeGreaterThan(0);
    expect(rig.stops).toHaveLength(1);
    // the end reason still comes from the judge's view of the event
    expect(ep.endReason).toBe("task_failed");
  });

  it("exception: a backend that throws mid-motion is stopped and the episode ends as a fault", async () => {
    rig = await makeRig();
    const r = rig;
    const ep = r.gateway.requireEpisode();
    r.atTick((tick) => {
      if (tick === 20) throw new Error("driver lost its socket");
    });
    const err = await ep.act(slowChunk(r)).catch((e: unknown) => e);
    expect((err as { code?: string }).code).toBe("RB_ERR_BACKEND_FAULT");
    expect(r.stops).toHaveLength(1);
    expect(r.stops[0]!.tick).toBe(20);
    expect(ep.endReason).toBe("fault");
    expect(ep.endDetail).toBe("backend: driver lost its socket");
  });

  it("fault: an execute that comes back as a device fault stops the backend and ends as a fault", async () => {
    rig = await makeRig({ fault: true });
    const ep = rig.gateway.requireEpisode();
    await ep.act(slowChunk(rig));
    expect(rig.stops).toHaveLength(1);
    expect(rig.stops[0]!.tick).toBe(0);
    expect(ep.endReason).toBe("fault");
    expect(ep.counters.safetyStops).toBe(1);
  });

  it("e-stop: engaging stops the running motion synchronously, before the call returns", async () => {
    rig = await makeRig();
    const ep = rig.gateway.requireEpisode();
    const started = rig.hangNextExecute();
    const act = ep.act(slowChunk(rig));
    await started;
    const engaged = rig.gateway.engageEstop("test");
    expect(rig.stops).toHaveLength(1); // before anything was awaited
    // the backend's stop first, then the motion's abort, in the same request (no reading between)
    expect(rig.stops[0]!.aborted).toBe(false);
    expect(rig.aborts[0]).toEqual({ stops: 1, tick: rig.stops[0]!.tick });
    await engaged;
    await act;
    expect(ep.endReason).toBe("safety_stop");
    expect(ep.endDetail).toBe("e-stop: test");
  });

  it("signal / shutdown: Gateway.requestStop stops at once; shutdown ends the episode as aborted", async () => {
    rig = await makeRig();
    const ep = rig.gateway.requireEpisode();
    const started = rig.hangNextExecute();
    const act = ep.act(slowChunk(rig));
    await started;
    const cause = { source: "signal", detail: "SIGTERM" } as const;
    rig.gateway.requestStop(cause);
    expect(rig.stops).toHaveLength(1);
    // the backend's stop first, then the motion's abort, in the same request (no reading between)
    expect(rig.stops[0]!.aborted).toBe(false);
    expect(rig.aborts[0]).toEqual({ stops: 1, tick: rig.stops[0]!.tick });
    await rig.gateway.shutdown(cause);
    await act;
    expect(ep.endReason).toBe("aborted");
    expect(ep.endDetail).toBe("SIGTERM");
    // with no episode running the gateway's stop still reaches the backend
    const before = rig.stops.length;
    const idle = new Gateway(rig.gateway.bench);
    idle.requestStop({ source: "signal", detail: "SIGINT" });
    expect(rig.stops.length).toBe(before + 1);
  });

  it("e-stop during an act's planning: stopped at once, the act refused (RB_ERR_ESTOP), nothing moved or recorded", async () => {
    const commands: boolean[] = [];
    rig = await makeRig({
      planSliceMs: 0,
      observers: () => [{ onCommand: (_e, _r, _c, ok) => commands.push(ok) }],
    });
    const r = rig;
    const ep = r.gateway.requireEpisode();
    // 10 s of 1 kHz samples: the planner pauses after every 256 interpolated samples and every
    // pre-check window; the e-stop request is handled at its first pause
    const rows = Array.from({ length: 500 }, (_, k) => r.row(0.001 * k));
    const act = ep.act({ type: "joint_position", dt: 0.02, rows }).catch((e: unknown) => e);
    let stopsAtEngage = -1;
    let engaged: Promise<unknown> | undefined;
    setImmediate(() => {
      engaged = r.gateway.engageEstop("during planning");
      stopsAtEngage = r.stops.length;
    });
    const err = await act;
    expect(stopsAtEngage).toBe(1); // the backend's stop, before the e-stop call returned
    expect((err as { code?: string }).code).toBe("RB_ERR_ESTOP");
    await engaged;
    expect(r.executes()).toBe(0);
    expect(r.ticks()).toBe(0);
    expect(commands).toEqual([]);
    expect(r.stops).toHaveLength(1);
    expect(ep.endReason).toBe("safety_stop");
    expect(ep.endDetail).toBe("e-stop: during planning");
  });

  it("an act's planning counts as busy: a second motion call meanwhile is refused, the first one runs", async () => {
    rig = await makeRig({ planSliceMs: 0 });
    const r = rig;
    const ep = r.gateway.requireEpisode();
    const first = ep.act(slowChunk(r));
    const second = await ep.act(slowChunk(r)).catch((e: unknown) => e);
    expect((second as { code?: string }).code).toBe("RB_ERR_BUSY");
    const finish = await ep.finish().catch((e: unknown) => e);
    expect((finish as { code?: string }).code).toBe("RB_ERR_BUSY");
    expect((await first).executed_rows).toBe(4);
    expect(r.executes()).toBe(1);
    expect(ep.isEnded).toBe(false);
  });

  it("storage: an observer's ctx.fault stops the backend in that tick and ends the episode as a fault", async () => {
    let ctx: ObserverContext | undefined;
    let readings = 0;
    const failing: EpisodeObserver = {
      onStart: (_ep, c) => {
        ctx = c;
      },
      onReading: () => {
        if (++readings === 30) ctx!.fault({ source: "storage", detail: "record: ENOSPC" });
      },
    };
    rig = await makeRig({ observers: () => [failing] });
    const ep = rig.gateway.requireEpisode();
    await ep.act(slowChunk(rig));
    expect(rig.stops).toHaveLength(1);
    expect(rig.stops[0]!.tick).toBe(30);
    expect(rig.ticks()).toBe(30);
    expect(ep.endReason).toBe("fault");
    expect(ep.endDetail).toBe("record: ENOSPC");
  });
});

describe("observers' flush", () => {
  it("a chunk is acknowledged only after every observer has flushed", async () => {
    let release: (() => void) | undefined;
    let flushes = 0;
    const slow: EpisodeObserver = {
      // the first flush (the chunk's) waits for the test; later ones (the end's) are immediate
      flush: () =>
        ++flushes > 1
          ? Promise.resolve()
          : new Promise<void>((r) => {
              release = r;
            }),
    };
    rig = await makeRig({ observers: () => [slow] });
    const ep = rig.gateway.requireEpisode();
    let answered = false;
    const act = ep.act(slowChunk(rig)).then((out) => {
      answered = true;
      return out;
    });
    while (!release) await new Promise((r) => setImmediate(r));
    await new Promise((r) => setImmediate(r));
    expect(answered).toBe(false);
    release();
    expect((await act).executed_rows).toBe(4);
    expect(flushes).toBe(1);
  });

  it("a flush that fails stops the robot as a storage fault and the call is not acknowledged", async () => {
    const broken: EpisodeObserver = {
      flush: () => Promise.reject(new Error("EROFS: read-only file system")),
    };
    rig = await makeRig({ observers: () => [broken] });
    const ep = rig.gateway.requireEpisode();
    const err = await ep.act(slowChunk(rig)).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(Error);
    expect((err as Error).message).toMatch(/EROFS/);
    expect(rig.stops.length).toBeGreaterThanOrEqual(1);
    expect(ep.endReason).toBe("fault");
    expect(ep.endDetail).toBe("record: EROFS: read-only file system");
  });
});
