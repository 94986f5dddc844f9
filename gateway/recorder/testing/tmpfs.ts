/**
 * Test support: a size-limited tmpfs mounted on a fresh folder, remountable read-only, so storage
 * failures are real ENOSPC / EROFS from the kernel. Needs CAP_SYS_ADMIN (root): `chmod` cannot
 * stand in, as root ignores permission bits.
 */
import { execFileSync } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

export interface Tmpfs {
  path: string;
  readOnly(ro: boolean): void;
  unmount(): void;
}

export function mountTmpfs(sizeBytes: number): Tmpfs {
  const path = mkdtempSync(join(tmpdir(), "rg-tmpfs-"));
  try {
    execFileSync("mount", ["-t", "tmpfs", "-o", `size=${sizeBytes},mode=0700`, "tmpfs", path], {
      stdio: "pipe",
    });
  } catch (e) {
    rmSync(path, { recursive: true, force: true });
    const msg = (e as { stderr?: Buffer }).stderr?.toString().trim() ?? String(e);
    throw new Error(`the storage tests mount a tmpfs and need root (CAP_SYS_ADMIN): ${msg}`);
  }
  return {
    path,
    readOnly(ro) {
      execFileSync("mount", ["-o", `remount,${ro ? "ro" : "rw"}`, path], { stdio: "pipe" });
    },
    unmount() {
      execFileSync("umount", ["-l", path], { stdio: "pipe" });
      rmSync(path, { recursive: true, force: true });
    },
  };
}
