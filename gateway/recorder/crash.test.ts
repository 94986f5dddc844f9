import { execFile, spawn } from "node:child_process";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { createInterface } from "node:readline";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { AGENT_TOKEN } from "../../compose/testing.ts";
import { type CommandMessage, decodeJointBatch, type JointBatchMessage, TOPICS } from "./record-format.ts";
import { gradeRecord, RecordError, readRecord } from "./replay.ts";
import type { EpisodeResult } from "./result.ts";

const ROOT = resolve(import.meta.dirname, "../..");
const run = promisify(execFile);
let dir: string;
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), "rg-crash-"));
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

interface Reply {
  readings: { t: number; q: number[] }[];
}

async function post(url: string, path: string, body: unknown): Promise<{ status: number; json: Reply }> {
  const res = await fetch(new URL(path, url), {
    method: "POST",
    headers: { authorization: `Bearer ${AGENT_TOKEN}`, "content-type": "application/json" },
    body: JSON.stringify(body),
  });
  return { status: res.status, json: (await res.json()) as Reply };
}

describe("a recording gateway process killed with SIGKILL mid-episode", () => {
  it("has every acknowledged chunk in its record, and grade --recover grades it as incomplete", async () => {
    const child = spawn(process.execPath, ["--import", "tsx", "compose/crash-child.ts", dir], {
      cwd: ROOT,
      stdio: ["ignore", "pipe", "inherit"],
    });
    const exited = new Promise<NodeJS.Signals | null>((res) => child.on("exit", (_c, s) => res(s)));
    let url = "";
    let recordPath = "";
    const lines = createInterface({ input: child.stdout });
    for await (const line of lines) {
      const [what, value] = line.split(" ");
      if (what === "url") url = value!;
      if (what === "record") recordPath = value!;
      if (url && recordPath) break;
    }
    expect(url).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);

    // a few acknowledged chunks (each row moves joint 0 a little), then SIGKILL right after an ack
    const acked: { chunk: number; lastT: number }[] = [];
    const obs = await post(url, "/v1/observe", {});
    expect(obs.status).toBe(200);
    const q0 = obs.json.readings[0]!.q;
    for (let k = 0; k < 6; k++) {
      const rows = [1, 2, 3].map((i) => [...q0.map((v, j) => (j === 0 ? v + 0.01 * (3 * k + i) : v)), 0.04]);
      const res = await post(url, "/v1/act", { type: "joint_position", dt: 0.1, rows });
      expect(res.status).toBe(200);
      const readings = res.json.readings;
      acked.push({ chunk: k, lastT: readings[readings.length - 1]!.t });
    }
    child.kill("SIGKILL");
    expect(await exited).toBe("SIGKILL");

    const contents = await readRecord(recordPath);
    expect(contents.complete).toBe(false);
    expect(contents.readError).toBeUndefined();
    const commands = contents.messages.filter((m) => m.topic === TOPICS.commands);
    expect(commands.filter((m) => (m.data as CommandMessage).accepted)).toHaveLength(acked.length);
    const ts = contents.messages
      .filter((m) => m.topic === TOPICS.jointStates)
      .flatMap((m) => Array.from(decodeJointBatch(m.data as JointBatchMessage).t));
    // every reading up to the end of the last acknowledged chunk is there, without gaps
    expect(ts[ts.length - 1]!).toBeGreaterThanOrEqual(acked[acked.length - 1]!.lastT - 1e-6);
    expect(ts[0]).toBeCloseTo(0.001, 9);
    for (let i = 1; i < ts.length; i++) expect(ts[i]! - ts[i - 1]!).toBeCloseTo(0.001, 9);

    // without --recover the truncated record is refused and the message says how to recover it
    const err = await gradeRecord(recordPath).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(RecordError);
    expect((err as RecordError).kind).toBe("incomplete");
    expect((err as RecordError).message).toMatch(/grade --recover/);

    const report = await gradeRecord(recordPath, { recover: true });
    expect(report.recovered).toBe(true);
    expect(report.recomputed.outcome).toBe("incomplete");
    expect(report.recomputed.success).toBe(false);
    expect(report.recomputed.recovered).toMatchObject({ readings: ts.length, file_complete: false });
    expect(report.recomputed.recovered!.last_reading_t).toBe(ts[ts.length - 1]);
    expect(report.recomputed.budgets_used.steps).toBe(acked.length);

    // the command line: exit 2 without --recover, exit 3 and the recovered result with it
    const plain = await run(process.execPath, ["--import", "tsx", "cli/grade.ts", recordPath], {
      cwd: ROOT,
    }).catch((e: { code: number; stderr: string }) => e);
    expect((plain as { code: number }).code).toBe(2);
    expect((plain as { stderr: string }).stderr).toMatch(/--recover/);
    const rec = await run(process.execPath, ["--import", "tsx", "cli/grade.ts", "--recover", recordPath], {
      cwd: ROOT,
    }).catch((e: { code: number; stdout: string; stderr: string }) => e);
    expect((rec as { code: number }).code).toBe(3);
    const printed = JSON.parse((rec as { stdout: string }).stdout) as EpisodeResult;
    expect(printed.outcome).toBe("incomplete");
    expect(printed.recovered?.readings).toBe(ts.length);
  });
});
