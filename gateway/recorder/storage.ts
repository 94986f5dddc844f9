/**
 * The records directory as a precondition: `serve` refuses to start and the gateway refuses a new
 * episode while it cannot be written, and a storage error during an episode ends it as a fault.
 */
import { closeSync, fsyncSync, mkdirSync, openSync, unlinkSync, writeSync } from "node:fs";
import { join } from "node:path";
import { RECORD_DIR_MODE, RECORD_FILE_MODE, storageError } from "./mcap-recorder.ts";

/**
 * Prove that `dir` takes a write: create it (0700) if missing, write one byte to a probe file,
 * fsync, delete. Access bits alone prove nothing (root ignores them; a full disk has them), so
 * the probe really writes. Throws RB_ERR_STORAGE.
 */
export function checkRecordsDir(dir: string): void {
  const probe = join(dir, `.write-probe-${process.pid}`);
  let fd: number | undefined;
  try {
    mkdirSync(dir, { recursive: true, mode: RECORD_DIR_MODE });
    fd = openSync(probe, "wx", RECORD_FILE_MODE);
    writeSync(fd, "x");
    fsyncSync(fd);
  } catch (e) {
    throw storageError(dir, e);
  } finally {
    if (fd !== undefined) {
      closeSync(fd);
      try {
        unlinkSync(probe);
      } catch {
        // a read-only remount after the open: nothing to clean up that we could
      }
    }
  }
}
