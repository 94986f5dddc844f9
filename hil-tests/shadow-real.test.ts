/**
 * The shadow twin with the real backend: the primary is the real backend wired to the rigs
 * (hil-tests/real-bench.ts: the rosbridge rig serving a simulator under franka_ros2's names in a
 * child process, the buzz-box firmware in simavr), the twin a sim built from the same calibration
 * file (`shadow:`). A part of the wire, then a sweep into it: the episode ends on the buzz box's
 * contact; the record then holds the /twin/divergence channel (one message per chunk, one for the
 * trial), result.json its headline, and the contacts of the simavr box and of the twin agree.
 *
 * Tolerances, from the model: the rig's simulator and the twin are the same servo, scene and
 * calibration, and the twin starts every chunk from the real backend's measured state, so what
 * differs is transport: the real backend sees the rig's readings at 500 Hz over ROS, paced to the
 * wall clock, and pairs each with the sample it stands for; the rig starts a trajectory when its
 * goal arrives over ROS. A pairing off by τ puts the tool v·τ apart mid-chunk: a rig period (2 ms)
 * at the reference path's 20 mm/s is 0.04 mm, but on this shared machine τ is load-driven (0.14 s
 * to 0.9 s seen at load ~17: 2.8–17 mm), so mid-chunk divergence is printed, not bounded. What the
 * model bounds independently of load is the end of a completed chunk: both sides rest on its last
 * row (same servo, same target), so the final tool divergence is ≤ FINAL_MM = 1 mm (the rig's arm
 * settles to well under 0.1 mm of the row; a twin that did not follow would be a chunk's travel,
 * 40 mm, away). The divergence
is not zero (the pacing is the wall clock's, not the twin's). The contact: the twin predicts the
 * closing edge the box reports; the box's edge comes a few ms later (pin → firmware debounce 2 ms
 * → UART → serial driver), inside the shadow's 0.1 s matching window.
 * Needs socat, gcc-avr, avr-libc, libsimavr-dev, libelf-dev.
 */
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type TestGateway, testGateway } from "../compose/testing.ts";
import { ShadowBackend } from "../compose/twin/shadow-backend.ts";
import { readRecord } from "../gateway/recorder/replay.ts";
import { TOPICS, type TwinDivergenceMessage } from "../gateway/recorder/record-format.ts";
import { wireReferencePath } from "../sim/buzzwire/reference-path.ts";
import { api, sidewaysRows } from "./buzz-wire.suite.ts";
import { type RealBench, startRealBench } from "./real-bench.ts";

/**
 * The stale-reading limit is raised further than real-buzz-wire.test.ts's 400 ms: this suite
 * runs the rig child, simavr, the gateway and the twin on one shared 2-core machine, and with the
 * machine loaded (load average ~17 seen) the rig's ROS stream paused for 400–760 ms and the
 * simavr box's lines for over 2 s (its heartbeat gets 5 s here). The limit
 * is the safety monitor's, not a measurement: the test asserts nothing about time.
 */
const SAFETY = { staleReadingTimeoutMs: 3000 };
const CHUNK_S = 2;
/** tool divergence at the end of a completed chunk, mm (see the module note) */
const FINAL_MM = 1;

describe.sequential("shadow twin on the real backend (rosbridge rig + simavr box)", () => {
  const seed = 3;
  let rb: RealBench | undefined;
  let g: TestGateway | undefined;
  beforeAll(async () => {
    rb = await startRealBench({ seed, safety: SAFETY, shadow: { type: "sim" }, heartbeatTimeoutMs: 5000 });
  }, 60_000);
  afterAll(async () => {
    await g?.close();
    await rb?.close();
  });

  it("reports divergence per chunk on the record's channel and agrees with the buzz box on the contact", async () => {
    g = await testGateway(rb!.bench);
    const backend = g.gateway.bench.backend;
    expect(backend).toBeInstanceOf(ShadowBackend);
    const shadow = backend as ShadowBackend;
    expect(shadow.primary.kind).toBe("real");
    const r0 = backend.read();
    const ref = wireReferencePath(backend.describe().robot, rb!.calibration, {
      gripperWidthM: r0.gripperWidthM,
      seedQ: r0.q,
      speedMps: 0.02,
    });
    const rows = ref.rows.slice(0, Math.round(ref.rows.length * 0.3));
    const per = Math.max(1, Math.floor(CHUNK_S / ref.dtS + 1e-9));
    let chunks = 0;
    const bodies: string[] = [];
    for (let i = 0; i < rows.length; i += per) {
      const res = await api(g, "POST", "/v1/act", {
        type: "joint_position",
        dt: ref.dtS,
        rows: rows.slice(i, i + per),
      });
      expect(res.status, JSON.stringify(res.body)).toBe(200);
      expect(
        res.body.episode.status,
        JSON.stringify({ episode: res.body.episode, safety: res.body.safety }),
      ).toBe("running");
      bodies.push(JSON.stringify(res.body));
      chunks++;
    }
    const r = backend.read();
    const sweep = sidewaysRows(g, r.q, r.gripperWidthM, 0.03, 2);
    const res = await api(g, "POST", "/v1/act", { type: "joint_position", dt: sweep.dtS, rows: sweep.rows });
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    chunks++;
    bodies.push(JSON.stringify(res.body));
    expect(res.body.episode).toMatchObject({ status: "ended", reason: "task_failed" });
    const boxContacts = (
      res.body.events as { type: string; source?: string; data?: { source?: string } }[]
    ).filter((e) => e.type === "contact");
    expect(boxContacts.length).toBeGreaterThan(0);
    // nothing of the twin in what the agent got
    for (const b of bodies) expect(b).not.toMatch(/twin|divergence/);

    // the shadow's own view: one summary per chunk
    expect(shadow.chunkDivergence().length).toBe(chunks);
    const id = g.gateway.requireEpisode().id;
    const recordPath = g.gateway.requireEpisode().recordPath!;
    await g.close();
    g = undefined;

    const rec = await readRecord(recordPath);
    const msgs = rec.messages
      .filter((m) => m.topic === TOPICS.twinDivergence)
      .map((m) => m.data as TwinDivergenceMessage);
    const perChunk = msgs.filter((m) => m.scope === "chunk");
    expect(perChunk.map((m) => m.chunk)).toEqual([...Array(chunks).keys()]);
    perChunk.forEach((m, k) => {
      const d = m.divergence as { samples: number; toolMm: { max: number; final: number } };
      expect(d.samples).toBeGreaterThan(0);
      // every chunk but the sweep (stopped on the contact) completed
      if (k < perChunk.length - 1) expect(d.toolMm.final).toBeLessThan(FINAL_MM);
    });
    const trial = msgs.find((m) => m.scope === "trial")!.divergence as {
      joint: { rmsRad: number[] };
      toolMm: { rms: number; max: number };
      contacts: { real: number[]; twin: number[]; matched: { offsetS: number }[] };
    };
    // small, not zero: paced over ROS to the wall clock
    expect(Math.max(...trial.joint.rmsRad)).toBeGreaterThan(0);
    expect(trial.toolMm.max).toBeGreaterThan(0);
    // contacts: the box's closing edge and the twin's, matched within the window
    expect(trial.contacts.real.length).toBeGreaterThan(0);
    expect(trial.contacts.twin.length).toBeGreaterThan(0);
    expect(trial.contacts.matched.length).toBeGreaterThan(0);
    for (const m of trial.contacts.matched) expect(Math.abs(m.offsetS)).toBeLessThanOrEqual(0.1);
    const result = JSON.parse(readFileSync(join(recordPath, "..", "result.json"), "utf8")) as {
      episode_id: string;
      twin_divergence?: Record<string, number | null>;
    };
    expect(result.episode_id).toBe(id);
    expect(result.twin_divergence?.contacts_matched).toBe(trial.contacts.matched.length);
    console.log(
      `shadow on the rig: ${chunks} chunks; joint RMS max ${(Math.max(...trial.joint.rmsRad) * 1000).toFixed(3)} mrad; tool RMS ${trial.toolMm.rms.toFixed(3)} max ${trial.toolMm.max.toFixed(3)} mm; contacts real ${trial.contacts.real.length} twin ${trial.contacts.twin.length} matched ${trial.contacts.matched.length} (offsets ms ${trial.contacts.matched.map((m) => (m.offsetS * 1000).toFixed(1)).join(" ")})`,
    );
  }, 180_000);
});
