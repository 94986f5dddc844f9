/**
 * The records directory as a precondition: `serve` refuses to start and the gateway refuses a new
 * episode while it cannot be written, and a storage error during an episode ends it as a fault.
 */
import { closeSync, fsyncSync, mkdirSync, openSync, unlinkSync, writeSync } from "node:fs";
import { join } from "node:path";
import type { GatewayError } from "../errors.ts";
import type { Episode } from "../episode/episode.ts";
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
 * A recorder's storage error ends its episode as a fault: motion stops at once, the end detail
 * starts with the code (the operator API and result.json show it), and the next agent call is
 * refused with RB_ERR_EPISODE_ENDED (reason `fault`).
 *
 * Interim wiring (compose/compose.ts passes it as the recorder's `onError`): when the episode's
 * one stop path lands, this becomes `ctx.fault({ source: "storage", code: "RB_ERR_STORAGE", … })`.
 */
export function endOnStorageError(err: GatewayError, ep: Episode | undefined): void {
  if (!ep || ep.isEnded) return;
  const detail = `${err.code}: ${err.message}`;
  ep.stopMotion(detail).catch(() => {
    // the backend's own stop failure surfaces through its fault events
  });
  ep.end("fault", detail);
}
