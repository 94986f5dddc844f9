/**
 * What the operator console costs (issue #15: "no measurable cost to the control loop when
 * nobody watches, and ≤ 5 % to act latency with one viewer").
 *
 * 1. Act latency with 0 viewers vs 1 viewer: one fixed chunk (the arm holds its pose for
 *    ROWS × DT s), POST /v1/act over loopback HTTP, N calls per condition, on two benches: the
 *    simulated buzz-wire bench (`npm start`'s, 4 cameras; the sim runs faster than real time, so
 *    the act is CPU-bound and every millisecond a viewer takes shows) and the real backend wired
 *    to the rigs (hil-tests/real-bench.ts: the act lasts as long as the motion; its front camera
 *    over ROS). The viewer is Debian's Chromium on /console (the page itself: the NDJSON live
 *    stream at 10 Hz and every camera polled every 200 ms; fresh captures are on the budget of
 *    gateway/console/viewer-captures.ts); "0 viewers" is the same browser on about:blank. The
 *    conditions alternate in rounds so the shared machine's load drifts over both alike.
 *    Target: p50 ≤ +5 %. The browser runs on the same 2 cores here; on another machine it would
 *    cost the gateway less.
 * 2. Control-loop cost with nobody watching: CPU time per control step of a long chunk on the
 *    mirror backend (the cheapest loop, so any per-step work shows), with the hub as shipped
 *    (its episode observer and backend listener attached, no viewer) vs the hub absent (both
 *    detached), alternating rounds. A cost is measurable when the middle half of the per-round
 *    differences (present − absent, each round's two conditions back to back) excludes 0.
 * Wall time is what an agent sees; the gateway process's CPU time per call (all its threads,
 * the JPEG encoder's too) is the same cost without the other users of a shared machine in it.
 * The viewer is Chromium by default; `client` is a headless viewer in a child process that asks
 * exactly what the page asks (the gateway's share of the cost without the browser's CPU).
 * Usage: node --import tsx bench/console-cost.ts [calls per condition=100] [rounds=10] [sim|real|both] [chromium|client]
 */
import { type ChildProcess, spawn } from "node:child_process";
import { readdirSync, readFileSync } from "node:fs";
import { Agent, request } from "node:http";
import { fileURLToPath } from "node:url";
import { performance } from "node:perf_hooks";
import type { Page } from "playwright-core";
import { OPERATOR_TOKEN, type TestGateway, testGateway } from "../compose/testing.ts";
import type { EpisodeObserver } from "../gateway/episode/observer.ts";
import { launchChromium, loginConsole } from "../test-support/console-browser.ts";
import { startRealBench } from "../hil-tests/real-bench.ts";
import { pct } from "./stats.ts";

const calls = Number(process.argv[2] ?? 100);
const rounds = Number(process.argv[3] ?? 10);
/** which benches' act latency: sim, real (the rigs) or both */
const which = process.argv[4] ?? "both";
const ROWS = 10;
/** after the viewer connects or leaves, ms before a round is measured (both conditions alike) */
const SETTLE_MS = 3000;
const DT = 0.05;

const holdBody = (g: TestGateway, rows = ROWS, dt = DT) => {
  const r = g.gateway.bench.backend.read();
  return JSON.stringify({
    type: "joint_position",
    dt,
    rows: Array.from({ length: rows }, () => [...r.q, r.gripperWidthM]),
  });
};

async function fresh(g: TestGateway): Promise<void> {
  const ep = g.gateway.episode;
  if (!ep || ep.isEnded || ep.timeLeftS() < 30) await g.gateway.startEpisode();
}

/** one POST /v1/act over loopback HTTP, wall ms */
function act(url: URL, agent: Agent, auth: string, body: string): Promise<number> {
  return new Promise((resolve, reject) => {
    const t0 = performance.now();
    const req = request(
      url,
      {
        method: "POST",
        agent,
        headers: {
          authorization: auth,
          "content-type": "application/json",
          "content-length": Buffer.byteLength(body),
        },
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on("data", (c: Buffer) => chunks.push(c));
        res.on("end", () =>
          res.statusCode === 200
            ? resolve(performance.now() - t0)
            : reject(new Error(`${res.statusCode}: ${Buffer.concat(chunks).toString()}`)),
        );
      },
    );
    req.on("error", reject);
    req.end(body);
  });
}

// ───────────────────────────── 1. act latency, 0 vs 1 viewer ─────────────────────────────

/**
 * `--viewer URL TOKEN`: a headless viewer in its own process that asks the gateway exactly what
 * the page asks on the Live view (gateway/console/ui/app.js): the live stream at 10 Hz, each line
 * parsed, and every camera polled as the page polls it (`have=`, waiting `x-next-ms`, at least
 * 200 ms). It separates what the gateway spends serving a viewer from what Chromium itself takes
 * of the shared cores.
 */
async function headlessViewer(base: string, token: string): Promise<never> {
  const auth = { authorization: `Bearer ${token}` };
  const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
  const polled = new Set<string>();
  const poll = async (cam: string) => {
    let have: number | undefined;
    let alive = true;
    stopPolls.add(() => {
      alive = false;
    });
    while (alive) {
      let waitMs = 200;
      try {
        const q = have !== undefined ? `have=${have}` : "";
        const res = await fetch(`${base}/v1/admin/cameras/${encodeURIComponent(cam)}/image?depth=0&${q}`, {
          headers: auth,
        });
        waitMs = Math.max(200, Math.min(5000, Number(res.headers.get("x-next-ms")) || 0));
        if (res.status === 200) {
          await res.arrayBuffer();
          have = Number(res.headers.get("x-image-id"));
        } else await res.body?.cancel();
      } catch {
        /* next round */
      }
      await sleep(waitMs);
    }
  };
  // the parent says "on" / "off" on stdin: the viewer stays warm between rounds (no process start in them)
  let on = false;
  let stopLive: AbortController | undefined;
  const stopPolls = new Set<() => void>();
  process.stdin.setEncoding("utf8");
  process.stdin.on("data", (d: string) => {
    for (const cmd of d.split("\n").filter(Boolean)) {
      on = cmd === "on";
      if (!on) {
        stopLive?.abort();
        for (const s of stopPolls) s();
        stopPolls.clear();
        polled.clear();
      }
    }
  });
  process.stdin.on("end", () => process.exit(0));
  for (;;) {
    while (!on) await sleep(20);
    try {
      stopLive = new AbortController();
      const res = await fetch(`${base}/v1/admin/live?hz=10`, { headers: auth, signal: stopLive.signal });
      if (!res.ok || !res.body) throw new Error(`live: HTTP ${res.status}`);
      const dec = new TextDecoder();
      let buf = "";
      for await (const chunk of res.body) {
        buf += dec.decode(chunk as Uint8Array, { stream: true });
        let nl = buf.indexOf("\n");
        while (nl >= 0) {
          const line = buf.slice(0, nl);
          buf = buf.slice(nl + 1);
          if (line) {
            const s = JSON.parse(line) as { cameras?: { name: string }[] };
            for (const c of s.cameras ?? [])
              if (!polled.has(c.name)) {
                polled.add(c.name);
                void poll(c.name);
              }
          }
          nl = buf.indexOf("\n");
        }
      }
    } catch {
      /* reconnect, or "off" */
    }
    if (on) await sleep(1000);
  }
}
if (process.argv[2] === "--viewer") await headlessViewer(process.argv[3]!, process.argv[4]!);

/** the viewer: Debian's Chromium on /console, or the headless viewer above (`client`) */
const viewerKind = (process.argv[5] ?? "chromium") as "chromium" | "client";
if (viewerKind !== "chromium" && viewerKind !== "client") throw new Error(`viewer: chromium or client, got ${viewerKind}`);
const browser = viewerKind === "chromium" ? await launchChromium() : undefined;

/** Chromium's processes: this process's descendants that run Chromium (browser, renderer, GPU, network) */
function browserPids(): number[] {
  // (not this process itself: its own command line names the viewer "chromium")
  return descendants(process.pid).filter((pid) => {
    if (pid === process.pid) return false;
    try {
      return readFileSync(`/proc/${pid}/cmdline`, "utf8").includes("chromium");
    } catch {
      return false;
    }
  });
}
function descendants(root: number): number[] {
  const parent = new Map<number, number>();
  for (const d of readdirSync("/proc")) {
    if (!/^\d+$/.test(d)) continue;
    try {
      const stat = readFileSync(`/proc/${d}/stat`, "utf8");
      parent.set(Number(d), Number(stat.slice(stat.lastIndexOf(")") + 2).split(" ")[1]));
    } catch {
      /* gone */
    }
  }
  const out = [root];
  for (let i = 0; i < out.length; i++) for (const [pid, pp] of parent) if (pp === out[i]) out.push(pid);
  return out;
}
/** user + system CPU ms of these processes so far (/proc/PID/stat, clock ticks of 10 ms) */
function treeCpuMs(pids: number[]): number {
  let ticks = 0;
  for (const pid of pids) {
    try {
      const f = readFileSync(`/proc/${pid}/stat`, "utf8").split(") ")[1]!.split(" ");
      ticks += Number(f[11]) + Number(f[12]);
    } catch {
      /* gone */
    }
  }
  return ticks * 10;
}

/** act latency and gateway CPU per call with 0 and 1 viewer on the gateway `g`, printed */
async function actLatency(label: string, g: TestGateway): Promise<void> {
  const address = await g.app.listen({ host: "127.0.0.1", port: 0 });
  const actUrl = new URL("/v1/act", address);
  const keepAlive = new Agent({ keepAlive: true, maxSockets: 1 });
  const page: Page | undefined = await browser?.newPage({ viewport: { width: 1400, height: 1000 } });
  const cams = g.gateway.bench.backend.describe().cameras.length;
  let loggedIn = false;
  let child: ChildProcess | undefined;
  const viewers = async (n: 0 | 1) => {
    if (viewerKind === "client") {
      child ??= spawn(
        process.execPath,
        ["--import", "tsx", fileURLToPath(import.meta.url), "--viewer", address, OPERATOR_TOKEN],
        { stdio: ["pipe", "inherit", "inherit"] },
      );
      child.stdin!.write(n === 1 ? "on\n" : "off\n");
    } else if (!page) throw new Error("no browser");
    else if (n === 1) {
      // the tab keeps the token (sessionStorage) after the first login
      if (!loggedIn) await loginConsole(page, address, OPERATOR_TOKEN);
      else await page.goto(`${address}/console`);
      loggedIn = true;
      await page.waitForSelector('[data-testid="live"]');
      await page.waitForSelector('[data-testid^="camera-img-"]', { timeout: 30_000 });
    } else if (viewerKind === "chromium") await page.goto("about:blank");
    // the live stream's close reaches the server a moment later
    const end = Date.now() + 10_000;
    while (g.gateway.console.watching !== n) {
      if (Date.now() > end)
        throw new Error(`expected ${n} viewers, the hub counts ${g.gateway.console.watching}`);
      await new Promise((r) => setTimeout(r, 20));
    }
    // a viewer watching, not a page loading: its first images and its start (Chromium parses and
    // lays out the page, the headless viewer's fetches warm up) are outside the measurement
    await new Promise((r) => setTimeout(r, SETTLE_MS));
  };
  const actRound = async (n: number, out: number[], cpu: number[] = []) => {
    for (let i = 0; i < n; i++) {
      await fresh(g);
      const body = holdBody(g);
      const c0 = process.cpuUsage();
      out.push(await act(actUrl, keepAlive, g.agent.authorization, body));
      const c = process.cpuUsage(c0);
      cpu.push((c.user + c.system) / 1000);
    }
  };
  // warm-up: JIT, the renderer, the page's modules
  await viewers(1);
  await actRound(10, []);
  await viewers(0);
  await actRound(10, []);
  const lat: Record<0 | 1, number[]> = { 0: [], 1: [] };
  const cpu: Record<0 | 1, number[]> = { 0: [], 1: [] };
  /** per round, the p50 wall with the viewer over the p50 without, − 1 (both back to back: the load's drift cancels) */
  const paired: number[] = [];
  /** the viewer's own CPU (Chromium's processes, or the headless viewer's) per second of its rounds */
  let viewerCpuMs = 0;
  let viewerWallMs = 0;
  const viewerPids = () => (child?.pid ? [child.pid] : browserPids());
  const perRound = Math.max(1, Math.round(calls / rounds));
  for (let k = 0; k < rounds; k++) {
    const p50: Record<0 | 1, number> = { 0: 0, 1: 0 };
    for (const n of (k % 2 === 0 ? [0, 1] : [1, 0]) as (0 | 1)[]) {
      await viewers(n);
      const xs: number[] = [];
      const v0 = n === 1 ? treeCpuMs(viewerPids()) : 0;
      const w0 = performance.now();
      await actRound(perRound, xs, cpu[n]);
      if (n === 1) {
        viewerCpuMs += treeCpuMs(viewerPids()) - v0;
        viewerWallMs += performance.now() - w0;
      }
      lat[n].push(...xs);
      p50[n] = pct(xs, 50);
    }
    paired.push((p50[1] / p50[0] - 1) * 100);
  }
  await viewers(0);
  await page?.close();
  child?.stdin?.end();
  keepAlive.destroy();

  const p = (xs: number[], q: number) => pct(xs, q).toFixed(2).padStart(8);
  const added = (xs: Record<0 | 1, number[]>, q: number) => (pct(xs[1], q) / pct(xs[0], q) - 1) * 100;
  const addedLine = (xs: Record<0 | 1, number[]>) =>
    console.log(
      `  added by the viewer              p50 ${added(xs, 50).toFixed(1).padStart(6)} %     p99 ${added(xs, 99).toFixed(1).padStart(6)} %   (target p50 ≤ 5 %)`,
    );
  console.log(
    `act latency, ${label}: ${ROWS} rows × ${DT} s (${(ROWS * DT) / 0.001} control steps) holding the pose, ` +
      `${cams} camera(s), loopback HTTP, ${lat[0].length} calls per condition in ${rounds} alternating rounds`,
  );
  console.log(`  wall, 0 viewers                  p50 ${p(lat[0], 50)} ms  p99 ${p(lat[0], 99)} ms`);
  console.log(`  wall, 1 viewer (${viewerKind === "chromium" ? "Chromium" : "headless"})        p50 ${p(lat[1], 50)} ms  p99 ${p(lat[1], 99)} ms`);
  addedLine(lat);
  console.log(
    `  added, per round (paired)        p50 ${pct(paired, 50).toFixed(1).padStart(6)} %     25–75 % [${pct(paired, 25).toFixed(1)}, ${pct(paired, 75).toFixed(1)}] %`,
  );
  console.log(
    `  the viewer's own CPU             ${((viewerCpuMs / viewerWallMs) * 100).toFixed(1).padStart(6)} % of a core while it watches (${viewerKind === "chromium" ? "all Chromium processes" : "the headless viewer's process"}; on the same 2 cores)`,
  );
  console.log(`  gateway CPU per call, 0 viewers  p50 ${p(cpu[0], 50)} ms  p99 ${p(cpu[0], 99)} ms`);
  console.log(`  gateway CPU per call, 1 viewer   p50 ${p(cpu[1], 50)} ms  p99 ${p(cpu[1], 99)} ms`);
  addedLine(cpu);
}

if (which !== "real") {
  const sim = await testGateway({ backend: { type: "sim" }, task: { id: "buzz-wire", seed: 1 } });
  await actLatency(
    "sim buzz-wire bench (npm start's; the sim runs faster than real time, so the act is CPU-bound)",
    sim,
  );
  await sim.close();
}
if (which !== "sim") {
  // the real backend wired to the rigs (a robot paced to the wall clock, its front camera over ROS)
  const rb = await startRealBench({
    seed: 4,
    cameras: ["front"],
    cameraRateHz: 2,
    safety: { staleReadingTimeoutMs: 1500 },
  });
  try {
    const real = await testGateway(rb.bench);
    await actLatency("real backend on the rigs (hil-tests/real-bench.ts)", real);
    await real.close();
  } finally {
    await rb.close();
  }
}
await browser?.close();

// ───────────────────────────── 2. control loop, nobody watching ─────────────────────────────

const LOOP_ROWS = 50;
const LOOP_DT = 0.05; // 2500 control steps per chunk
const mirror = await testGateway({ backend: { type: "mirror" } }, { recorder: false });
const loopBody = holdBody(mirror, LOOP_ROWS, LOOP_DT);
const steps = (LOOP_ROWS * LOOP_DT) / 0.001;

/** the hub as shipped (present) or taken out of the episode and off the backend (absent) */
async function hub(present: boolean): Promise<void> {
  await mirror.gateway.startEpisode();
  const ep = mirror.gateway.requireEpisode();
  if (present) return;
  // bench-only counterfactual: the episode's observer list without the hub's observer
  const list = (ep.config as unknown as { observers: EpisodeObserver[] }).observers;
  const i = list.indexOf(mirror.gateway.console.observer);
  if (i < 0) throw new Error("the hub's observer is not attached to the episode");
  list.splice(i, 1);
  mirror.gateway.console.close();
}

async function loopRound(n: number, out: number[]): Promise<void> {
  for (let i = 0; i < n; i++) {
    const c0 = process.cpuUsage();
    const res = await mirror.app.inject({
      method: "POST",
      url: "/v1/act",
      payload: loopBody,
      headers: { ...mirror.agent, "content-type": "application/json" },
    });
    const c = process.cpuUsage(c0);
    if (res.statusCode !== 200) throw new Error(res.body);
    out.push((c.user + c.system) / steps);
  }
}

await hub(true);
await loopRound(20, []);
const cost: Record<"present" | "absent", number[][]> = { present: [], absent: [] };
const loopRounds = 2 * rounds;
const loopCalls = 8;
let attached = true;
for (let k = 0; k < loopRounds; k++) {
  const order: ("present" | "absent")[] = k % 2 === 0 ? ["present", "absent"] : ["absent", "present"];
  for (const which of order) {
    // "absent" took the hub's backend listener off; "present" puts it back as the gateway has it
    if (which === "present" && !attached)
      mirror.gateway.console.attach(mirror.gateway.bench.backend, () => mirror.gateway.episode);
    attached = which === "present";
    await hub(which === "present");
    const xs: number[] = [];
    await loopRound(loopCalls, xs);
    cost[which].push(xs);
  }
}
await mirror.close();

const flat = (r: number[][]) => r.flat();
const pres = pct(flat(cost.present), 50);
const abs = pct(flat(cost.absent), 50);
// per round (both conditions run back to back): present − absent of the round medians
const paired = cost.present.map((xs, k) => pct(xs, 50) - pct(cost.absent[k]!, 50));
const lo = pct(paired, 25);
const hi = pct(paired, 75);
console.log(
  `control loop: CPU µs per control step, ${steps}-step chunks on the mirror backend, nobody watching, ` +
    `${flat(cost.present).length} chunks per condition in ${loopRounds} alternating rounds`,
);
console.log(`  hub absent                      p50 ${abs.toFixed(3).padStart(8)} µs/step`);
console.log(`  hub present, no viewer          p50 ${pres.toFixed(3).padStart(8)} µs/step`);
console.log(
  `  present − absent, per round     p50 ${pct(paired, 50).toFixed(3).padStart(8)} µs/step, 25–75 % [${lo.toFixed(3)}, ${hi.toFixed(3)}]` +
    `   → ${lo <= 0 && hi >= 0 ? "not measurable (the range holds 0)" : "MEASURABLE (the range excludes 0)"}; target: not measurable`,
);
