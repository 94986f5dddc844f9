import { mkdirSync, rmSync, statSync, writeFileSync } from "node:fs";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { parseBenchConfig } from "../../compose/bench-config.ts";
import { startGateway } from "../../compose/start.ts";
import { type RecordedGateway, recordedGateway } from "../../compose/recorded-gateway.ts";
import { serve } from "../../cli/serve.ts";
import type { ActRequest } from "../api/schemas.ts";
import { McapRecorder } from "./mcap-recorder.ts";
import { checkRecordsDir, checkRecordsDirAsync } from "./storage.ts";
import { mountTmpfs, type Tmpfs } from "./testing/tmpfs.ts";

let fs: Tmpfs | undefined;
let g: RecordedGateway | undefined;
const scratch: string[] = [];
afterEach(async () => {
  await g?.close().catch(() => {});
  g = undefined;
  fs?.unmount();
  fs = undefined;
  for (const d of scratch.splice(0)) await rm(d, { recursive: true, force: true });
});

/** the fields these tests read from a response */
interface Body {
  error: { code: string; details: Record<string, unknown> };
  status: string;
  reason: string;
  detail: string;
}

async function inject(method: "GET" | "POST", url: string, payload: unknown, headers: object) {
  const res = await g!.app.inject({ method, url, payload: payload as object, headers: headers as never });
  return { status: res.statusCode, body: res.json() as Body };
}

/** one chunk that holds the pose for 0.3 s (300 readings to record) */
function chunk(q: readonly number[]) {
  return { type: "joint_position", dt: 0.1, rows: [1, 2, 3].map(() => [...q, 0.04]) };
}

describe("a full disk under the records directory (tmpfs, 2 MB)", () => {
  it("ends the episode as a fault with RB_ERR_STORAGE, refuses new episodes until there is room again", async () => {
    fs = mountTmpfs(2 * 1024 * 1024);
    const records = join(fs.path, "records");
    g = await recordedGateway(records, { bench: { recordsDir: records } });
    const ep = g.gateway.requireEpisode();
    // leave ~256 KB: a few dozen chunks fill it
    writeFileSync(join(fs.path, "filler"), Buffer.alloc(2 * 1024 * 1024 - 256 * 1024));
    const q0 = g.gateway.bench.backend.read().q;
    const statuses: number[] = [];
    let failed: { status: number; body: Body } | undefined;
    for (let k = 0; k < 400 && !failed; k++) {
      const r = await inject("POST", "/v1/act", chunk(q0), g.agent);
      statuses.push(r.status);
      if (r.status !== 200) failed = r;
    }
    expect(failed, "the record never hit the size limit").toBeDefined();
    // the chunk whose record could not be written is not acknowledged: its response is the storage error
    expect(failed!.status, JSON.stringify(failed!.body)).toBe(503);
    expect(failed!.body.error.code).toBe("RB_ERR_STORAGE");
    expect(failed!.body.error.details.errno).toBe("ENOSPC");
    // and the episode is over: the next call is refused, never answered 200
    const next = await inject("POST", "/v1/act", chunk(q0), g.agent);
    expect(next.status).toBe(409);
    expect(next.body.error).toMatchObject({ code: "RB_ERR_EPISODE_ENDED", details: { reason: "fault" } });
    // the operator API says why
    const summary = await inject("GET", `/v1/admin/episodes/${ep.id}`, undefined, g.operator);
    expect(summary.body).toMatchObject({ status: "ended", reason: "fault" });
    expect(summary.body.detail).toMatch(/^RB_ERR_STORAGE: .*ENOSPC/);
    // no new episode while the disk is full
    const refused = await inject("POST", "/v1/admin/episodes", {}, g.operator);
    expect(refused.status).toBe(503);
    expect(refused.body.error.code).toBe("RB_ERR_STORAGE");
    // room again: the operator can start one
    rmSync(join(fs.path, "filler"));
    const started = await inject("POST", "/v1/admin/episodes", {}, g.operator);
    expect(started.status).toBe(200);
    expect(started.body.status).toBe("running");
  });
});

describe("the production composition (startGateway) on a full disk", () => {
  it("wires the recorder's storage error to the episode: fault, motion refused, flush rejects coded", async () => {
    fs = mountTmpfs(2 * 1024 * 1024);
    const records = join(fs.path, "records");
    const config = parseBenchConfig(
      { version: 1, name: "full", backend: { type: "mirror" }, recordsDir: records },
      "test",
    );
    const started = await startGateway({ config, firstEpisode: false });
    const { bench, gateway } = started;
    const stops: string[] = [];
    const stop = bench.backend.stop.bind(bench.backend);
    bench.backend.stop = (reason: string) => {
      stops.push(reason);
      return stop(reason);
    };
    try {
      const ep = await gateway.startEpisode();
      const rec = started.observers.find((o): o is McapRecorder => o instanceof McapRecorder)!;
      await rec.flush();
      writeFileSync(join(fs.path, "filler"), Buffer.alloc(2 * 1024 * 1024 - 64 * 1024));
      const q = bench.backend.read().q;
      let err: unknown;
      // the episode flushes before it acknowledges a chunk: the act that hits the full disk fails coded
      for (let k = 0; k < 200 && !err; k++) {
        err = await ep.act(chunk(q) as ActRequest).then(
          () => undefined,
          (e: unknown) => e,
        );
      }
      expect(err).toMatchObject({ code: "RB_ERR_STORAGE", details: { errno: "ENOSPC" } });
      // the robot was told to stop, with the code in the reason
      expect(stops.some((r) => r.startsWith("RB_ERR_STORAGE"))).toBe(true);
      expect(ep.endReason).toBe("fault");
      expect(ep.endDetail).toMatch(/^RB_ERR_STORAGE/);
      await expect(ep.act(chunk(q) as ActRequest)).rejects.toMatchObject({ code: "RB_ERR_EPISODE_ENDED" });
      await expect(rec.flush()).rejects.toMatchObject({ code: "RB_ERR_STORAGE" });
      await expect(gateway.startEpisode()).rejects.toMatchObject({ code: "RB_ERR_STORAGE" });
    } finally {
      await gateway.shutdown();
      await started.app.close();
    }
  });
});

describe("a read-only records directory (tmpfs remounted ro; chmod does not stop root)", () => {
  it("serve refuses to start", async () => {
    fs = mountTmpfs(1024 * 1024);
    const records = join(fs.path, "records");
    mkdirSync(records);
    fs.readOnly(true);
    expect(() => checkRecordsDir(records)).toThrow(/RB_ERR_STORAGE|EROFS/);
    // the episode-start check (off the event loop) refuses alike
    await expect(checkRecordsDirAsync(records)).rejects.toMatchObject({
      code: "RB_ERR_STORAGE",
      details: { errno: "EROFS" },
    });
    const dir = await mkdtemp(join(tmpdir(), "rg-bench-"));
    scratch.push(dir);
    const benchFile = join(dir, "bench.json");
    writeFileSync(
      benchFile,
      JSON.stringify({ version: 1, name: "ro", backend: { type: "mirror" }, recordsDir: records }),
    );
    const err = await serve({ bench: benchFile, host: "127.0.0.1", port: 0 }).catch((e: unknown) => e);
    expect(err).toMatchObject({ code: "RB_ERR_STORAGE", details: { errno: "EROFS" } });
  });

  it("a new episode is refused while the directory is read-only and starts once it is writable", async () => {
    fs = mountTmpfs(1024 * 1024);
    const records = join(fs.path, "records");
    g = await recordedGateway(records, { bench: { recordsDir: records } });
    expect((await inject("POST", "/v1/finish", {}, g.agent)).status).toBe(200);
    await g.recorders[0]!.done; // the record is closed: the kernel lets the mount go read-only
    fs.readOnly(true);
    const refused = await inject("POST", "/v1/admin/episodes", {}, g.operator);
    expect(refused.status).toBe(503);
    expect(refused.body.error).toMatchObject({ code: "RB_ERR_STORAGE", details: { errno: "EROFS" } });
    fs.readOnly(false);
    expect((await inject("POST", "/v1/admin/episodes", {}, g.operator)).status).toBe(200);
  });
});

describe("record permissions", () => {
  it("episode folders are 0700 and record.mcap and result.json 0600", async () => {
    const dir = await mkdtemp(join(tmpdir(), "rg-perm-"));
    scratch.push(dir);
    const records = join(dir, "records");
    const config = parseBenchConfig(
      { version: 1, name: "perm", backend: { type: "mirror" }, recordsDir: records },
      "test",
    );
    // composing the bench creates the records folder owner-only
    const started = await startGateway({ config, firstEpisode: false });
    await started.close();
    expect(statSync(records).mode & 0o777).toBe(0o700);
    g = await recordedGateway(records, { bench: { recordsDir: records } });
    expect((await inject("POST", "/v1/finish", {}, g.agent)).status).toBe(200);
    const out = await g.recorders[0]!.done;
    expect(out.error).toBeUndefined();
    const mode = (p: string) => statSync(p).mode & 0o777;
    expect(mode(join(out.recordPath, ".."))).toBe(0o700);
    expect(mode(out.recordPath)).toBe(0o600);
    expect(mode(out.resultPath)).toBe(0o600);
  });
});
