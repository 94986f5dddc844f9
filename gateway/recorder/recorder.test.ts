import { execFile } from "node:child_process";
import { mkdtemp, readFile, rm, stat, truncate, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { promisify } from "node:util";
import { McapIndexedReader } from "@mcap/core";
import { FileHandleReadable } from "@mcap/nodejs";
import { open } from "node:fs/promises";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import type { MirrorBackend } from "../../drivers/mirror/mirror-backend.ts";
import { FREE_MOTION } from "../../tasks/free-motion.ts";
import type { TaskDefinition } from "../../tasks/types.ts";
import { gradeRecord, readRecord, RecordError, recomputeResult, replayRecord } from "./replay.ts";
import { deterministicView, type EpisodeResult } from "./result.ts";
import { decodeJointBatch, type JointBatchMessage, TOPICS } from "./record-format.ts";
import { contactTask } from "./testing/contact-task.ts";
import { type RecordedGateway, recordedGateway } from "../../compose/recorded-gateway.ts";

const ROOT = resolve(import.meta.dirname, "../..");
const run = promisify(execFile);

/** run `robot-gateway grade` in a separate node process */
async function gradeInChild(path: string): Promise<{ code: number; stdout: string; stderr: string }> {
  try {
    const { stdout, stderr } = await run(process.execPath, ["--import", "tsx", "cli/grade.ts", path], {
      cwd: ROOT,
    });
    return { code: 0, stdout, stderr };
  } catch (e) {
    const err = e as { code: number; stdout: string; stderr: string };
    return { code: err.code, stdout: err.stdout, stderr: err.stderr };
  }
}

let dir: string;
let g: RecordedGateway | undefined;
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), "rg-recorder-"));
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});
afterEach(async () => {
  await g?.close();
  g = undefined;
});

const row = (q: number[], grip = 0.04) => [...q, grip];

async function post(url: string, payload: unknown, headers = g!.agent) {
  const res = await g!.app.inject({ method: "POST", url, payload: payload as object, headers });
  return res;
}

/** a small mixed episode: observations, motion with video, a clip, a refusal, a hold, finish */
async function mixedEpisode(): Promise<void> {
  const q = g!.gateway.bench.backend.read().q;
  expect((await post("/v1/observe", {})).statusCode).toBe(200);
  const target = q.map((v, i) => (i === 0 ? v + 0.1 : v));
  const a = await post("/v1/act", {
    type: "joint_position",
    dt: 0.5,
    rows: [row(q), row(target), row(target, 0.06), row(target, 0.5)],
    frames: { fps: 4 },
  });
  expect(a.json().error).toBeUndefined();
  expect(a.json().clipped).toHaveLength(1);
  const fast = target.map((v, i) => (i === 3 ? v + 0.8 : v));
  expect((await post("/v1/act", { type: "joint_position", dt: 0.05, rows: [row(fast)] })).statusCode).toBe(
    422,
  );
  expect((await post("/v1/observe", { advance_s: 0.3 })).statusCode).toBe(200);
  expect((await post("/v1/finish", {})).statusCode).toBe(200);
}

describe("recording a mirror episode over HTTP", () => {
  it("writes record.mcap and result.json, and grade in a separate process agrees", async () => {
    g = await recordedGateway(dir);
    await mixedEpisode();
    const ep = g.gateway.requireEpisode();
    const outcome = await g.recorders[0]!.done;
    expect(outcome.error).toBeUndefined();
    expect(ep.recordPath).toBe(outcome.recordPath);
    const resultJson = JSON.parse(await readFile(outcome.resultPath, "utf8")) as EpisodeResult;
    expect(resultJson).toMatchObject({
      task: "free-motion",
      outcome: "incomplete",
      end_reason: "finished",
      counters: { refusals: 1, clipped_entries: 1, safety_stops: 0 },
      budgets_used: { steps: 2 },
      software: { name: "robot-gateway" },
    });
    expect(resultJson.config_hashes?.bench_sha256).toMatch(/^[0-9a-f]{64}$/);

    // every reading the episode saw is in the record, one per control period, in order
    const contents = await readRecord(outcome.recordPath);
    expect(contents.complete).toBe(true);
    const topics = new Set(contents.messages.map((m) => m.topic));
    for (const t of [TOPICS.meta, TOPICS.instance, TOPICS.commands, TOPICS.jointStates, TOPICS.safety]) {
      expect(topics.has(t)).toBe(true);
    }
    for (const t of [TOPICS.observations, TOPICS.end, TOPICS.result, "/camera/front"]) {
      expect(topics.has(t)).toBe(true);
    }
    const ts = contents.messages
      .filter((m) => m.topic === TOPICS.jointStates)
      .flatMap((m) => Array.from(decodeJointBatch(m.data as JointBatchMessage).t));
    expect(ts.length).toBe(Math.round(ep.t() / 0.001));
    for (let i = 1; i < ts.length; i++) expect(ts[i]! - ts[i - 1]!).toBeCloseTo(0.001, 9);
    const cam = contents.messages.find((m) => m.topic === "/camera/front")!.data as {
      format: string;
      data: string;
    };
    expect(cam.format).toBe("jpeg");
    expect(Buffer.from(cam.data, "base64").subarray(0, 2)).toEqual(Buffer.from([0xff, 0xd8]));
    const cmds = contents.messages.filter((m) => m.topic === TOPICS.commands).map((m) => m.data);
    expect(cmds.map((c) => (c as { accepted: boolean }).accepted)).toEqual([true, false]);
    // 1 observe + 7 act video frames (0…1.5 s at 4 fps) + 1 observe
    expect(contents.messages.filter((m) => m.topic === "/camera/front").length).toBeGreaterThanOrEqual(2);

    // the indexed reader (Foxglove's path) reads it too
    const fh = await open(outcome.recordPath, "r");
    const indexed = await McapIndexedReader.Initialize({ readable: new FileHandleReadable(fh) });
    const channels = [...indexed.channelsById.values()].map((c) => c.topic);
    expect(channels).toContain("/joint_states/preview");
    let n = 0;
    for await (const _m of indexed.readMessages({ topics: [TOPICS.jointStates] })) n++;
    expect(n).toBe(contents.messages.filter((m) => m.topic === TOPICS.jointStates).length);
    expect([...indexed.schemasById.values()].map((s) => s.name)).toEqual(
      expect.arrayContaining(["foxglove.CompressedImage", "foxglove.Log", "foxglove.JointStates"]),
    );
    await fh.close();

    const child = await gradeInChild(outcome.recordPath);
    expect(child.stderr).toContain("agrees");
    expect(child.code).toBe(0);
    expect(deterministicView(JSON.parse(child.stdout))).toEqual(deterministicView(resultJson));
  });

  it("grade exits 1 with a diff when the judge does not reproduce the live result", async () => {
    let calls = 0;
    const flaky: TaskDefinition = {
      ...FREE_MOTION,
      id: "test-flaky",
      createJudge: () => ({
        onReading() {},
        onEvent() {},
        status: () => ({ state: "running" }),
        // differs between the live run and the replay: a judge that is not a function of the stream
        score: () => ({ progress: ++calls / 10, stages: {} }),
      }),
    };
    g = await recordedGateway(dir, { tasks: [flaky], task: flaky.id });
    expect((await post("/v1/observe", { advance_s: 0.01 })).statusCode).toBe(200);
    expect((await post("/v1/finish", {})).statusCode).toBe(200);
    const { recordPath } = await g.recorders[0]!.done;
    const report = await gradeRecord(recordPath, { getTask: (id) => (id === flaky.id ? flaky : undefined) });
    expect(report.agree).toBe(false);
    expect(report.differences.map((d) => d.path)).toContain("progress");
    // the CLI (registry only) cannot know this task: a clear error, exit 2
    const child = await gradeInChild(recordPath);
    expect(child.code).toBe(2);
    expect(child.stderr).toContain('task "test-flaky" is not registered');
  });
});

describe("replaying events through a task judge", () => {
  it("a contact event fails the episode live and in the replay at the same time", async () => {
    const task = contactTask(2);
    g = await recordedGateway(dir, { tasks: [task], task: task.id });
    const backend = g.gateway.bench.backend as MirrorBackend;
    const q = backend.read().q;
    const target = q.map((v, i) => (i === 0 ? v + 0.2 : v));
    backend.emit({ type: "instrument", t: backend.now(), name: "meter", values: { v: 1 }, source: "test" });
    expect(
      (await post("/v1/act", { type: "joint_position", dt: 0.5, rows: [row(target), row(target)] }))
        .statusCode,
    ).toBe(200);
    const tContact = backend.now();
    backend.emit({ type: "contact", t: tContact, closed: true, source: "test" });
    await post("/v1/observe", { advance_s: 0.2 });
    const ep = g.gateway.requireEpisode();
    expect(ep.endReason).toBe("task_failed");
    const { recordPath, result } = await g.recorders[0]!.done;
    expect(result).toMatchObject({ outcome: "failed", progress: 0.5, stages: { contact: 1 } });
    expect(result!.stages["moved"]).toBeGreaterThan(0);
    expect(result!.score_details).toEqual({ instruments: 1 });

    const report = await gradeRecord(recordPath, { getTask: (id) => (id === task.id ? task : undefined) });
    expect(report.differences).toEqual([]);
    expect(report.agree).toBe(true);
    expect(report.stats.events).toBe(2);

    // the events matter: without them the replay disagrees
    const contents = await readRecord(recordPath);
    contents.messages = contents.messages.filter((m) => m.topic !== TOPICS.events);
    const st = replayRecord(contents, { getTask: () => task });
    const without = recomputeResult(st);
    expect(without.stages["contact"]).toBeNull();
    expect(without.outcome).toBe("failed"); // the end reason still says task_failed…
    expect(without.failure_reason).toBeUndefined(); // …but the judge saw no failure
  });
});

describe("broken records", () => {
  it("a file that is not MCAP gives a clear error", async () => {
    const p = join(dir, "junk.mcap");
    await writeFile(p, "this is not an mcap file at all");
    await expect(gradeRecord(p)).rejects.toThrow(/not an MCAP file/);
    const child = await gradeInChild(p);
    expect(child.code).toBe(2);
    expect(child.stderr).toMatch(/cannot grade \(not_a_record\)/);
    await expect(gradeRecord(join(dir, "missing.mcap"))).rejects.toThrow(RecordError);
  });

  it("a truncated record reads up to the cut and says the episode did not end", async () => {
    g = await recordedGateway(dir);
    await mixedEpisode();
    const { recordPath } = await g.recorders[0]!.done;
    const size = (await stat(recordPath)).size;
    await truncate(recordPath, Math.floor(size / 2));
    const contents = await readRecord(recordPath);
    expect(contents.complete).toBe(false);
    expect(contents.messages.some((m) => m.topic === TOPICS.meta)).toBe(true);
    const err = await gradeRecord(recordPath).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(RecordError);
    expect((err as RecordError).kind).toBe("incomplete");
    expect((err as RecordError).message).toMatch(/did not end inside the record \(file truncated/);
  });
});

describe("flush()", () => {
  it("puts everything recorded so far on disk before it resolves; events flush on their own", async () => {
    // no wall-clock flushes: only flush() and events write
    g = await recordedGateway(dir, { recorder: { flushIntervalMs: 2 ** 31 - 1 } });
    const rec = g.recorders[0]!;
    const path = g.gateway.requireEpisode().recordPath!;
    await rec.flush();
    const q = g.gateway.bench.backend.read().q;
    const act = await post("/v1/act", { type: "joint_position", dt: 0.1, rows: [row(q), row(q)] });
    expect(act.statusCode).toBe(200);
    const commands = async () => (await readRecord(path)).messages.filter((m) => m.topic === TOPICS.commands);
    // the acknowledged chunk is already in the file: the episode flushed before it answered
    expect(await commands()).toHaveLength(1);
    // concurrent flushes with nothing new resolve without writing it twice
    await Promise.all([rec.flush(), rec.flush()]);
    expect(await commands()).toHaveLength(1);
    const last = act.json().readings.at(-1).t as number;
    const ts = (await readRecord(path)).messages
      .filter((m) => m.topic === TOPICS.jointStates)
      .flatMap((m) => Array.from(decodeJointBatch(m.data as JointBatchMessage).t));
    expect(ts.at(-1)!).toBeCloseTo(last, 6);
    // a refused chunk records a safety event, which is flushed without anyone asking
    const fast = q.map((v, i) => (i === 3 ? v + 0.8 : v));
    expect((await post("/v1/act", { type: "joint_position", dt: 0.05, rows: [row(fast)] })).statusCode).toBe(
      422,
    );
    for (
      let i = 0;
      i < 100 && (await readRecord(path)).messages.every((m) => m.topic !== TOPICS.safety);
      i++
    ) {
      await new Promise((r) => setTimeout(r, 20));
    }
    expect((await readRecord(path)).messages.some((m) => m.topic === TOPICS.safety)).toBe(true);
    // after the end it waits for the closed record
    expect((await post("/v1/finish", {})).statusCode).toBe(200);
    await rec.flush();
    expect((await readRecord(path)).complete).toBe(true);
  });
});
