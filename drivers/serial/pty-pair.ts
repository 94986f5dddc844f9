/**
 * A pair of connected pseudo-terminals made by `socat` (Debian package socat), for loopback
 * tests and benches: what is written to one end is read from the other, through the kernel's
 * tty layer like a real serial port.
 */
import { spawn } from "node:child_process";
import { createInterface } from "node:readline";

export interface PtyPair {
  /** the two pty device paths */
  readonly a: string;
  readonly b: string;
  /** socat's process id (benches read its scheduling figures) */
  readonly pid: number | undefined;
  /** end socat (both ends see the port close) */
  kill(): Promise<void>;
}

export async function openPtyPair(timeoutMs = 5000): Promise<PtyPair> {
  const child = spawn("socat", ["-d", "-d", "pty,raw,echo=0", "pty,raw,echo=0"], {
    stdio: ["ignore", "ignore", "pipe"],
  });
  const exited = new Promise<void>((resolve) => child.once("exit", () => resolve()));
  const paths: string[] = [];
  await new Promise<void>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error("socat did not report two ptys")), timeoutMs);
    child.once("error", (e) => {
      clearTimeout(timer);
      reject(new Error(`cannot run socat: ${e.message}`));
    });
    createInterface({ input: child.stderr }).on("line", (line) => {
      const m = /PTY is (\S+)/.exec(line);
      if (m?.[1]) paths.push(m[1]);
      if (/starting data transfer loop/.test(line)) {
        clearTimeout(timer);
        resolve();
      }
    });
  });
  const [a, b] = paths;
  if (!a || !b) throw new Error("socat reported fewer than two ptys");
  return {
    a,
    b,
    pid: child.pid,
    kill: async () => {
      if (child.exitCode === null && child.signalCode === null) child.kill("SIGTERM");
      await exited;
    },
  };
}
