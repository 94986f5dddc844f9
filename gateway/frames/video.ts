/**
 * The video of an act call's execution: the captured RGB frames of one camera encoded as one MP4
 * (H.264, yuv420p, `+faststart` so a player starts before the whole file is in) by Debian's
 * `ffmpeg` binary in a child process. Raw RGB frames go to its stdin (`-f rawvideo`); the
 * argument list is passed to spawn() as an array, never through a shell. MP4 with faststart needs
 * a seekable output, so ffmpeg writes a file in a private temporary folder that is read back and
 * removed.
 *
 * Whether video can be made is probed once (`ffmpeg -encoders`: the binary runs and lists
 * libx264); the API publishes the answer in /v1/spec and refuses `frames.video` up front with
 * RB_ERR_VIDEO_UNAVAILABLE when it is no, so a refused request never moves the robot.
 */
import { spawn } from "node:child_process";
import { once } from "node:events";
import { mkdtemp, readFile, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import sharp from "sharp";
import type { Frame } from "../../seam/types.ts";

export interface VideoOptions {
  /** the ffmpeg binary: a name looked up on PATH or a path */
  ffmpegPath: string;
  /** an encode (or the probe) that takes longer is killed, ms */
  timeoutMs: number;
  /** x264 constant rate factor (0 = lossless … 51; 23 is x264's default) */
  crf: number;
}

export const VIDEO_DEFAULTS: VideoOptions = { ffmpegPath: "ffmpeg", timeoutMs: 60_000, crf: 23 };

/** The format every video has (also published in /v1/spec). */
export const VIDEO_FORMAT = {
  container: "mp4",
  content_type: "video/mp4",
  codec: "h264",
  pix_fmt: "yuv420p",
} as const;

export type VideoAvailability =
  | { available: true; ffmpeg: string; version: string }
  | { available: false; ffmpeg: string; reason: string };

/** Frames per second as a ratio of integers (what ffmpeg's -framerate takes exactly). */
export interface Rate {
  num: number;
  den: number;
}

export interface EncodedVideo {
  data: Buffer;
  /** of the encoded picture (odd camera sizes are padded by one pixel to even) */
  width: number;
  height: number;
  frames: number;
}

/** An encode that failed: the reason, and the tail of ffmpeg's stderr when it ran. */
export class VideoEncodeError extends Error {
  constructor(
    readonly reason: string,
    readonly stderr = "",
  ) {
    super(stderr ? `${reason}: ${stderr}` : reason);
    this.name = "VideoEncodeError";
  }
}

/** Keep the last `max` characters of a growing text (ffmpeg's stderr), never more in memory. */
function tailCollector(max: number): { add(chunk: Buffer): void; text(): string } {
  let s = "";
  return {
    add(chunk) {
      s = (s + chunk.toString("utf8")).slice(-max);
    },
    text: () => s.trim(),
  };
}

interface Run {
  code: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
  /** spawn itself failed (ENOENT, EACCES) */
  spawnError?: Error;
  timedOut: boolean;
}

export class VideoEncoder {
  readonly opts: VideoOptions;
  private probed: Promise<VideoAvailability> | undefined;

  constructor(opts: Partial<VideoOptions> = {}) {
    this.opts = { ...VIDEO_DEFAULTS, ...opts };
  }

  /** Can videos be made here? Probed once, on first ask, then kept. */
  availability(): Promise<VideoAvailability> {
    this.probed ??= this.probe();
    return this.probed;
  }

  private async probe(): Promise<VideoAvailability> {
    const ffmpeg = this.opts.ffmpegPath;
    // without -hide_banner the version line comes first on stderr; the encoder list is on stdout
    const r = await this.run(["-nostdin", "-encoders"], undefined, Math.min(this.opts.timeoutMs, 15_000));
    if (r.spawnError) {
      const code = (r.spawnError as NodeJS.ErrnoException).code;
      const reason =
        code === "ENOENT"
          ? `${ffmpeg} was not found (Debian: apt-get install ffmpeg)`
          : `${ffmpeg} could not be started: ${r.spawnError.message}`;
      return { available: false, ffmpeg, reason };
    }
    if (r.timedOut) return { available: false, ffmpeg, reason: `${ffmpeg} -encoders did not answer in time` };
    if (r.code !== 0) {
      return { available: false, ffmpeg, reason: `${ffmpeg} -encoders exited with ${r.code ?? r.signal}` };
    }
    if (!/^\s*V\S*\s+libx264\s/m.test(r.stdout)) {
      return { available: false, ffmpeg, reason: `${ffmpeg} has no libx264 encoder (H.264)` };
    }
    const version = /ffmpeg version (\S+)/.exec(r.stderr)?.[1] ?? "unknown";
    return { available: true, ffmpeg, version };
  }

  /**
   * Encode `frames` (one camera, in capture order, all of one size) at `rate` frames per second
   * of episode time. Throws VideoEncodeError when ffmpeg is missing, fails or takes too long.
   */
  async encode(frames: readonly Frame[], rate: Rate): Promise<EncodedVideo> {
    const first = frames[0];
    if (!first) throw new VideoEncodeError("no frames to encode");
    const { width, height } = first.rgb;
    const raw: Uint8Array[] = [];
    for (const f of frames) {
      if (f.rgb.width !== width || f.rgb.height !== height) {
        throw new VideoEncodeError(
          `frame sizes differ (${width}×${height} and ${f.rgb.width}×${f.rgb.height}) in camera ${f.camera}`,
        );
      }
      raw.push(await rawRgb(f));
    }
    const w = width + (width % 2);
    const h = height + (height % 2);
    const dir = await mkdtemp(join(tmpdir(), "rg-video-"));
    const out = join(dir, "video.mp4");
    try {
      const args = [
        "-nostdin",
        "-hide_banner",
        "-loglevel",
        "error",
        "-f",
        "rawvideo",
        "-pix_fmt",
        "rgb24",
        "-s:v",
        `${width}x${height}`,
        "-framerate",
        `${rate.num}/${rate.den}`,
        "-i",
        "pipe:0",
        "-an",
        // yuv420p halves the chroma resolution: the picture must be of even size
        ...(w !== width || h !== height ? ["-vf", `pad=${w}:${h}`] : []),
        "-c:v",
        "libx264",
        "-preset",
        "veryfast",
        "-crf",
        String(this.opts.crf),
        "-pix_fmt",
        VIDEO_FORMAT.pix_fmt,
        "-movflags",
        "+faststart",
        "-f",
        "mp4",
        "-y",
        out,
      ];
      const r = await this.run(args, raw, this.opts.timeoutMs);
      if (r.spawnError) throw new VideoEncodeError(`${this.opts.ffmpegPath}: ${r.spawnError.message}`);
      if (r.timedOut)
        throw new VideoEncodeError(`ffmpeg took longer than ${this.opts.timeoutMs} ms`, r.stderr);
      if (r.code !== 0) throw new VideoEncodeError(`ffmpeg exited with ${r.code ?? r.signal}`, r.stderr);
      return { data: await readFile(out), width: w, height: h, frames: frames.length };
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  }

  /** Run ffmpeg with `args`, writing `input` chunks to its stdin (with back-pressure). */
  private async run(
    args: string[],
    input: readonly Uint8Array[] | undefined,
    timeoutMs: number,
  ): Promise<Run> {
    const child = spawn(this.opts.ffmpegPath, args, {
      stdio: [input ? "pipe" : "ignore", "pipe", "pipe"],
      shell: false,
    });
    const stdout = tailCollector(64 * 1024);
    const stderr = tailCollector(4 * 1024);
    child.stdout?.on("data", (c: Buffer) => stdout.add(c));
    child.stderr?.on("data", (c: Buffer) => stderr.add(c));
    let spawnError: Error | undefined;
    let timedOut = false;
    const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) => {
      child.once("error", (e) => {
        spawnError = e;
        resolve({ code: null, signal: null });
      });
      child.once("close", (code, signal) => resolve({ code, signal }));
    });
    const timer = setTimeout(() => {
      timedOut = true;
      child.kill("SIGKILL");
    }, timeoutMs);
    try {
      if (input && child.stdin) {
        const stdin = child.stdin;
        // a child that died early closes the pipe (EPIPE): its exit status says why
        stdin.on("error", () => {});
        let gone = false;
        void exited.then(() => {
          gone = true;
        });
        for (const chunk of input) {
          if (gone || stdin.destroyed) break;
          // once() rejects on the pipe's error (EPIPE): the exit status below says why
          if (!stdin.write(chunk)) await Promise.race([once(stdin, "drain").catch(() => {}), exited]);
        }
        stdin.end();
      }
      const { code, signal } = await exited;
      return {
        code,
        signal,
        stdout: stdout.text(),
        stderr: stderr.text(),
        ...(spawnError ? { spawnError } : {}),
        timedOut,
      };
    } finally {
      clearTimeout(timer);
    }
  }
}

/** A frame's RGB as width·height·3 bytes (a camera that sends JPEG/PNG is decoded). */
async function rawRgb(f: Frame): Promise<Uint8Array> {
  if (f.rgb.kind === "raw") return f.rgb.data;
  const { data } = await sharp(f.rgb.data).removeAlpha().raw().toBuffer({ resolveWithObject: true });
  return data;
}

/**
 * The frame rate of a capture every `everyTicks` control periods, as an exact ratio: periods are
 * taken in whole microseconds (1 ms → 1000 µs), so 40 ticks of 1 ms is 1000000/40000 = 25 fps.
 */
export function captureRate(everyTicks: number, controlPeriodS: number): Rate {
  const periodUs = Math.max(1, Math.round(controlPeriodS * 1e6));
  const num = 1_000_000;
  const den = everyTicks * periodUs;
  const g = gcd(num, den);
  return { num: num / g, den: den / g };
}

function gcd(a: number, b: number): number {
  while (b) [a, b] = [b, a % b];
  return a;
}
