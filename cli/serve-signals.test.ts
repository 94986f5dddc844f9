/**
 * Signals against a real `serve` child process (real HTTP on port 0, the simulator): SIGTERM in
 * the middle of a chunk stops the motion through the one stop path within one control period of
 * the handler (counted in simulated control steps from the record, not in wall-clock time), ends
 * the episode as `aborted` with the signal as its detail, writes result.json (and `grade`
 * agrees), and exits 0; a second signal exits at once (130); an idle keep-alive client does not
 * hold the exit.
 */
import { type ChildProcess, spawn } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { Agent, request } from "node:http";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { afterEach, describe, expect, it } from "vitest";
import { type JointBatchMessage, TOPICS } from "../gateway/recorder/record-format.ts";
import { gradeRecord, readRecord } from "../gateway/recorder/replay.ts";
import { sleep, waitFor } from "../test-support/wait.ts";

// biome-ignore lint/suspicious/noExplicitAny: tests read response bodies freely
type Json = Record<string, any>;

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), "..");

interface Child {
  proc: ChildProcess;
  url: string;
  agent: string;
  operator: string;
  recordsDir: string;
  stdout: () => string;
  stderr: () => string;
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
}

let child: Child | undefined;
afterEach(() => {
  if (child && child.proc.exitCode === null && child.proc.signalCode === null) child.proc.kill("SIGKILL");
  child = undefined;
});

/**
 * `serve` in a child process. `via`: "node" (directly), "npm" (`npm start`), or "shell" (under
 * `sh -c` as npx runs it, with npm's environment: the shell does not pass SIGTERM on).
 */
async function startServe(via: "node" | "npm" | "shell" = "node", extra: string[] = []): Promise<Child> {
  const dir = mkdtempSync(join(tmpdir(), "rg-signals-"));
  const recordsDir = join(dir, "records");
  const benchFile = join(dir, "bench.json");
  writeFileSync(
    benchFile,
    JSON.stringify({ version: 1, name: "signals", backend: { type: "sim", scene: "pendulum" }, recordsDir }),
  );
  const args = ["serve", "--bench", benchFile, "--port", "0", ...extra];
  const opts = { cwd: ROOT, stdio: ["ignore", "pipe", "pipe"] as ("ignore" | "pipe")[] };
  const proc =
    via === "npm"
      ? spawn("npm", ["start", "--", ...args.slice(1)], opts)
      : via === "shell"
        ? // not `exec`: the shell stays between, as under npx; it does not pass SIGTERM on
          spawn(
            "sh",
            ["-c", `"${process.execPath}" --import tsx cli/main.ts ${args.join(" ")}; echo shell-done`],
            {
              ...opts,
              env: { ...process.env, npm_command: "exec" },
            },
          )
        : spawn(process.execPath, ["--import", "tsx", "cli/main.ts", ...args], opts);
  let out = "";
  let err = "";
  proc.stdout!.on("data", (d: Buffer) => {
    out += d.toString();
  });
  proc.stderr!.on("data", (d: Buffer) => {
    err += d.toString();
  });
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((r) =>
    proc.on("exit", (code, signal) => r({ code, signal })),
  );
  await waitFor(
    () => /ROBOT_GATEWAY_OPERATOR_TOKEN=\w+/.test(out) || proc.exitCode !== null,
    "serve to start",
    60_000,
  );
  const field = (name: string) => new RegExp(`${name}=(\\S+)`).exec(out)?.[1] ?? "";
  if (!field("ROBOT_GATEWAY_URL")) throw new Error(`serve did not start: ${out}\n${err}`);
  return {
    proc,
    url: field("ROBOT_GATEWAY_URL"),
    agent: field("ROBOT_GATEWAY_TOKEN"),
    operator: field("ROBOT_GATEWAY_OPERATOR_TOKEN"),
    recordsDir,
    stdout: () => out,
    stderr: () => err,
    exited,
  };
}

async function call(c: Child, method: string, path: string, body?: unknown, token = c.agent) {
  const res = await fetch(new URL(path, c.url), {
    method,
    headers: { authorization: `Bearer ${token}`, ...(body ? { "content-type": "application/json" } : {}) },
    ...(body ? { body: JSON.stringify(body) } : {}),
  });
  return { status: res.status, body: (await res.json()) as Json };
}

/** 16 rows × 0.5 s: an 8 s min-jerk turn of the wrist (joint 7) by 0.2 rad. */
function longChunk(q: number[], gripper: number) {
  const s = (x: number) => 10 * x ** 3 - 15 * x ** 4 + 6 * x ** 5;
  const rows = Array.from({ length: 16 }, (_, k) => [
    ...q.map((v, j) => (j === 6 ? v + 0.2 * s((k + 1) / 16) : v)),
    gripper,
  ]);
  return { type: "joint_position", dt: 0.5, rows };
}

/** The gateway has finished the episode's record and stopped listening. */
async function gatewayGone(c: Child): Promise<Json> {
  const id = /episode ([0-9a-f-]{36}):/.exec(c.stdout())![1]!;
  const resultPath = join(c.recordsDir, id, "result.json");
  await waitFor(() => existsSync(resultPath), "result.json", 60_000);
  for (;;) {
    const up = await fetch(new URL("/v1/task", c.url)).then(
      () => true,
      () => false,
    );
    if (!up) break;
    await sleep(50);
  }
  return JSON.parse(readFileSync(resultPath, "utf8")) as Json;
}

describe("serve: signals (child process, real HTTP)", () => {
  it("SIGTERM mid-chunk: stop within one control period, episode ended and recorded, grade agrees, exit 0", async () => {
    const c = (child = await startServe());
    const state0 = (await call(c, "GET", "/v1/admin/state", undefined, c.operator)).body;
    const episodeId = state0["episode"].id as string;
    const r0 = state0["reading"];
    const act = call(c, "POST", "/v1/act", longChunk(r0.q, r0.gripperWidthM)).catch((e: unknown) => e);
    // mid-chunk: the simulated clock has moved on by a second (the sim lets the server answer between steps)
    for (;;) {
      const t = (await call(c, "GET", "/v1/admin/state", undefined, c.operator)).body["reading"].t as number;
      if (t > r0.t + 1) break;
    }
    c.proc.kill("SIGTERM");
    const exit = await c.exited;
    expect(exit.code, c.stderr()).toBe(0);
    const m = /SIGTERM at backend t=([\d.e+-]+)/.exec(c.stderr());
    expect(m, c.stderr()).not.toBeNull();
    const tSignal = Number(m![1]);

    // the in-flight chunk was answered, stopped before its end, with the episode's end
    const res = (await act) as { status: number; body: Json };
    expect(res.status, JSON.stringify(res)).toBe(200);
    expect(res.body["executed_rows"]).toBeLessThan(16);
    expect(res.body["episode"]).toMatchObject({ status: "ended", reason: "aborted", detail: "SIGTERM" });

    const dir = join(c.recordsDir, episodeId);
    const result = JSON.parse(readFileSync(join(dir, "result.json"), "utf8"));
    expect(result).toMatchObject({ end_reason: "aborted", end_detail: "SIGTERM", outcome: "aborted" });
    const report = await gradeRecord(join(dir, "record.mcap"));
    expect(report.differences).toEqual([]);
    expect(report.agree).toBe(true);

    // control steps executed after the signal handler ran, from the recorded readings
    const rec = await readRecord(join(dir, "record.mcap"));
    const meta = rec.messages.find((x) => x.topic === TOPICS.meta)!.data as {
      t0_backend_s: number;
      control_period_s: number;
    };
    const batches = rec.messages
      .filter((x) => x.topic === TOPICS.jointStates)
      .map((x) => x.data as JointBatchMessage);
    const tLast = meta.t0_backend_s + batches[batches.length - 1]!.t_last;
    const stepsAfter = Math.round((tLast - tSignal) / meta.control_period_s);
    expect(stepsAfter).toBeLessThanOrEqual(1);
    expect(tLast).toBeGreaterThan(r0.t + 1); // it was moving when the signal came
  }, 120_000);

  it("a second signal exits at once (130)", async () => {
    const c = (child = await startServe());
    // two different signals (two of one kind may merge into one pending signal)
    c.proc.kill("SIGTERM");
    c.proc.kill("SIGINT");
    const exit = await c.exited;
    expect(exit.code, `${JSON.stringify(exit)} ${c.stderr()}`).toBe(130);
    expect(c.stderr()).toMatch(/(SIGINT|SIGTERM) again, exiting now/);
  }, 120_000);

  it("an idle keep-alive client does not hold the exit", async () => {
    const c = (child = await startServe());
    const agent = new Agent({ keepAlive: true, keepAliveMsecs: 60_000 });
    let closedByServer = false;
    await new Promise<void>((done, fail) => {
      const req = request(
        new URL("/v1/task", c.url),
        { agent, headers: { authorization: `Bearer ${c.agent}` } },
        (res) => {
          res.resume();
          res.on("end", () => {
            expect(res.headers.connection).not.toBe("close");
            done();
          });
        },
      );
      req.on("socket", (s) => s.on("close", () => (closedByServer = true)));
      req.on("error", fail);
      req.end();
    });
    expect(closedByServer).toBe(false); // the socket stays open, idle
    c.proc.kill("SIGTERM");
    const exit = await c.exited;
    expect(exit.code, c.stderr()).toBe(0);
    await waitFor(() => closedByServer, "the server to close the idle socket");
    agent.destroy();
  }, 120_000);

  it("SIGTERM to the `npm start` wrapper reaches the gateway", async () => {
    const c = (child = await startServe("npm"));
    c.proc.kill("SIGTERM");
    const result = await gatewayGone(c);
    expect(result).toMatchObject({ end_reason: "aborted", end_detail: "SIGTERM" });
  }, 120_000);

  it("a gateway under a shell that does not pass SIGTERM on (as npx runs it) follows its wrapper", async () => {
    const c = (child = await startServe("shell"));
    c.proc.kill("SIGTERM");
    const result = await gatewayGone(c);
    expect(result).toMatchObject({ end_reason: "aborted", end_detail: "SIGTERM" });
  }, 120_000);

  it("a first episode that cannot start leaves the gateway serving: the operator starts one, no stack trace", async () => {
    const c = (child = await startServe("node", ["--task", "no-such-task"]));
    await waitFor(
      () => /did not start/.test(c.stderr()),
      `the first episode error on stderr: ${c.stdout()} / ${c.stderr()} / ${c.proc.spawnargs.join(" ")}`,
    );
    expect(c.stderr()).toMatch(/the first episode did not start: RB_ERR_UNKNOWN_TASK/);
    expect(c.stderr()).not.toMatch(/\n\s+at /); // no stack trace
    const started = await call(c, "POST", "/v1/admin/episodes", { task: "free-motion" }, c.operator);
    expect(started.status, JSON.stringify(started.body)).toBe(200);
    expect((await call(c, "GET", "/v1/task")).body["task_id"]).toBe("free-motion");
    c.proc.kill("SIGTERM");
    expect((await c.exited).code, c.stderr()).toBe(0);
  }, 120_000);
});
