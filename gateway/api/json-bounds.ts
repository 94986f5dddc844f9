/**
 * Bounds on free-form JSON. A body is parsed by fastify before any schema sees it; a value that
 * nests thousands of levels deep passes `z.unknown()` and later overflows the stack of whatever
 * walks it recursively (JSON.stringify in the recorder, String() in an error message). The walk
 * here is iterative, so it cannot overflow itself.
 */
import { z } from "zod";

/** Deepest nesting the request bodies of the API accept (no field needs more than a few). */
export const MAX_BODY_DEPTH = 32;

/** A key on the way down to a value: its path is only spelled out for the value refused. */
interface PathLink {
  key: string | number;
  up: PathLink | undefined;
}
const pathOf = (link: PathLink | undefined): string => {
  let path = "";
  for (let l = link; l; l = l.up) path = `/${l.key}${path}`;
  return path || "/";
};

/**
 * The JSON-pointer-like path of the first value nested deeper than `maxDepth` (the body itself
 * is depth 0; `{"a":[1]}` has depth 2), or undefined when the value stays within it. It runs on
 * every request body (an act of 300 rows among them) in the turn that parsed it: no string is
 * built on the way, no iterator, only a link per nested object or array.
 */
export function tooDeepAt(value: unknown, maxDepth: number): string | undefined {
  const values: unknown[] = [value];
  const depths: number[] = [0];
  const links: (PathLink | undefined)[] = [undefined];
  while (values.length) {
    const v = values.pop();
    const depth = depths.pop()!;
    const link = links.pop();
    if (v === null || typeof v !== "object") continue;
    if (depth >= maxDepth) return pathOf(link);
    if (Array.isArray(v)) {
      for (let i = 0; i < v.length; i++) {
        const child: unknown = v[i];
        if (child === null || typeof child !== "object") continue;
        values.push(child);
        depths.push(depth + 1);
        links.push({ key: i, up: link });
      }
      continue;
    }
    for (const k in v) {
      if (!Object.hasOwn(v, k)) continue;
      const child: unknown = (v as Record<string, unknown>)[k];
      if (child === null || typeof child !== "object") continue;
      values.push(child);
      depths.push(depth + 1);
      links.push({ key: k, up: link });
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
