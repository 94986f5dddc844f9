/**
 * The records directory as a precondition: `serve` refuses to start and the gateway refuses a new
 * episode while it cannot be written, and a storage error during an episode ends it as a fault.
 */
import { closeSync, fsyncSync, mkdirSync, openSync, unlinkSync, writeSync } from "node:fs";
import { mkdir, open, unlink } from "node:fs/promises";
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

/**
 * The same probe off the event loop (the libuv threadpool does the fsync): the check before every
 * episode start. The synchronous one blocked the gateway's main loop for the whole fsync (10–20 ms
 * on a busy disk, more on a slow one) while the previous episode's motion could still be running
 * and a stop event (contact, e-stop, fault) had to wait behind it.
 */
export async function checkRecordsDirAsync(dir: string): Promise<void> {
  const probe = join(dir, `.write-probe-${process.pid}`);
  let fh: Awaited<ReturnType<typeof open>> | undefined;
  try {
    await mkdir(dir, { recursive: true, mode: RECORD_DIR_MODE });
    fh = await open(probe, "wx", RECORD_FILE_MODE);
    await fh.write("x");
    await fh.sync();
  } catch (e) {
    throw storageError(dir, e);
  } finally {
    if (fh !== undefined) {
      await fh.close();
      await unlink(probe).catch(() => {
        // a read-only remount after the open: nothing to clean up that we could
      });
    }
  }
}
