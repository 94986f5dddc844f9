/**
 * act's frames.video on a real HTTP server (port 0, sim bench): the MP4 is fetched with the agent
 * token through the TS client and checked by ffprobe (codec, pixel format, size, frame count,
 * duration, frame rate in episode time, index first); its bytes count in the frame budget; a
 * gateway whose ffmpeg is missing publishes so in /v1/spec and refuses the request before
 * anything moves; an ffmpeg that fails after the chunk ran leaves the rest of the answer intact.
 */
import { execFile } from "node:child_process";
import { chmodSync, mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { AGENT_TOKEN, type TestGateway, testGateway } from "../../compose/testing.ts";
import { AgentClient, RobotGatewayError } from "../client/client.ts";

const run = promisify(execFile);
const tmp = mkdtempSync(join(tmpdir(), "rg-video-test-"));
const BENCH = { backend: { type: "sim" }, task: { id: "free-motion", seed: 1 } };

async function serve(video?: {
  ffmpegPath: string;
}): Promise<{ g: TestGateway; agent: AgentClient; url: string }> {
  const g = await testGateway({ ...BENCH, ...(video ? { video } : {}) }, { recorder: false });
  const url = await g.app.listen({ host: "127.0.0.1", port: 0 });
  return { g, agent: new AgentClient({ url, token: AGENT_TOKEN }), url };
}

/** `n` rows from q that turn joint 1 by `dq` in total, smoothstep in time (well inside the profile). */
function ramp(q: readonly number[], grip: number, n: number, dq: number): number[][] {
  const smooth = (x: number) => x * x * (3 - 2 * x);
  return Array.from({ length: n }, (_, i) => [q[0]! + dq * smooth((i + 1) / n), ...q.slice(1), grip]);
}

async function rejection(p: Promise<unknown>): Promise<RobotGatewayError> {
  const e = await p.then(
    () => undefined,
    (x: unknown) => x,
  );
  expect(e).toBeInstanceOf(RobotGatewayError);
  return e as RobotGatewayError;
}

async function ffprobe(file: string): Promise<{
  stream: Record<string, string | number>;
  format: Record<string, string | number>;
}> {
  const { stdout } = await run("ffprobe", [
    "-v",
    "error",
    "-count_frames",
    "-select_streams",
    "v:0",
    "-show_entries",
    "stream=codec_name,pix_fmt,width,height,nb_read_frames,r_frame_rate:format=format_name,duration",
    "-of",
    "json",
    file,
  ]);
  const j = JSON.parse(stdout) as {
    streams: Record<string, string | number>[];
    format: Record<string, string | number>;
  };
  return { stream: j.streams[0]!, format: j.format };
}

/** Frame `index` of a video decoded to raw RGB by ffmpeg. */
async function videoFrame(file: string, index: number): Promise<Buffer> {
  const { stdout } = await run(
    "ffmpeg",
    [
      "-v",
      "error",
      "-i",
      file,
      "-vf",
      `select=eq(n\\,${index})`,
      "-frames:v",
      "1",
      "-f",
      "rawvideo",
      "-pix_fmt",
      "rgb24",
      "pipe:1",
    ],
    { encoding: "buffer", maxBuffer: 16 * 1024 * 1024 },
  );
  return stdout;
}

function meanAbsDiff(a: Uint8Array, b: Uint8Array): number {
  expect(a.length).toBe(b.length);
  let s = 0;
  for (let i = 0; i < a.length; i++) s += Math.abs(a[i]! - b[i]!);
  return s / a.length;
}

describe("act with frames.video on a live gateway", () => {
  let s: Awaited<ReturnType<typeof serve>>;
  beforeAll(async () => {
    s = await serve();
  });
  afterAll(async () => {
    await s?.g.close();
  });

  it("publishes in /v1/spec that video works", async () => {
    const spec = await s.agent.spec();
    expect(spec.video).toEqual({
      available: true,
      container: "mp4",
      content_type: "video/mp4",
      codec: "h264",
      pix_fmt: "yuv420p",
    });
  });

  it("returns one H.264 MP4 of the execution, fetchable with the agent token, counted in the frame budget", async () => {
    const r0 = (await s.agent.observe({ cameras: [] })).readings[0]!;
    const before = s.g.gateway.frames.usage.bytes;
    // 0.5 s of episode time at 25 fps: a frame at the start and every 40 control periods → 13
    const act = await s.agent.act({
      type: "joint_position",
      dt: 0.05,
      rows: ramp(r0.q, r0.gripper_width_m, 10, 0.03),
      frames: { fps: 25, cameras: ["front"], video: true },
    });
    expect(act.executed_rows).toBe(10);
    expect(act.video_error).toBeUndefined();
    expect(act.frames).toHaveLength(13);
    expect(act.videos).toHaveLength(1);
    const v = act.videos![0]!;
    expect(v).toMatchObject({
      camera: "front",
      content_type: "video/mp4",
      codec: "h264",
      pix_fmt: "yuv420p",
      width: 640,
      height: 480,
      fps: 25,
      frames: 13,
      duration_s: 0.52,
      t_start: act.frames[0]!.t,
    });
    expect(v.url).toMatch(/^\/v1\/frames\//);
    // the video's bytes are held in the same store as the (still raw) stills
    expect(s.g.gateway.frames.usage.bytes - before).toBe(13 * 640 * 480 * 3 + v.bytes);

    const file = join(tmp, "act.mp4");
    const got = await s.agent.video(v, file);
    expect(got.contentType).toBe("video/mp4");
    expect(got.data.byteLength).toBe(v.bytes);
    const { stream, format } = await ffprobe(file);
    expect(stream).toMatchObject({
      codec_name: "h264",
      pix_fmt: "yuv420p",
      width: 640,
      height: 480,
      nb_read_frames: "13",
      r_frame_rate: "25/1",
    });
    expect(String(format["format_name"])).toContain("mp4");
    expect(Number(format["duration"])).toBeCloseTo(0.52, 2);
    // faststart: the index (moov) comes before the media data (mdat)
    expect(got.data.indexOf("moov")).toBeGreaterThan(0);
    expect(got.data.indexOf("moov")).toBeLessThan(got.data.indexOf("mdat"));

    // the video's frames are the stills: first against first, last against last
    const still = async (i: number) => (await s.agent.rgb(act.frames[i]!.rgb)).data;
    const [f0, f12] = [await videoFrame(file, 0), await videoFrame(file, 12)];
    const [s0, s12] = [await still(0), await still(12)];
    expect(meanAbsDiff(f0, s0)).toBeLessThan(4);
    expect(meanAbsDiff(f12, s12)).toBeLessThan(4);

    // without a token the video is refused like every frame
    const anon = await fetch(s.url + v.url);
    expect(anon.status).toBe(401);
  });

  it("makes one video per camera, and none without video", async () => {
    const r0 = (await s.agent.observe({ cameras: [] })).readings[0]!;
    const two = await s.agent.act({
      type: "joint_position",
      dt: 0.1,
      rows: ramp(r0.q, r0.gripper_width_m, 2, -0.005),
      frames: { fps: 10, cameras: ["front", "wrist"], video: true },
    });
    expect(two.videos!.map((v) => [v.camera, v.frames, v.fps])).toEqual([
      ["front", 3, 10],
      ["wrist", 3, 10],
    ]);
    const none = await s.agent.act({
      type: "joint_position",
      dt: 0.1,
      rows: ramp(r0.q, r0.gripper_width_m, 1, 0),
      frames: { fps: 10, cameras: ["front"] },
    });
    expect(none.videos).toBeUndefined();
    expect(none.frames).toHaveLength(2);
  });

  it("an odd fps gives the exact episode-time rate (one frame every 17 control periods)", async () => {
    const r0 = (await s.agent.observe({ cameras: [] })).readings[0]!;
    const act = await s.agent.act({
      type: "joint_position",
      dt: 0.1,
      rows: ramp(r0.q, r0.gripper_width_m, 1, 0),
      frames: { fps: 60, cameras: ["top"], video: true },
    });
    const v = act.videos![0]!;
    // round(1000 / 60) = 17 ms between frames: 1000/17 fps, floor(100 / 17) + 1 = 6 frames
    expect(v.frames).toBe(6);
    expect(v.fps).toBeCloseTo(1000 / 17, 5);
    const file = join(tmp, "odd.mp4");
    await s.agent.video(v, file);
    const { stream } = await ffprobe(file);
    expect(stream).toMatchObject({ nb_read_frames: "6", r_frame_rate: "1000/17" });
  });
});

describe("a gateway without a working ffmpeg", () => {
  it("publishes video unavailable and refuses frames.video before anything moves", async () => {
    const s = await serve({ ffmpegPath: join(tmp, "no-such-ffmpeg") });
    try {
      const spec = await s.agent.spec();
      expect(spec.video.available).toBe(false);
      expect(spec.video.reason).toMatch(/not found/);
      const r0 = (await s.agent.observe({ cameras: [] })).readings[0]!;
      const steps = s.g.gateway.requireEpisode().counters.steps;
      const e = await rejection(
        s.agent.act({
          type: "joint_position",
          dt: 0.05,
          rows: ramp(r0.q, r0.gripper_width_m, 4, 0.01),
          frames: { fps: 25, video: true },
        }),
      );
      expect([e.code, e.status]).toEqual(["RB_ERR_VIDEO_UNAVAILABLE", 422]);
      expect(e.details["reason"]).toMatch(/no-such-ffmpeg was not found/);
      // nothing moved, no time passed, no step was counted
      const r1 = (await s.agent.observe({ cameras: [] })).readings[0]!;
      expect(r1.q).toEqual(r0.q);
      expect(r1.t).toBe(r0.t);
      expect(s.g.gateway.requireEpisode().counters.steps).toBe(steps);
      // the same chunk without video runs
      const ok = await s.agent.act({
        type: "joint_position",
        dt: 0.05,
        rows: ramp(r0.q, r0.gripper_width_m, 4, 0.01),
        frames: { fps: 25, cameras: ["front"] },
      });
      expect(ok.executed_rows).toBe(4);
      expect(ok.videos).toBeUndefined();
    } finally {
      await s.g.close();
    }
  });

  it("an ffmpeg that fails the encode: the chunk's answer stands, with video_error RB_ERR_VIDEO_ENCODE", async () => {
    // fault injection: answers the probe like ffmpeg, fails every encode
    const broken = join(tmp, "ffmpeg-fails-encode");
    writeFileSync(
      broken,
      '#!/bin/sh\ncase "$*" in *-encoders*) exec ffmpeg "$@";; esac\necho "injected encoder failure" >&2\nexit 3\n',
    );
    chmodSync(broken, 0o755);
    const s = await serve({ ffmpegPath: broken });
    try {
      expect((await s.agent.spec()).video.available).toBe(true);
      const r0 = (await s.agent.observe({ cameras: [] })).readings[0]!;
      const act = await s.agent.act({
        type: "joint_position",
        dt: 0.05,
        rows: ramp(r0.q, r0.gripper_width_m, 4, 0.01),
        frames: { fps: 25, cameras: ["front"], video: true },
      });
      expect(act.executed_rows).toBe(4);
      expect(act.frames).toHaveLength(6);
      expect(act.videos).toEqual([]);
      expect(act.video_error).toMatchObject({
        code: "RB_ERR_VIDEO_ENCODE",
        details: { camera: "front", reason: "ffmpeg exited with 3", stderr: "injected encoder failure" },
      });
    } finally {
      await s.g.close();
    }
  });
});
