/**
 * The agent sandbox of `robot-gateway run` (bubblewrap, Debian package `bubblewrap`).
 *
 * What the agent's processes see:
 * - the system read-only: /usr (with the merged-/usr links /bin, /lib, /lib64, /sbin) and a few
 *   files of /etc (hosts, passwd, group, ld.so.cache, ssl certificates, alternatives), a fresh
 *   /proc, a minimal /dev, an empty /tmp;
 * - its agent folder read-only at the same absolute path as on the host (`--agent-dir`, default
 *   the folder of the first file named in the agent command), so `python3 my/agent.py` resolves
 *   as it does outside;
 * - its working directory: the host's working directory path, an empty tmpfs (with the agent
 *   folder inside it when it lies there), so relative paths in the command keep working;
 * - its workspace (`$ROBOT_GATEWAY_WORKSPACE`, also `$HOME`) at /workspace: an empty host folder
 *   per trial (trials/<n>/workspace), writable, kept after the trial;
 * - the network: a private network namespace with only loopback; the gateway's port on
 *   127.0.0.1 inside is bridged to the gateway by a forwarder (node, inside) → a unix socket
 *   (bound in) → the gateway's TCP port (outside). No other host port, no other address.
 * - the environment: ROBOT_GATEWAY_URL, ROBOT_GATEWAY_TOKEN, ROBOT_GATEWAY_TRIAL,
 *   ROBOT_GATEWAY_WORKSPACE, PATH, HOME, LANG — nothing else of the run's environment.
 * - its own user, pid, ipc, uts and cgroup namespaces; it runs as uid/gid 1000 inside; it dies
 *   with the run.
 * Nothing else is mounted: the records (with the hidden task instance), bench and calibration
 * files, runs and the repository do not exist inside.
 *
 * Where bubblewrap is missing or cannot create namespaces, `run` refuses (RB_ERR_SANDBOX_UNAVAILABLE);
 * `--no-sandbox` is the explicit, logged opt-out.
 */
import { type ChildProcess, spawn, spawnSync } from "node:child_process";
import { existsSync, lstatSync, mkdirSync, mkdtempSync, readlinkSync, rmSync, statSync } from "node:fs";
import { createConnection, createServer, type Server, type Socket } from "node:net";
import { tmpdir } from "node:os";
import { dirname, isAbsolute, join, relative, resolve } from "node:path";
import { CodedError } from "../seam/errors.ts";
import { onCpus } from "./scheduling.ts";

export const BWRAP = "bwrap";

/** Where the unix socket to the gateway is bound inside the sandbox. */
const SOCKET_DIR_INSIDE = "/run/robot-gateway";
const SOCKET_NAME = "gateway.sock";
export const WORKSPACE_INSIDE = "/workspace";
const UID_INSIDE = 1000;

/** /etc entries a python or node program needs; everything else of /etc stays outside. */
const ETC_FILES = [
  "/etc/hosts",
  "/etc/passwd",
  "/etc/group",
  "/etc/nsswitch.conf",
  "/etc/ld.so.cache",
  "/etc/ld.so.conf",
  "/etc/ld.so.conf.d",
  "/etc/ssl",
  "/etc/ca-certificates",
  "/etc/alternatives",
  "/etc/localtime",
];

/**
 * The forwarder that runs inside the sandbox before the agent: TCP 127.0.0.1:<port> → the unix
 * socket, then the agent command under /bin/sh; exits with the agent's exit code.
 */
const LAUNCHER = `
const net = require("node:net"), cp = require("node:child_process");
const [port, sock, cmd] = process.argv.slice(1);
const srv = net.createServer((c) => {
  const u = net.connect(sock);
  c.pipe(u); u.pipe(c);
  c.on("error", () => u.destroy()); u.on("error", () => c.destroy());
});
srv.listen(Number(port), "127.0.0.1", () => {
  const ch = cp.spawn("/bin/sh", ["-c", cmd], { stdio: "inherit" });
  for (const s of ["SIGTERM", "SIGINT", "SIGHUP"]) process.on(s, () => ch.kill(s));
  ch.on("exit", (code, sig) => process.exit(code ?? 128 + (sig === "SIGKILL" ? 9 : 15)));
});
srv.on("error", (e) => { console.error("sandbox: forwarder: " + e.message); process.exit(125); });
`;

/** Is bubblewrap here and able to make its namespaces? Throws RB_ERR_SANDBOX_UNAVAILABLE. */
export function assertSandboxAvailable(): void {
  const r = spawnSync(BWRAP, [...namespaceArgs(), ...systemArgs(), "--", "/bin/true"], {
    stdio: ["ignore", "ignore", "pipe"],
    timeout: 10_000,
  });
  if (r.error || r.status !== 0) {
    const why = r.error
      ? (r.error as NodeJS.ErrnoException).code === "ENOENT"
        ? "bwrap is not installed (Debian: apt-get install bubblewrap)"
        : r.error.message
      : r.stderr.toString().trim() || `bwrap exited with ${r.status}`;
    throw new CodedError("RB_ERR_SANDBOX_UNAVAILABLE", { reason: why });
  }
}

/** Split a shell command into words (quotes respected; enough to find the file it names). */
function words(command: string): string[] {
  const out: string[] = [];
  const re = /"((?:[^"\\]|\\.)*)"|'([^']*)'|(\S+)/g;
  for (let m = re.exec(command); m; m = re.exec(command)) out.push(m[1] ?? m[2] ?? m[3] ?? "");
  return out;
}

/**
 * The default agent folder: the folder of the command's first argument that names an existing
 * file (relative to `cwd`), e.g. `my` for `python3 my/agent.py` or `.venv/bin/python my/agent.py`;
 * else the program's own folder when it is given as a path (`./agent.sh`); undefined otherwise.
 */
export function defaultAgentDir(command: string, cwd: string): string | undefined {
  const isFile = (w: string): string | undefined => {
    const p = resolve(cwd, w);
    try {
      return statSync(p).isFile() ? dirname(p) : undefined;
    } catch {
      return undefined; // not a file: an option value, a module name, …
    }
  };
  const [program, ...args] = words(command);
  for (const w of args) {
    if (w.startsWith("-")) continue;
    const d = isFile(w);
    if (d) return d;
  }
  return program?.includes("/") ? isFile(program) : undefined;
}

/** A unix socket in a private folder that forwards every connection to the gateway's `host:port`. */
export async function gatewayBridge(
  host: string,
  port: number,
): Promise<{ socketDir: string; close(): Promise<void> }> {
  const socketDir = mkdtempSync(join(tmpdir(), "rg-sandbox-"));
  const conns = new Set<Socket>();
  const server: Server = createServer((c) => {
    const u = createConnection({ host: host.replace(/^\[|\]$/g, ""), port });
    conns.add(c).add(u);
    c.pipe(u);
    u.pipe(c);
    const drop = () => {
      c.destroy();
      u.destroy();
      conns.delete(c);
      conns.delete(u);
    };
    c.on("error", drop).on("close", drop);
    u.on("error", drop).on("close", drop);
  });
  await new Promise<void>((res, rej) => {
    server.once("error", rej);
    server.listen(join(socketDir, SOCKET_NAME), () => res());
  });
  return {
    socketDir,
    async close() {
      for (const c of conns) c.destroy();
      await new Promise<void>((res) => server.close(() => res()));
      rmSync(socketDir, { recursive: true, force: true });
    },
  };
}

export interface SandboxSpec {
  /** the agent command, run with /bin/sh -c inside */
  command: string;
  /** host working directory whose path becomes the agent's (empty) working directory */
  cwd: string;
  /** host folder bound read-only at its own path (the agent's program files) */
  agentDir?: string;
  /** more host folders bound read-only at their own paths (a venv, a client library) */
  readOnly?: readonly string[];
  /** host folder bound writable at /workspace */
  workspace: string;
  /** the unix socket folder of gatewayBridge() */
  socketDir: string;
  /** the gateway's TCP port on 127.0.0.1, reproduced inside */
  gatewayPort: number;
  /** CPUs the sandbox runs on (cli/scheduling.ts onCpus; absent: the caller's) */
  cpus?: readonly number[];
  /** environment of the agent (ROBOT_GATEWAY_* variables) */
  env: Record<string, string>;
  /** stdout/stderr of the agent */
  stdio: ["ignore", number, number];
}

/** Own namespaces of every kind (network: loopback only), an unprivileged uid, death with the run. */
function namespaceArgs(): string[] {
  return [
    "--unshare-all",
    "--unshare-user",
    "--die-with-parent",
    "--uid",
    String(UID_INSIDE),
    "--gid",
    String(UID_INSIDE),
  ];
}

/** The read-only system: /usr, the merged-/usr links, a few /etc files, /proc, /dev, /tmp. */
function systemArgs(): string[] {
  const a: string[] = ["--ro-bind", "/usr", "/usr"];
  for (const l of ["bin", "lib", "lib64", "sbin"]) {
    // merged /usr (Debian ≥ 12): links; otherwise the real folders, read-only
    if (existsSync(`/${l}`)) {
      if (lstatSync(`/${l}`).isSymbolicLink()) a.push("--symlink", readlinkSync(`/${l}`), `/${l}`);
      else a.push("--ro-bind", `/${l}`, `/${l}`);
    }
  }
  for (const f of ETC_FILES) a.push("--ro-bind-try", f, f);
  // node outside /usr (nvm, /opt): its folder, read-only, for the forwarder
  const nodeDir = dirname(process.execPath);
  if (!nodeDir.startsWith("/usr/")) a.push("--ro-bind", nodeDir, nodeDir);
  a.push("--proc", "/proc", "--dev", "/dev", "--tmpfs", "/tmp");
  return a;
}

/** The bwrap argument list for a spec (exported for tests and the bench). */
export function bwrapArgs(s: SandboxSpec): string[] {
  const a: string[] = [...namespaceArgs(), ...systemArgs()];
  // the working directory path: an empty tmpfs (never the host folder itself)
  const cwd = resolve(s.cwd);
  if (cwd !== "/") a.push("--tmpfs", cwd);
  for (const dir of [...(s.agentDir ? [s.agentDir] : []), ...(s.readOnly ?? [])]) {
    const d = resolve(dir);
    a.push("--ro-bind", d, d);
  }
  a.push("--bind", resolve(s.workspace), WORKSPACE_INSIDE);
  a.push("--ro-bind", s.socketDir, SOCKET_DIR_INSIDE);
  a.push("--chdir", cwd);
  a.push("--clearenv");
  const env: Record<string, string> = {
    PATH: "/usr/local/bin:/usr/bin:/bin",
    HOME: WORKSPACE_INSIDE,
    LANG: "C.UTF-8",
    ...s.env,
    ROBOT_GATEWAY_WORKSPACE: WORKSPACE_INSIDE,
  };
  for (const [k, v] of Object.entries(env)) a.push("--setenv", k, v);
  a.push(
    "--",
    process.execPath,
    "-e",
    LAUNCHER,
    String(s.gatewayPort),
    `${SOCKET_DIR_INSIDE}/${SOCKET_NAME}`,
    s.command,
  );
  return a;
}

/** Start the agent command in the sandbox (its own process group, like the unsandboxed agent). */
export function spawnSandboxed(s: SandboxSpec): ChildProcess {
  mkdirSync(s.workspace, { recursive: true, mode: 0o700 });
  const argv = onCpus(s.cpus, [BWRAP, ...bwrapArgs(s)]);
  return spawn(argv[0]!, argv.slice(1), { detached: true, stdio: s.stdio });
}

/** Is `p` inside `dir` (or equal)? */
export function isInside(p: string, dir: string): boolean {
  const rel = relative(resolve(dir), resolve(p));
  return rel === "" || (!rel.startsWith("..") && !isAbsolute(rel));
}

/** Refuse an agent folder that would hand the agent what it must not read. */
export function checkAgentDir(agentDir: string, forbidden: readonly string[]): void {
  if (!existsSync(agentDir) || !statSync(agentDir).isDirectory()) {
    throw new CodedError("RB_ERR_SANDBOX_UNAVAILABLE", { reason: `--agent-dir ${agentDir} is not a folder` });
  }
  for (const f of forbidden) {
    if (isInside(f, agentDir)) {
      throw new CodedError("RB_ERR_SANDBOX_UNAVAILABLE", {
        reason: `the agent folder ${agentDir} contains ${f}, which the agent may not read; move the agent's files to their own folder or pass --agent-dir`,
      });
    }
  }
}
