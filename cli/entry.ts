/** Whether a CLI module is the script node was started with (`npx tsx cli/<command>.ts …`). */
import { realpathSync } from "node:fs";
import { fileURLToPath } from "node:url";

/** @param moduleUrl the caller's `import.meta.url` */
export function isEntryPoint(moduleUrl: string): boolean {
  try {
    return !!process.argv[1] && realpathSync(process.argv[1]) === realpathSync(fileURLToPath(moduleUrl));
  } catch {
    return false;
  }
}
