/**
 * `robot-gateway run` end to end on the built-in sim buzz-wire bench: real agent processes
 * (small node scripts) drive an in-process gateway over loopback HTTP with the agent token.
 */
import { existsSync, mkdirSync, mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Writable } from "node:stream";
import { beforeAll, describe, expect, it } from "vitest";
import { assertWellFormedXml } from "../gateway/report/testing.ts";
import { AGENT_TOKEN, OPERATOR_TOKEN, testGateway } from "../compose/testing.ts";
import type { RunReport } from "../gateway/report/types.ts";
import { FR3 } from "../robots/franka/models.ts";
import { poseToMat4 } from "../robots/math.ts";
import { sampleBenchCalibration } from "../sim/buzzwire/bench.ts";
import { wireReferencePath } from "../sim/buzzwire/reference-path.ts";
import { startMarkJoints } from "../calibration/wire-pose.ts";
import { getTask } from "../tasks/registry.ts";
import { HANDLE_GRIP_WIDTH_M } from "../sim/sim-backend.ts";
import { runCommand, runTrials } from "./run.ts";

/**
 * One agent for all trials (the run passes one command), switching on ROBOT_GATEWAY_TRIAL:
 * 1 finishes at once, 2 follows the rows in path.json (computed by the test), 3 crashes.
 * It uses only the agent API with its token, and checks that the token opens nothing else.
 */
const AGENT = `
import { readFileSync } from "node:fs";
const url = process.env.ROBOT_GATEWAY_URL;
const H = { authorization: "Bearer " + process.env.ROBOT_GATEWAY_TOKEN, "content-type": "application/json" };
const trial = Number(process.env.ROBOT_GATEWAY_TRIAL);
async function call(method, path, body) {
  const r = await fetch(url + path, { method, headers: H, ...(method === "POST" ? { body: JSON.stringify(body ?? {}) } : {}) });
  const j = await r.json();
  if (!r.ok) throw new Error(path + " " + r.status + " " + JSON.stringify(j));
  return j;
}
const admin = await fetch(url + "/v1/admin/state", { headers: H });
console.log("trial", trial, "admin status", admin.status, "operator token seen", "ROBOT_GATEWAY_OPERATOR_TOKEN" in process.env);
const task = await call("GET", "/v1/task");
if (trial === 1) {
  console.log("finish", JSON.stringify(await call("POST", "/v1/finish")));
} else if (trial === 2) {
  const { rows, dtS } = JSON.parse(readFileSync(new URL("./path.json", import.meta.url), "utf8"));
  const per = Math.max(1, Math.floor(task.budgets.max_call_s / dtS + 1e-9));
  for (let i = 0; i < rows.length; i += per) {
    const res = await call("POST", "/v1/act", { type: "joint_position", dt: dtS, rows: rows.slice(i, i + per) });
    if (res.episode.status === "ended") { console.log("ended", JSON.stringify(res.episode)); break; }
  }
} else {
  await call("POST", "/v1/observe", { advance_s: 0.1 });
  console.error("agent: something went wrong, giving up");
  process.exit(3);
}
`;

const CRASHER = `console.error("crashing"); process.exit(5);`;

const SLEEPER = `console.log("sleeping"); setTimeout(() => {}, 120000);`;

class Sink extends Writable {
  text = "";
  constructor(readonly isTTY: boolean) {
    super();
  }
  override _write(chunk: Buffer, _enc: string, cb: () => void): void {
    this.text += chunk.toString();
    cb();
  }
}

const SEED = 1;
let dir: string;

beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), "rg-run-"));
  // the agents' own folder (read-only in the sandbox); reports go beside it, out of the agents' reach
  mkdirSync(join(dir, "agents"));
  writeFileSync(join(dir, "agents", "agent.mjs"), AGENT);
  writeFileSync(join(dir, "agents", "sleeper.mjs"), SLEEPER);
  writeFileSync(join(dir, "agents", "crasher.mjs"), CRASHER);
  // test-only knowledge: the reference path along trial 2's wire, from the sim's start pose
  const cal = sampleBenchCalibration(FR3, SEED + 1);
  const startQ = startMarkJoints(FR3, cal.wire, poseToMat4(cal.tool.loopPoseFlange), FR3.homeQ);
  if (!startQ) throw new Error("start mark unreachable");
  const ref = wireReferencePath(FR3, cal, {
    gripperWidthM: HANDLE_GRIP_WIDTH_M,
    seedQ: startQ,
    speedMps: 0.02,
  });
  writeFileSync(join(dir, "agents", "path.json"), JSON.stringify(ref));
});

describe("robot-gateway run", () => {
  it("runs three trials (finish, reference path, crash) and reports each", async () => {
    const out = join(dir, "report");
    const progress = new Sink(true);
    const { report, files } = await runTrials({
      task: "buzz-wire",
      trials: 3,
      seed: SEED,
      agent: `node "${join(dir, "agents", "agent.mjs")}"`,
      out,
      progress,
      pollMs: 50,
    });
    const [t1, t2, t3] = report.trials;
    // 1: finished at once: 0 %
    expect(t1).toMatchObject({
      trial: 1,
      seed: 1,
      outcome: "incomplete",
      end_reason: "finished",
      ended_by: "episode",
      progress: 0,
      progress_quantised: 0,
      agent: { exit_code: 0, signal: null },
    });
    // 2: the reference path: the whole wire without contact
    expect(t2).toMatchObject({ trial: 2, seed: 2, outcome: "success", success: true, end_reason: "success" });
    expect(t2!.progress).toBeCloseTo(1, 9);
    expect(t2!.progress_quantised).toBe(1);
    expect(t2!.episode_s).toBeGreaterThan(5);
    // 3: crashed: the run ended the episode and says why
    expect(t3).toMatchObject({
      trial: 3,
      seed: 3,
      outcome: "incomplete",
      end_reason: "finished",
      ended_by: "run",
      progress: 0,
      agent: { exit_code: 3, signal: null },
    });
    expect(t3!.run_note).toBe("agent exited with code 3 while the episode was running");
    expect(t3!.end_detail).toBe("run: agent exited with code 3 while the episode was running");
    // records inside the report folder, complete
    for (const t of report.trials) {
      expect(t.record_path).toMatch(/^records\/.+\/record\.mcap$/);
      expect(existsSync(join(out, t.record_path!))).toBe(true);
      expect(existsSync(join(out, t.record_path!.replace("record.mcap", "result.json")))).toBe(true);
    }
    // the agent had the agent token only
    const log1 = readFileSync(join(out, t1!.agent.log), "utf8");
    expect(log1).toContain("trial 1 admin status 403 operator token seen false");
    expect(readFileSync(join(out, t3!.agent.log), "utf8")).toContain("giving up");

    expect(report.summary).toMatchObject({
      trials: 3,
      successes: 1,
      outcomes: { incomplete: 2, success: 1 },
    });
    expect(report.summary.mean_progress_quantised).toBeCloseTo(1 / 3, 12);
    expect(report.level).toBe(getTask("buzz-wire")!.defaultLevel);

    // the files
    const json = JSON.parse(readFileSync(files["report.json"], "utf8")) as RunReport;
    expect(json).toEqual(report);
    const md = readFileSync(files["report.md"], "utf8");
    expect(md.split("\n").filter((l) => /^\| \d \|/.test(l))).toHaveLength(3);
    expect(md).toMatch(/\| 2 \| 2 \| success \| 100 % \| 100 % \|/);
    const svg = readFileSync(files["progress.svg"], "utf8");
    assertWellFormedXml(svg);
    expect([...svg.matchAll(/data-score="([\d.]+)"/g)].map((m) => Number(m[1]))).toEqual([0, 100, 0]);
    expect(svg).toContain(">mean 33.3 %<");
    const html = readFileSync(files["index.html"], "utf8");
    expect(html).toContain("<svg");
    expect(html).toContain("agent exited with code 3");

    // a TTY gets one live line per trial, finished with a newline
    expect(progress.text).toContain("\r\x1b[2K");
    const finals = progress.text.split("\n").map((l) => l.split("\r\x1b[2K").at(-1)!);
    expect(finals.filter((l) => /^trial \d\/3 seed \d: /.test(l))).toHaveLength(3);
  }, 60_000);

  it("from the command line: a hanging agent is stopped at the trial timeout (plain progress lines)", async () => {
    const out = join(dir, "cli");
    const lines: string[] = [];
    const write = process.stderr.write.bind(process.stderr);
    process.stderr.write = ((s: string | Uint8Array) => {
      lines.push(String(s));
      return true;
    }) as typeof process.stderr.write;
    try {
      await runCommand()
        .name("run")
        .exitOverride()
        .parseAsync(
          [
            "--trials",
            "1",
            "--seed",
            "4",
            "--trial-timeout",
            "1",
            "--agent",
            `node "${join(dir, "agents", "sleeper.mjs")}"`,
            "--out",
            out,
          ],
          { from: "user" },
        );
    } finally {
      process.stderr.write = write;
    }
    const report = JSON.parse(readFileSync(join(out, "report.json"), "utf8")) as RunReport;
    expect(report.trials).toHaveLength(1);
    expect(report.trials[0]).toMatchObject({
      seed: 4,
      ended_by: "run",
      end_reason: "finished",
      run_note: "trial timeout after 1 s",
      agent: { exit_code: null, signal: "SIGTERM" },
    });
    expect(readFileSync(join(out, report.trials[0]!.agent.log), "utf8")).toContain("sleeping");
    const text = lines.join("");
    expect(text).not.toContain("\x1b[");
    expect(text).toMatch(/trial 1\/1 seed 4: episode .+ started\n/);
    expect(text).toMatch(/trial 1\/1 seed 4: incomplete \(finished, ended by the run\)/);
  }, 30_000);

  it("against a running gateway: the run ends a crashed agent's episode with the operator's end call", async () => {
    const g = await testGateway({
      robot: "fr3",
      backend: { type: "mirror" },
      task: { id: "free-motion", seed: 0 },
    });
    try {
      const url = await g.app.listen({ host: "127.0.0.1", port: 0 });
      const common = {
        url,
        operatorToken: OPERATOR_TOKEN,
        agentToken: AGENT_TOKEN,
        trials: 1,
        seed: 7,
        progress: new Sink(false),
        pollMs: 50,
      };
      const { report } = await runTrials({
        ...common,
        agent: `node "${join(dir, "agents", "crasher.mjs")}"`,
        out: join(dir, "remote"),
      });
      expect(report.bench).toBe(url);
      expect(report.task).toBe("free-motion");
      expect(report.trials[0]).toMatchObject({
        seed: 7,
        ended_by: "run",
        end_reason: "finished",
        run_note: "agent exited with code 5 while the episode was running",
        end_detail: "run: agent exited with code 5 while the episode was running",
        agent: { exit_code: 5 },
      });
      // the gateway's own episode list agrees
      expect(g.gateway.findEpisode(report.trials[0]!.episode_id!)?.endReason).toBe("finished");
      // a trial whose episode cannot start is reported, not thrown
      const bad = await runTrials({ ...common, task: "no-such-task", agent: "true", out: join(dir, "bad") });
      expect(bad.report.trials[0]).toMatchObject({ outcome: "error", episode_id: null, end_reason: null });
      expect(bad.report.trials[0]!.run_note).toMatch(/could not be started.*RB_ERR_UNKNOWN_TASK/);
      // the scheduling is the remote gateway's own: asking for it here is a usage error, before any trial
      await expect(
        runTrials({ ...common, rtPriority: 50, agent: "true", out: join(dir, "rt") }),
      ).rejects.toThrow(/--rt-priority is for the gateway run starts itself; with --url/);
      expect(existsSync(join(dir, "rt", "report.json"))).toBe(false);
    } finally {
      await g.close();
    }
  }, 30_000);
});
