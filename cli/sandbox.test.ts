/**
 * The agent sandbox of `robot-gateway run`, attacked by a real agent process: a python script
 * that tries to read the run's records (the hidden task instance), the bench file and the
 * repository, and to reach a host port other than the gateway's. It writes what each attempt
 * gave to its workspace; the test reads that file. The same agent with --no-sandbox is the control
 * that shows every attempt is a real one.
 */
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { createServer, type Server, type Socket } from "node:net";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { Writable } from "node:stream";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { CodedError } from "../seam/errors.ts";
import type { EpisodeResult } from "../gateway/recorder/result.ts";
import { runTrials, trialSeed } from "./run.ts";
import { bwrapArgs, checkAgentDir, defaultAgentDir } from "./sandbox.ts";

const ROOT = resolve(import.meta.dirname, "..");

/** argv: out dir, repo root, bench file, decoy port, result file name */
const PROBE = `
import json, os, socket, sys, urllib.request
out, repo, bench, decoy, name = sys.argv[1:6]
res = {}
def attempt(key, fn):
    try:
        res[key] = {"ok": True, "got": str(fn())[:300]}
    except Exception as e:
        res[key] = {"ok": False, "error": type(e).__name__ + ": " + str(e)[:200]}
def find_record():
    recs = os.path.join(out, "records")
    ep = os.listdir(recs)[0]
    return open(os.path.join(recs, ep, "record.mcap"), "rb").read()
attempt("list_out", lambda: os.listdir(out))
attempt("read_record", lambda: b"instance" in find_record())
attempt("read_bench", lambda: open(bench).read())
attempt("read_repo_package", lambda: open(os.path.join(repo, "package.json")).read())
attempt("list_repo", lambda: os.listdir(repo))
attempt("read_calibration_code", lambda: open(os.path.join(repo, "compose", "compose.ts")).read())
def connect_decoy():
    s = socket.create_connection(("127.0.0.1", int(decoy)), timeout=2)
    s.sendall(b"hello")
    return s.recv(16)
attempt("connect_decoy", connect_decoy)
attempt("read_host_root", lambda: os.listdir("/root"))
def gateway():
    req = urllib.request.Request(os.environ["ROBOT_GATEWAY_URL"] + "/v1/task",
        headers={"authorization": "Bearer " + os.environ["ROBOT_GATEWAY_TOKEN"]})
    return json.load(urllib.request.urlopen(req, timeout=10))["task_id"]
attempt("gateway_task", gateway)
res["env_keys"] = sorted(os.environ.keys())
ws = os.environ.get("ROBOT_GATEWAY_WORKSPACE") or os.getcwd()
with open(os.path.join(ws, name), "w") as f:
    json.dump(res, f)
print("probe done", ws)
`;

class Sink extends Writable {
  text = "";
  override _write(chunk: Buffer, _enc: string, cb: () => void): void {
    this.text += chunk.toString();
    cb();
  }
}

interface Attempt {
  ok: boolean;
  got?: string;
  error?: string;
}
type Attempts = Record<string, Attempt> & { env_keys: string[] };

let dir: string;
let decoy: Server;
let decoyPort = 0;
let decoyHits = 0;
const decoyConns = new Set<Socket>();
beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), "rg-sandbox-test-"));
  mkdirSync(join(dir, "agent"));
  writeFileSync(join(dir, "agent", "probe.py"), PROBE);
  writeFileSync(
    join(dir, "bench.json"),
    JSON.stringify({ version: 1, name: "iso", backend: { type: "sim" }, task: { id: "buzz-wire", seed: 1 } }),
  );
  decoy = createServer((c) => {
    decoyHits++;
    decoyConns.add(c);
    c.on("close", () => decoyConns.delete(c));
    c.end("secret");
  });
  await new Promise<void>((res) => decoy.listen(0, "127.0.0.1", () => res()));
  decoyPort = (decoy.address() as { port: number }).port;
});
afterAll(async () => {
  for (const c of decoyConns) c.destroy();
  await new Promise<void>((res) => decoy.close(() => res()));
  rmSync(dir, { recursive: true, force: true });
});

async function probeRun(sandbox: boolean, out: string) {
  const bench = join(dir, "bench.json");
  const progress = new Sink();
  const { report } = await runTrials({
    trials: 1,
    bench,
    agent: `python3 agent/probe.py "${out}" "${ROOT}" "${bench}" ${decoyPort} attempts.json`,
    cwd: dir,
    out,
    sandbox,
    progress,
    pollMs: 50,
  });
  return { report, progress: progress.text };
}

describe("the agent sandbox", () => {
  it("gives the agent nothing but the gateway, and the agent scores as doing nothing", async () => {
    const out = join(dir, "run-sandboxed");
    const hitsBefore = decoyHits;
    const { report, progress } = await probeRun(true, out);
    expect(progress).toMatch(/agents run sandboxed \(bubblewrap\)/);
    expect(report.sandbox).toBe("bubblewrap");
    const t = report.trials[0]!;
    // the agent's own output file, in its workspace
    const got = JSON.parse(
      readFileSync(join(out, "trials", "1", "workspace", "attempts.json"), "utf8"),
    ) as Attempts;
    for (const key of [
      "list_out",
      "read_record",
      "read_bench",
      "read_repo_package",
      "list_repo",
      "read_calibration_code",
      "connect_decoy",
      "read_host_root",
    ]) {
      expect(got[key], `${key}: ${JSON.stringify(got[key])}`).toMatchObject({ ok: false });
    }
    expect(got.connect_decoy!.error).toMatch(/ConnectionRefused|OSError|timed out/);
    expect(decoyHits).toBe(hitsBefore);
    // the one way out works: the gateway, with the agent token
    expect(got.gateway_task).toEqual({ ok: true, got: "buzz-wire" });
    // and its environment is the gateway's variables and the basics, nothing of the run's
    expect(got.env_keys).toEqual(
      expect.arrayContaining(["ROBOT_GATEWAY_TOKEN", "ROBOT_GATEWAY_URL", "ROBOT_GATEWAY_WORKSPACE"]),
    );
    for (const k of got.env_keys)
      expect(k).toMatch(/^(ROBOT_GATEWAY_(URL|TOKEN|TRIAL|WORKSPACE)|PATH|HOME|LANG|PWD)$/);
    // it did nothing, and scores as doing nothing
    expect(t).toMatchObject({
      ended_by: "run",
      end_reason: "finished",
      progress: 0,
      agent: { exit_code: 0 },
    });
    const result = JSON.parse(
      readFileSync(join(out, t.record_path!.replace("record.mcap", "result.json")), "utf8"),
    ) as EpisodeResult;
    expect(result.budgets_used.steps).toBe(0);
    expect(result.progress).toBe(0);
    // seeds come from a fresh secret, recorded in the report
    expect(report.seed_secret).toMatch(/^[0-9a-f]{64}$/);
  }, 60_000);

  it("control: the same agent with --no-sandbox reads all of it (so every attempt above is real)", async () => {
    const out = join(dir, "run-open");
    const { report, progress } = await probeRun(false, out);
    expect(progress).toMatch(/--no-sandbox: agents run UNCONFINED/);
    expect(report.sandbox).toBe("none");
    // unsandboxed, the workspace is the agent's working directory
    const got = JSON.parse(readFileSync(join(dir, "attempts.json"), "utf8")) as Attempts;
    for (const key of ["list_out", "read_record", "read_bench", "read_repo_package", "connect_decoy"]) {
      expect(got[key], `${key}: ${JSON.stringify(got[key])}`).toMatchObject({ ok: true });
    }
    // the live record holds the hidden instance: this is what the sandbox keeps from the agent
    expect(got.read_record!.got).toBe("True");
  }, 60_000);
});

describe("sandbox set-up", () => {
  it("fails closed: without bwrap the run refuses before any agent starts", async () => {
    const path = process.env.PATH;
    const empty = mkdtempSync(join(tmpdir(), "rg-nopath-"));
    process.env.PATH = empty;
    const out = join(dir, "run-nobwrap");
    try {
      const err = await probeRun(true, out).catch((e: unknown) => e);
      expect(err).toBeInstanceOf(CodedError);
      expect(err).toMatchObject({ code: "RB_ERR_SANDBOX_UNAVAILABLE" });
      expect((err as Error).message).toMatch(/bwrap is not installed/);
    } finally {
      process.env.PATH = path;
      rmSync(empty, { recursive: true, force: true });
    }
    expect(existsSync(out)).toBe(false);
  });

  it("refuses to hand the agent a folder that holds the run's output", async () => {
    const err = await runTrials({
      trials: 1,
      agent: "python3 agent/probe.py",
      cwd: dir,
      agentDir: dir,
      out: join(dir, "inside"),
      progress: new Sink(),
    }).catch((e: unknown) => e);
    expect(err).toMatchObject({ code: "RB_ERR_SANDBOX_UNAVAILABLE" });
    expect((err as Error).message).toMatch(/may not read/);
  });

  it("the default agent folder is the folder of the first file the command names", () => {
    expect(defaultAgentDir(`python3 agent/probe.py x`, dir)).toBe(join(dir, "agent"));
    expect(defaultAgentDir(`node "${join(dir, "agent", "probe.py")}"`, "/")).toBe(join(dir, "agent"));
    expect(defaultAgentDir("python3 -m mypkg", dir)).toBeUndefined();
    // the program given as a path counts only when no argument names a file
    expect(defaultAgentDir(`${process.execPath} agent/probe.py`, dir)).toBe(join(dir, "agent"));
    expect(defaultAgentDir("./agent/probe.py --fast", dir)).toBe(join(dir, "agent"));
  });

  it("refuses an agent folder that holds the run's output or the repository", () => {
    expect(() => checkAgentDir(dir, [join(dir, "run-x")])).toThrow(CodedError);
    expect(() => checkAgentDir(join(ROOT, "examples"), [ROOT])).not.toThrow();
    expect(() => checkAgentDir(ROOT, [ROOT])).toThrow(/may not read/);
  });

  it("mounts nothing of the host but the system, the agent folders, the workspace and the socket", () => {
    const args = bwrapArgs({
      command: "true",
      cwd: dir,
      agentDir: join(dir, "agent"),
      readOnly: [join(dir, "lib")],
      workspace: join(dir, "ws"),
      socketDir: "/tmp/sock",
      gatewayPort: 1234,
      env: {},
      stdio: ["ignore", 1, 2],
    });
    const binds: string[] = [];
    const writable: string[] = [];
    for (let i = 0; i < args.length; i++) {
      if (args[i] === "--") break;
      if (["--bind", "--ro-bind", "--ro-bind-try"].includes(args[i]!)) binds.push(args[i + 1]!);
      if (args[i] === "--bind") writable.push(args[i + 1]!);
    }
    // the workspace is the one host folder the agent may write
    expect(writable).toEqual([join(dir, "ws")]);
    for (const b of binds) {
      expect(
        b === "/usr" ||
          b.startsWith("/etc/") ||
          b === join(dir, "agent") ||
          b === join(dir, "lib") ||
          b === join(dir, "ws") ||
          b === "/tmp/sock" ||
          b === resolve(process.execPath, ".."),
        b,
      ).toBe(true);
    }
    expect(args).toContain("--unshare-all");
    expect(args).toContain("--clearenv");
  });
});

describe("run seeds", () => {
  it("come from the run secret (31-bit, stable per secret, unrelated across secrets); --seed keeps seed + i", () => {
    const a = "a".repeat(64);
    const b = "b".repeat(64);
    const seedsA = [0, 1, 2, 3].map((i) => trialSeed({}, a, i));
    expect([0, 1, 2, 3].map((i) => trialSeed({}, a, i))).toEqual(seedsA);
    expect(new Set(seedsA).size).toBe(4);
    for (const x of seedsA) expect(Number.isInteger(x) && x >= 0 && x < 2 ** 31).toBe(true);
    // consecutive trials are not consecutive seeds, and another secret gives other seeds
    expect(seedsA[1]! - seedsA[0]!).not.toBe(1);
    expect([0, 1, 2, 3].map((i) => trialSeed({}, b, i))).not.toEqual(seedsA);
    expect([0, 1, 2].map((i) => trialSeed({ seed: 5 }, a, i))).toEqual([5, 6, 7]);
  });
});
