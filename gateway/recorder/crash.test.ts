import { spawn } from "node:child_process";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { createInterface } from "node:readline";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { decodeJointBatch, type JointBatchMessage, TOPICS } from "./record-format.ts";
import { gradeRecord, RecordError, readRecord } from "./replay.ts";

const ROOT = resolve(import.meta.dirname, "../..");
let dir: string;
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), "rg-crash-"));
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

describe("a recording process killed with SIGKILL mid-episode", () => {
  it("leaves an MCAP that reads up to the last flush", async () => {
    const child = spawn(process.execPath, ["--import", "tsx", "compose/crash-child.ts", dir], {
      cwd: ROOT,
      stdio: ["ignore", "pipe", "inherit"],
    });
    const exited = new Promise<NodeJS.Signals | null>((res) => child.on("exit", (_c, s) => res(s)));
    let recordPath = "";
    let flushedT = 0;
    let flushes = 0;
    for await (const line of createInterface({ input: child.stdout })) {
      const [what, value] = line.split(" ");
      if (what === "record") recordPath = value!;
      if (what === "flushed" && Number(value) > 0) {
        flushedT = Number(value);
        if (++flushes === 3) {
          child.kill("SIGKILL");
          break;
        }
      }
    }
    expect(await exited).toBe("SIGKILL");
    expect(recordPath).not.toBe("");
    expect(flushedT).toBeGreaterThan(0);

    const contents = await readRecord(recordPath);
    expect(contents.complete).toBe(false);
    expect(contents.readError).toBeUndefined();
    expect(contents.messages[0]!.topic).toBe(TOPICS.meta);
    const ts = contents.messages
      .filter((m) => m.topic === TOPICS.jointStates)
      .flatMap((m) => Array.from(decodeJointBatch(m.data as JointBatchMessage).t));
    // every reading up to the last announced flush is there, without gaps
    expect(ts.length).toBeGreaterThan(0);
    expect(ts[ts.length - 1]!).toBeGreaterThanOrEqual(flushedT);
    expect(ts[0]).toBeCloseTo(0.001, 9);
    for (let i = 1; i < ts.length; i++) expect(ts[i]! - ts[i - 1]!).toBeCloseTo(0.001, 9);
    expect(contents.messages.some((m) => m.topic === TOPICS.observations)).toBe(true);

    const err = await gradeRecord(recordPath).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(RecordError);
    expect((err as RecordError).kind).toBe("incomplete");
    expect((err as RecordError).details["readings"]).toBe(ts.length);
  });
});
