/**
 * The buzz-box firmware running in simavr, for loopback integration tests and benches.
 * Builds the firmware (avr-gcc) and the runner (libsimavr) with `make` when needed, spawns the
 * runner, and exposes the board's serial port (a pty, plus a stable symlink to it) and its pins.
 * Needs the Debian packages gcc-avr, avr-libc, libsimavr-dev, libelf-dev.
 */
import { execFileSync, spawn } from "node:child_process";
import { existsSync } from "node:fs";
import { dirname, join } from "node:path";
import { createInterface } from "node:readline";
import { fileURLToPath } from "node:url";

const here = dirname(fileURLToPath(import.meta.url));
const repo = join(here, "..", "..", "..");
export const FIRMWARE_DIR = join(repo, "drivers", "firmware", "buzzbox");
export const FIRMWARE_ELF = join(FIRMWARE_DIR, "build", "buzzbox.elf");
export const RUNNER = join(here, "build", "buzzbox-rig");

export type RigPin = "lamp" | "buzzer";
export type PinListener = (pin: RigPin, level: 0 | 1, boardUs: number) => void;

export interface SimavrRig {
  /** the board's serial port (pty slave) */
  readonly ptyPath: string;
  /** stable symlink to the pty (survives a restart of the rig with the same link) */
  readonly linkPath: string | undefined;
  /** close (true: pin pulled low) or open the contact */
  setContact(closed: boolean): void;
  /** close the contact for `us` board microseconds, then open it */
  glitch(us: number): void;
  /** lamp/buzzer pin changes, with board time */
  onPin(listener: PinListener): () => void;
  /** resolves when the runner exits */
  readonly exited: Promise<void>;
  /** SIGKILL the runner (like pulling the USB cable) and wait for it to exit */
  kill(): Promise<void>;
}

/** Build firmware and runner if needed (`make` is a no-op when up to date). */
export function buildSimavrRig(): { elf: string; runner: string } {
  execFileSync("make", ["-s", "-C", FIRMWARE_DIR], { stdio: "pipe" });
  execFileSync("make", ["-s", "-C", here], { stdio: "pipe" });
  if (!existsSync(FIRMWARE_ELF) || !existsSync(RUNNER))
    throw new Error("simavr rig build produced no binaries");
  return { elf: FIRMWARE_ELF, runner: RUNNER };
}

export interface StartOptions {
  /** create this symlink to the pty (use a path under os.tmpdir()) */
  linkPath?: string;
  /** firmware to run (default: the buzz-box firmware, built on demand) */
  elf?: string;
  /** how long to wait for the runner to come up, ms */
  startTimeoutMs?: number;
}

/** Build if needed, start the runner, resolve once the firmware runs and the pty exists. */
export async function startSimavrRig(opts: StartOptions = {}): Promise<SimavrRig> {
  const { elf, runner } = opts.elf ? { elf: opts.elf, runner: RUNNER } : buildSimavrRig();
  const args = [...(opts.linkPath ? ["--link", opts.linkPath] : []), elf];
  const child = spawn(runner, args, { stdio: ["pipe", "pipe", "pipe"] });
  const pins = new Set<PinListener>();
  let ptyPath: string | undefined;
  let stderr = "";
  child.stderr.on("data", (d: Buffer) => {
    stderr += d.toString();
  });
  const exited = new Promise<void>((resolve) => child.once("exit", () => resolve()));
  const ready = new Promise<void>((resolve, reject) => {
    const timer = setTimeout(
      () => reject(new Error(`simavr rig did not start: ${stderr}`)),
      opts.startTimeoutMs ?? 10_000,
    );
    void exited.then(() => {
      clearTimeout(timer);
      reject(new Error(`simavr rig exited during start: ${stderr}`));
    });
    createInterface({ input: child.stdout }).on("line", (line) => {
      const f = line.split(" ");
      if (f[0] !== "RIG") return;
      if (f[1] === "pty") ptyPath = f[2];
      else if (f[1] === "ready") {
        clearTimeout(timer);
        resolve();
      } else if (f[1] === "pin" && (f[2] === "lamp" || f[2] === "buzzer")) {
        const level = f[3] === "1" ? 1 : 0;
        const t = Number(f[4]);
        for (const l of pins) l(f[2], level, t);
      }
    });
  });
  await ready;
  if (!ptyPath) throw new Error("simavr rig reported no pty");
  const send = (cmd: string) => {
    if (child.stdin.writable) child.stdin.write(cmd + "\n");
  };
  return {
    ptyPath,
    linkPath: opts.linkPath,
    setContact: (closed) => send(`contact ${closed ? 1 : 0}`),
    glitch: (us) => send(`glitch ${Math.round(us)}`),
    onPin: (l) => {
      pins.add(l);
      return () => pins.delete(l);
    },
    exited,
    kill: async () => {
      if (child.exitCode === null && child.signalCode === null) child.kill("SIGKILL");
      await exited;
    },
  };
}
