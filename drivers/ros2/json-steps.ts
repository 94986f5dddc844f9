/**
 * `JSON.stringify(value)` as steps (seam/steps.ts): the same text, character for character, made
 * with pause points so that a large message (a FollowJointTrajectory goal of a 3 s chunk is ~160 KB
 * of JSON, ~1.2 ms of JSON.stringify) can be serialised over several turns of the event loop.
 *
 * The text is JSON.stringify's by construction (ECMA-262 SerializeJSONProperty, no replacer, no
 * indent): a primitive, and a plain array or object of at most LEAF_VALUES values counted through
 * its nesting (a trajectory point), is serialised by JSON.stringify itself; only the larger
 * containers above those leaves are walked here, with the standard's rules (own enumerable string
 * keys in order, a property whose value serialises to nothing is left out, an array element that
 * does is `null`, a cycle is a TypeError). A value whose text depends on its key or on more than
 * its own properties (a `toJSON` method, a boxed primitive, a function, a BigInt, an object with
 * another prototype than Object's or Array's) is handed to JSON.stringify under its own key.
 * Pause points: after each element or property of a walked container that is an object (for a
 * trajectory goal: after each point), after every LEAF_VALUES others, and before the text is
 * flattened.
 *
 * The value must not change while its steps run.
 */
import type { Steps } from "../../seam/steps.ts";

/** a plain container of at most this many values (counted through its nesting) is one leaf */
export const LEAF_VALUES = 64;

/**
 * JSON.stringify(value), as steps; undefined where JSON.stringify returns undefined.
 * `leafValues`: LEAF_VALUES (tests: 0 walks every container that holds a value)
 */
export function* stringifySteps(value: unknown, leafValues = LEAF_VALUES): Steps<string | undefined> {
  if (!walked(value, leafValues)) return leaf("", value);
  const text = yield* container(value, [], leafValues);
  yield;
  // V8 keeps a string built by concatenation as a rope; reading a character flattens it (a copy:
  // ~0.2 ms for 160 KB), here in a step of its own instead of in the turn that sends the text
  text.charCodeAt(0);
  return text;
}

type Container = Record<string, unknown> | unknown[];

/** a plain array or object of more than `max` values: walked here */
function walked(v: unknown, max: number): v is Container {
  return typeof v === "object" && v !== null && plain(v) && count(v, 0, max) > max;
}

/** `n` plus the values in `v` and below, counted until the count passes `max` (a cycle counts past it too) */
function count(v: object, n: number, max: number): number {
  if (Array.isArray(v)) {
    for (let i = 0; i < v.length && n <= max; i++) {
      const e: unknown = v[i];
      n = typeof e === "object" && e !== null ? count(e, n + 1, max) : n + 1;
    }
    return n;
  }
  for (const k in v) {
    if (n > max) break;
    if (!Object.hasOwn(v, k)) continue;
    const e: unknown = (v as Record<string, unknown>)[k];
    n = typeof e === "object" && e !== null ? count(e, n + 1, max) : n + 1;
  }
  return n;
}

/** serialised by its own properties alone: JSON.stringify(v) is its text under any key */
function plain(v: object): boolean {
  if (typeof (v as { toJSON?: unknown }).toJSON === "function") return false;
  const proto: unknown = Object.getPrototypeOf(v);
  return Array.isArray(v) ? proto === Array.prototype : proto === Object.prototype || proto === null;
}

/** the text of a value that is not walked (undefined: the property is left out) */
function leaf(key: string, v: unknown): string | undefined {
  const t = typeof v;
  if (
    t === "string" ||
    t === "number" ||
    t === "boolean" ||
    v === null ||
    v === undefined ||
    t === "symbol"
  ) {
    return JSON.stringify(v);
  }
  if (t === "object" && plain(v as object)) return JSON.stringify(v);
  // toJSON(key), boxed primitives, functions, BigInt: JSON.stringify applies them under this key
  const quoted = JSON.stringify(key);
  const s = JSON.stringify({ [key]: v });
  return s === "{}" ? undefined : s.slice(quoted.length + 2, -1);
}

function* container(v: Container, stack: object[], max: number): Steps<string> {
  if (stack.includes(v)) throw new TypeError("Converting circular structure to JSON");
  stack.push(v);
  let out: string;
  let since = 0;
  if (Array.isArray(v)) {
    out = "[";
    for (let i = 0; i < v.length; i++) {
      const e: unknown = v[i];
      const s = walked(e, max) ? yield* container(e, stack, max) : leaf(String(i), e);
      out += (i > 0 ? "," : "") + (s ?? "null");
      if ((typeof e === "object" && e !== null) || ++since >= max) {
        since = 0;
        yield;
      }
    }
    out += "]";
  } else {
    out = "{";
    let first = true;
    for (const k of Object.keys(v)) {
      const e = v[k];
      const s = walked(e, max) ? yield* container(e, stack, max) : leaf(k, e);
      if (s !== undefined) {
        out += `${first ? "" : ","}${JSON.stringify(k)}:${s}`;
        first = false;
      }
      if ((typeof e === "object" && e !== null) || ++since >= max) {
        since = 0;
        yield;
      }
    }
    out += "}";
  }
  stack.pop();
  return out;
}
