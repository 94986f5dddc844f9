/**
 * Bounds on free-form JSON. A body is parsed by fastify before any schema sees it; a value that
 * nests thousands of levels deep passes `z.unknown()` and later overflows the stack of whatever
 * walks it recursively (JSON.stringify in the recorder, String() in an error message). The walk
 * here is iterative, so it cannot overflow itself.
 */
import { z } from "zod";

/** Deepest nesting the request bodies of the API accept (no field needs more than a few). */
export const MAX_BODY_DEPTH = 32;

/**
 * The JSON-pointer-like path of the first value nested deeper than `maxDepth` (the body itself
 * is depth 0; `{"a":[1]}` has depth 2), or undefined when the value stays within it.
 */
export function tooDeepAt(value: unknown, maxDepth: number): string | undefined {
  const stack: [unknown, number, string][] = [[value, 0, ""]];
  while (stack.length) {
    const [v, depth, path] = stack.pop()!;
    if (v === null || typeof v !== "object") continue;
    if (depth >= maxDepth) return path || "/";
    const entries = Array.isArray(v) ? v.entries() : Object.entries(v as Record<string, unknown>);
    for (const [k, child] of entries) {
      if (child !== null && typeof child === "object") stack.push([child, depth + 1, `${path}/${k}`]);
    }
  }
  return undefined;
}

/** A free-form JSON field with bounded depth and serialised size. */
export function boundedJson(opts: { maxDepth: number; maxBytes: number }) {
  return z
    .unknown()
    .superRefine((v, ctx) => {
      const at = tooDeepAt(v, opts.maxDepth);
      if (at !== undefined) {
        ctx.addIssue({ code: "custom", message: `nests deeper than ${opts.maxDepth} levels (at ${at})` });
        return;
      }
      const bytes = Buffer.byteLength(JSON.stringify(v) ?? "");
      if (bytes > opts.maxBytes) {
        ctx.addIssue({ code: "custom", message: `is ${bytes} bytes of JSON; at most ${opts.maxBytes}` });
      }
    })
    .describe(`free-form JSON: at most ${opts.maxDepth} levels deep and ${opts.maxBytes} bytes`);
}
