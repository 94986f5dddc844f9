/**
 * Stop latency per stop source, through the gateway's public path: event → the backend's
 * `stop()` being called (a spy on the composed backend's `stop`), p50 / p99, printed beside the
 * control period (1 ms); target p99 ≤ 2 ms (issue #10, "every stop source stops at once").
 *
 *   npx tsx bench/stop-latency.ts [--samples N] [--only contact-buzzbox,estop,...]
 *   npm run bench -- stop-latency
 *
 * Every gateway is built by compose/testing.ts `testGateway` (the composition serve uses), with
 * the free-motion task and the recorder on. While a 3 s chunk runs (POST /v1/act, joint_position
 * rows holding the pose), one stop source fires:
 * - contact-buzzbox: a real gateway (RealBackend: arm over the rosbridge rig, which serves a
 *   MirrorBackend under franka_ros2's names in a child process — this file, `--rig-child` —, as
 *   a robot runs on its own computer: the rig's pacing and JSON work do not share the gateway's
 *   event loop) whose contact device is the buzz box on a socat pty pair; the board side
 *   (FakeBuzzbox, the firmware's protocol) writes a `$C` line. Event = the board writing the edge.
 * - contact-firmata: the same with the Firmata board (FakeFirmata, StandardFirmata's protocol)
 *   writing a DIGITAL_MESSAGE.
 * - estop: POST /v1/admin/estop (operator) on the buzz-box gateway. Event = the request sent.
 * - watchdog: the rig stops publishing joint states (told over the child's IPC channel); the
 *   gateway's stale-reading limit runs out. Event = the last reading's time + staleReadingTimeoutMs (the moment the limit passed,
 *   on the clock the monitor judges: backend time, performance.now() on the real backend).
 * - estop-sim: POST /v1/admin/estop on a simulated gateway (sim backend).
 * - signal: a child process (this file, `--signal-child`) runs a simulated gateway with serve's
 *   signal handling (cli/serve.ts `exitOnSignals`); the parent sends SIGTERM mid-chunk. Event =
 *   the kill() call, 30 ms into the motion like every other source; both sides read
 *   CLOCK_MONOTONIC (process.hrtime). One child per sample.
 * - firmata-hang: the Firmata board hangs (process paused, port open); event = its pause; the
 *   figure is hang → stop call (detection by the driver's heartbeat watchdog, target ≤ 100 ms).
 * Beside each: "motion told" = event → the running motion learnt it must stop (its abort signal
 * fired or its onTick answered "stop"), and for contacts "driver event" = board write → the
 * contact driver's event reaching a listener subscribed after the backend's (pty transit, parse,
 * the gateway's synchronous handling; the floor under the stop). A source whose stop never reaches backend.stop() within 5 s counts
 * as missed; a sample whose episode ended for another reason than the source's (e.g. the rig
 * stalled on a loaded machine: a stale reading) as disturbed, left out of the figures. Needs socat.
 */
import { spawn } from "node:child_process";
import { cpus, loadavg } from "node:os";
import { fileURLToPath } from "node:url";
import { type TestGateway, testGateway } from "../compose/testing.ts";
import { FakeFirmata } from "../drivers/firmata/fake-firmata.ts";
import { MirrorBackend } from "../drivers/mirror/mirror-backend.ts";
import { FakeBuzzbox } from "../drivers/serial/fake-buzzbox.ts";
import { openPtyPair, type PtyPair } from "../drivers/serial/pty-pair.ts";
import { openSerialPort } from "../drivers/serial/transport-serialport.ts";
import type { SerialTransport } from "../drivers/serial/transport.ts";
import { FrankaRosbridgeRig } from "../hil-tests/rigs/rosbridge/franka-rig.ts";
import { monitorEventLoopDelay } from "node:perf_hooks";
import { FR3 } from "../robots/franka/models.ts";
import type { Backend, ExecuteOptions, JointTrajectory, SensorEvent } from "../seam/types.ts";
import { api } from "../test-support/api.ts";
import { sleep } from "../test-support/wait.ts";
import { pct } from "./stats.ts";

const CONTROL_PERIOD_MS = FR3.controlPeriodS * 1000;
const TARGET_P99_MS = 2;
const HANG_TARGET_MS = 100;
const CHUNK_S = 3;
const DT_S = 0.01;
/** stale-reading limit of the real gateways: a shared machine stalls the in-process rig for long */
const STALE_MS = 1000;

const args = process.argv.slice(2);
const arg = (name: string) => {
  const i = args.indexOf(name);
  return i >= 0 ? args[i + 1] : undefined;
};
const SAMPLES = Number(arg("--samples") ?? 30);
const ONLY = arg("--only")?.split(",");
const wanted = (name: string) => !ONLY || ONLY.includes(name);

/** performance.now() of every call of the backend's stop() and of the motion learning of a stop */
interface Spy {
  stops: number[];
  told: number[];
  motions: number;
}

/** Wrap the composed backend: stop() calls and the running motion's stop signals are timed. */
function spyOn(backend: Backend): Spy {
  const spy: Spy = { stops: [], told: [], motions: 0 };
  const stop = backend.stop.bind(backend);
  backend.stop = (reason: string) => {
    spy.stops.push(performance.now());
    return stop(reason);
  };
  const execute = backend.execute.bind(backend);
  backend.execute = (traj: JointTrajectory, opts: ExecuteOptions = {}) => {
    spy.motions++;
    let told = false;
    const tell = () => {
      if (told) return;
      told = true;
      spy.told.push(performance.now());
    };
    opts.signal?.addEventListener("abort", tell);
    return execute(traj, {
      ...opts,
      onTick: (r, k) => {
        const v = opts.onTick ? opts.onTick(r, k) : "ok";
        if (v === "stop") tell();
        return v;
      },
    });
  };
  return spy;
}

interface Row {
  name: string;
  latMs: number[];
  toldMs: number[];
  bareMs: number[];
  missed: number;
  /** samples whose episode ended for another reason (e.g. a stall of the rig: stale reading) */
  disturbed: number;
  /** why the disturbed samples ended (episode end detail, first 60 characters) → count */
  disturbances: Map<string, number>;
  /**
   * "fault": the source's episodes end as faults (watchdog, hung board); "no-fault": they end
   * any other way (how a contact or an e-stop ends is the episode's business) — a fault there
   * means something else stopped the sample (a stalled rig: a stale reading)
   */
  expect: "fault" | "no-fault";
  note?: string;
  targetMs: number;
}

const rows: Row[] = [];
const row = (name: string, expect: Row["expect"], targetMs = TARGET_P99_MS, note?: string): Row => {
  const r: Row = {
    name,
    latMs: [],
    toldMs: [],
    bareMs: [],
    missed: 0,
    disturbed: 0,
    disturbances: new Map(),
    expect,
    targetMs,
    ...(note ? { note } : {}),
  };
  rows.push(r);
  return r;
};

/** An episode that can move: a new one when the last ended (or none runs). */
async function freshEpisode(g: TestGateway): Promise<void> {
  if (g.gateway.bench.backend.lifecycle === "error") {
    const rec = await api(g, "POST", "/v1/admin/recover", {}, "operator");
    if (rec.status !== 200) throw new Error(`recover: ${rec.status} ${rec.text}`);
  }
  const ep = g.gateway.episode;
  if (ep && !ep.isEnded) return;
  const res = await api(g, "POST", "/v1/admin/episodes", { task: "free-motion" }, "operator");
  if (res.status !== 200) throw new Error(`new episode: ${res.status} ${res.text}`);
}

/** Start a CHUNK_S chunk holding the current pose; resolves once the backend runs it. */
async function startChunk(g: TestGateway, spy: Spy): Promise<{ answer: Promise<unknown> }> {
  const r = g.gateway.bench.backend.read();
  const row = [...r.q, r.gripperWidthM];
  const rows = Array.from({ length: Math.round(CHUNK_S / DT_S) }, () => row);
  const before = spy.motions;
  const answer = api(g, "POST", "/v1/act", { type: "joint_position", dt: DT_S, rows });
  const end = performance.now() + 5000;
  while (spy.motions === before && performance.now() < end) await sleep(1);
  if (spy.motions === before) throw new Error(`the chunk did not start: ${JSON.stringify(await answer)}`);
  await sleep(30); // well inside the motion
  return { answer };
}

/**
 * One sample: `fire()` triggers the source and returns the event time (performance.now());
 * records event → first stop() call after it and event → motion told.
 */
async function sample(
  g: TestGateway,
  spy: Spy,
  r: Row,
  fire: () => Promise<number> | number,
  after?: () => Promise<void>,
): Promise<void> {
  await freshEpisode(g);
  const { answer } = await startChunk(g, spy);
  const stops0 = spy.stops.length;
  const told0 = spy.told.length;
  const ep = g.gateway.episode;
  const t0 = await fire();
  const end = performance.now() + 5000;
  while (spy.stops.length === stops0 && performance.now() < end) await sleep(1);
  await answer;
  const endedAsFault = ep?.endReason === "fault";
  if (!ep?.isEnded || endedAsFault !== (r.expect === "fault")) {
    r.disturbed++;
    const why = (ep?.endDetail ?? ep?.endReason ?? "not ended").slice(0, 60);
    r.disturbances.set(why, (r.disturbances.get(why) ?? 0) + 1);
  } else if (spy.stops.length === stops0) r.missed++;
  else {
    r.latMs.push(spy.stops[stops0]! - t0);
    if (spy.told.length > told0) r.toldMs.push(spy.told[told0]! - t0);
  }
  await after?.();
}

// ───────────── real gateways: contact devices on pty pairs, arm over the rosbridge rig ─────────────

interface Board {
  kind: "buzzbox" | "firmata";
  pair: PtyPair;
  port: SerialTransport;
  /** drive the contact; returns performance.now() just before the board writes the edge */
  contact(closed: boolean): number;
  firmata?: FakeFirmata;
  dispose(): void;
}

async function board(kind: "buzzbox" | "firmata"): Promise<Board> {
  const pair = await openPtyPair();
  const port = await openSerialPort({ path: pair.b, baudRate: kind === "buzzbox" ? 115200 : 57600 });
  if (kind === "buzzbox") {
    const b = new FakeBuzzbox({ write: (d) => port.write(d) });
    port.onData((d) => b.receive(d));
    b.startHeartbeat(100);
    return {
      kind,
      pair,
      port,
      contact: (c) => {
        const t = performance.now();
        b.contact(c);
        return t;
      },
      dispose: () => b.stopHeartbeat(),
    };
  }
  const f = new FakeFirmata({ write: (d) => port.write(d) });
  port.onData((d) => f.receive(d));
  return {
    kind,
    pair,
    port,
    firmata: f,
    contact: (c) => {
      const t = performance.now();
      f.setInput(2, c ? 0 : 1);
      return t;
    },
    dispose: () => f.dispose(),
  };
}

async function realGateway(rigUrl: string, b: Board): Promise<TestGateway> {
  const contact =
    b.kind === "buzzbox"
      ? // a loaded shared machine stalls the event loop longer than the 350 ms default
        { type: "buzzbox", path: b.pair.a, heartbeatTimeoutMs: 2000 }
      : {
          type: "firmata",
          path: b.pair.a,
          contactPin: 2,
          lampPin: 9,
          buzzerPin: 8,
          reportVersionTimeoutMs: 50,
        };
  return testGateway({
    robot: "fr3",
    backend: { type: "real", ros: { type: "rosbridge", url: rigUrl }, contact, allowMotion: true },
    task: { id: "free-motion" },
    safety: { stopOnEvents: ["contact"], staleReadingTimeoutMs: STALE_MS },
  });
}

/** The contact driver behind a real gateway, for the bare-listener reference. */
function contactDriver(g: TestGateway): { onEvent(l: (e: SensorEvent) => void): () => void } {
  const drivers = (
    g.gateway.bench.backend as unknown as {
      drivers: { contact?: { onEvent(l: (e: SensorEvent) => void): () => void } };
    }
  ).drivers;
  if (!drivers.contact) throw new Error("no contact driver");
  return drivers.contact;
}

async function contactRows(rig: RigChild, kind: "buzzbox" | "firmata"): Promise<void> {
  const b = await board(kind);
  const g = await realGateway(rig.url, b);
  const spy = spyOn(g.gateway.bench.backend);
  const r = wanted(`contact-${kind}`) ? row(`contact-${kind}`, "no-fault") : undefined;
  let bareAt = Number.NaN;
  let opened = 0;
  contactDriver(g).onEvent((e) => {
    if (e.type !== "contact") return;
    if (e.closed) bareAt = performance.now();
    else opened++;
  });
  try {
    if (r) {
      for (let k = 0; k < SAMPLES; k++) {
        let t0 = Number.NaN;
        await sample(
          g,
          spy,
          r,
          () => {
            bareAt = Number.NaN;
            t0 = b.contact(true);
            return t0;
          },
          async () => {
            if (!Number.isNaN(bareAt)) r.bareMs.push(bareAt - t0);
            const n = opened;
            b.contact(false);
            const end = performance.now() + 2000;
            while (opened === n && performance.now() < end) await sleep(1);
          },
        );
      }
    }
    if (kind === "buzzbox") await otherRealRows(g, spy, rig);
    if (kind === "firmata" && wanted("firmata-hang")) await hangRows(g, spy, b);
  } finally {
    await g.close().catch((e: unknown) => console.log(`(close: ${e instanceof Error ? e.message : e})`));
    b.dispose();
    await b.port.close();
    await b.pair.kill();
  }
}

/** e-stop through the operator API and the stale-reading watchdog, on the buzz-box gateway. */
async function otherRealRows(g: TestGateway, spy: Spy, rig: RigChild): Promise<void> {
  if (wanted("estop")) {
    const r = row("estop", "no-fault");
    for (let k = 0; k < SAMPLES; k++)
      await sample(g, spy, r, estop(g), async () => {
        await api(g, "POST", "/v1/admin/release", {}, "operator");
      });
  }
  if (wanted("watchdog")) {
    const r = row("watchdog", "fault", TARGET_P99_MS, `stale-reading limit ${STALE_MS} ms`);
    const arm = (
      g.gateway.bench.backend as unknown as {
        drivers: { arm?: { onReading(l: (x: { t: number }) => void): () => void } };
      }
    ).drivers.arm!;
    // the monitor's clock: a reading's backend time (its stamp on the gateway clock)
    let lastReadingMs = Number.NaN;
    arm.onReading((x) => {
      lastReadingMs = x.t * 1000;
    });
    for (let k = 0; k < Math.min(SAMPLES, 20); k++) {
      await sample(
        g,
        spy,
        r,
        async () => {
          await rig.jointStates(false);
          // the event is the limit running out after the last reading that got through
          await sleep(STALE_MS / 2);
          return lastReadingMs + STALE_MS;
        },
        async () => {
          await rig.jointStates(true);
          await sleep(50);
        },
      );
    }
  }
}

const estop = (g: TestGateway) => () => {
  const t = performance.now();
  void api(g, "POST", "/v1/admin/estop", { reason: "bench" }, "operator");
  return t;
};

/** Firmata board hangs with its port open → the driver's heartbeat watchdog → stop. */
async function hangRows(g: TestGateway, spy: Spy, b: Board): Promise<void> {
  const r = row(
    "firmata-hang",
    "fault",
    HANG_TARGET_MS,
    "hang → stop; heartbeat A0 every 19 ms, limit 60 ms",
  );
  const driver = contactDriver(g) as unknown as { linkUp: boolean };
  const real = g.gateway.bench.backend as unknown as { recover(timeoutS?: number): Promise<void> };
  for (let k = 0; k < Math.min(SAMPLES, 10); k++) {
    await sample(
      g,
      spy,
      r,
      () => {
        const t = performance.now();
        b.firmata!.pause();
        return t;
      },
      async () => {
        b.firmata!.resume();
        const end = performance.now() + 20_000;
        while (!driver.linkUp && performance.now() < end) await sleep(10);
        await api(g, "POST", "/v1/admin/recover", {}, "operator").catch(() => undefined);
        if (g.gateway.bench.backend.lifecycle !== "active") await real.recover(10).catch(() => undefined);
      },
    );
  }
}

// ───────────── simulated gateway: e-stop, and the signal in a child process ─────────────

async function simRows(): Promise<void> {
  if (!wanted("estop-sim")) return;
  const g = await testGateway({ robot: "fr3", backend: { type: "sim" }, task: { id: "free-motion" } });
  const spy = spyOn(g.gateway.bench.backend);
  const r = row("estop-sim", "no-fault");
  try {
    for (let k = 0; k < SAMPLES; k++)
      await sample(g, spy, r, estop(g), async () => {
        await api(g, "POST", "/v1/admin/release", {}, "operator");
      });
  } finally {
    await g.close().catch(() => undefined);
  }
}

const nowNs = () => process.hrtime.bigint();

/** Child: a sim gateway with serve's signal handling; prints READY mid-chunk and STOP <ns> on stop(). */
async function signalChild(): Promise<void> {
  const serveMod = (await import("../cli/serve.ts")) as Record<string, unknown>;
  const exitOnSignals = serveMod.exitOnSignals as
    | ((s: { url: string; gateway: unknown; close(): Promise<void> }, log?: (l: string) => void) => void)
    | undefined;
  if (typeof exitOnSignals !== "function") {
    console.log("UNAVAILABLE cli/serve.ts has no exitOnSignals: no signal stop path on this branch");
    process.exit(0);
  }
  const g = await testGateway({ robot: "fr3", backend: { type: "sim" }, task: { id: "free-motion" } });
  const backend = g.gateway.bench.backend;
  const stop = backend.stop.bind(backend);
  let reported = false;
  backend.stop = (reason: string) => {
    if (!reported) {
      reported = true;
      process.stdout.write(`STOP ${nowNs()}\n`);
    }
    return stop(reason);
  };
  exitOnSignals({ url: "", gateway: g.gateway, close: () => g.close() }, () => {});
  const spy = spyOn(backend);
  const r = backend.read();
  const rows = Array.from({ length: Math.round(CHUNK_S / DT_S) }, () => [...r.q, r.gripperWidthM]);
  void api(g, "POST", "/v1/act", { type: "joint_position", dt: DT_S, rows });
  while (spy.motions === 0) await sleep(1);
  await sleep(30); // well inside the motion, as for every other source
  process.stdout.write("READY\n");
}

async function signalRows(): Promise<void> {
  if (!wanted("signal")) return;
  const r = row("signal", "no-fault", TARGET_P99_MS, "sim gateway in a child process, SIGTERM mid-chunk");
  const self = fileURLToPath(import.meta.url);
  for (let k = 0; k < Math.min(SAMPLES, 15); k++) {
    const child = spawn(process.execPath, ["--import", "tsx", self, "--signal-child"], {
      stdio: ["ignore", "pipe", "inherit"],
    });
    let out = "";
    let sent: bigint | undefined;
    const done = new Promise<void>((resolve) => child.once("exit", () => resolve()));
    child.stdout!.on("data", (d: Buffer) => {
      out += d.toString();
      if (sent === undefined && out.includes("READY\n")) {
        sent = nowNs();
        child.kill("SIGTERM");
      }
    });
    const timer = setTimeout(() => child.kill("SIGKILL"), 30_000);
    await done;
    clearTimeout(timer);
    const unavailable = /UNAVAILABLE (.*)/.exec(out);
    if (unavailable) {
      r.note = `unavailable: ${unavailable[1]}`;
      return;
    }
    const stopAt = /STOP (\d+)/.exec(out);
    if (sent !== undefined && stopAt) r.latMs.push(Number(BigInt(stopAt[1]!) - sent) / 1e6);
    else r.missed++;
  }
}

// ───────────── main ─────────────

const f = (x: number) => (Number.isNaN(x) ? "    –  " : x.toFixed(3).padStart(8));

function print(): void {
  console.log(
    `\nevent → backend.stop() call, ms (control period ${CONTROL_PERIOD_MS} ms; target p99 ≤ ${TARGET_P99_MS} ms)`,
  );
  for (const r of rows) {
    const ok = r.latMs.length > 0 && r.missed === 0 && pct(r.latMs, 99) <= r.targetMs;
    console.log(
      `${r.name.padEnd(16)} n=${String(r.latMs.length).padStart(3)}${r.missed ? ` missed=${r.missed}` : ""}${r.disturbed ? ` disturbed=${r.disturbed}` : ""}` +
        `  p50 ${f(pct(r.latMs, 50))}  p99 ${f(pct(r.latMs, 99))}  max ${f(r.latMs.length ? Math.max(...r.latMs) : Number.NaN)}` +
        `  | motion told p50 ${f(pct(r.toldMs, 50))} p99 ${f(pct(r.toldMs, 99))}` +
        (r.bareMs.length ? `  | driver event p50 ${f(pct(r.bareMs, 50))} p99 ${f(pct(r.bareMs, 99))}` : "") +
        `  ${r.latMs.length ? (ok ? "OK" : "OVER") : ""} (target p99 ≤ ${r.targetMs} ms)` +
        (r.note ? `  [${r.note}]` : ""),
    );
    for (const [why, n] of r.disturbances) console.log(`${"".padEnd(17)}disturbed ×${n}: ${why}`);
  }
}

/** The rosbridge rig in its own process; the parent tells it to pause joint states and to close. */
interface RigChild {
  url: string;
  jointStates(on: boolean): Promise<void>;
  close(): Promise<void>;
}

async function rigChildProcess(): Promise<void> {
  // joint states at 100 Hz (franka_ros2 publishes faster; rosbridge JSON at 1 kHz is not a lab's setup)
  const rig = await FrankaRosbridgeRig.start({
    backend: new MirrorBackend({ robot: FR3 }),
    jointStateEveryTicks: 10,
  });
  // test-harness knowledge: the rig's private joint-state publisher is switched off and on
  const rigAny = rig as unknown as { publishJointState: (...a: unknown[]) => void };
  const publish = rigAny.publishJointState.bind(rig);
  process.on("message", (m: { id: number; cmd: string; on?: boolean }) => {
    if (m.cmd === "joint-states") rigAny.publishJointState = m.on ? publish : () => {};
    if (m.cmd === "close") {
      void rig.close().then(() => {
        process.send!({ id: m.id });
        process.exit(0);
      });
      return;
    }
    process.send!({ id: m.id });
  });
  process.send!({ url: rig.url });
}

async function startRigChild(): Promise<RigChild> {
  const child = spawn(process.execPath, ["--import", "tsx", fileURLToPath(import.meta.url), "--rig-child"], {
    stdio: ["ignore", "inherit", "inherit", "ipc"],
  });
  let next = 0;
  const waiting = new Map<number, () => void>();
  const url = await new Promise<string>((resolve, reject) => {
    child.once("exit", (code) => reject(new Error(`rig child exited (${code})`)));
    child.on("message", (m: { url?: string; id?: number }) => {
      if (m.url) resolve(m.url);
      if (m.id !== undefined) waiting.get(m.id)?.();
    });
  });
  const call = (cmd: string, extra: Record<string, unknown> = {}) =>
    new Promise<void>((resolve) => {
      const id = next++;
      waiting.set(id, resolve);
      child.send({ id, cmd, ...extra });
    });
  return {
    url,
    jointStates: (on) => call("joint-states", { on }),
    close: async () => {
      const exited = new Promise<void>((r) => child.once("exit", () => r()));
      await call("close");
      await exited;
    },
  };
}

if (args.includes("--signal-child")) {
  await signalChild();
} else if (args.includes("--rig-child")) {
  await rigChildProcess();
} else {
  console.log(
    `stop latency per source, ${SAMPLES} samples each (fewer for watchdog, hang, signal); ${cpus().length} CPUs, load ${loadavg()[0]!.toFixed(2)}`,
  );
  // how long this process's event loop was kept from running (the floor under every stop)
  const loop = monitorEventLoopDelay({ resolution: 1 });
  loop.enable();
  const realWanted = ["contact-buzzbox", "contact-firmata", "estop", "watchdog", "firmata-hang"].some(wanted);
  if (realWanted) {
    const rig = await startRigChild();
    try {
      if (["contact-buzzbox", "estop", "watchdog"].some(wanted)) await contactRows(rig, "buzzbox");
      if (["contact-firmata", "firmata-hang"].some(wanted)) await contactRows(rig, "firmata");
    } finally {
      await rig.close();
    }
  }
  await simRows();
  await signalRows();
  loop.disable();
  print();
  console.log(
    `event-loop delay of the gateway process over the run: p50 ${(loop.percentile(50) / 1e6).toFixed(2)} ms, p99 ${(loop.percentile(99) / 1e6).toFixed(2)} ms, max ${(loop.max / 1e6).toFixed(2)} ms (1 ms resolution); load now ${loadavg()[0]!.toFixed(2)}`,
  );
  process.exit(0);
}
