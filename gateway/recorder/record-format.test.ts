import { describe, expect, it } from "vitest";
import {
  decodeJointBatch,
  f64ToBase64,
  jointBatchJsonBytes,
  type JointBatchMessage,
} from "./record-format.ts";

/** the message the recorder wrote before (and still writes on a big-endian machine) */
function message(
  b: {
    n: number;
    t: Float64Array;
    q: Float64Array;
    dq: Float64Array;
    tau?: Float64Array;
    gripper: Float64Array;
  },
  dof: number,
): JointBatchMessage {
  const nd = b.n * dof;
  return {
    encoding: "f64le-base64",
    n: b.n,
    dof,
    t_first: b.t[0]!,
    t_last: b.t[b.n - 1]!,
    t: f64ToBase64(b.t, b.n),
    q: f64ToBase64(b.q, nd),
    dq: f64ToBase64(b.dq, nd),
    ...(b.tau ? { tau: f64ToBase64(b.tau, nd) } : {}),
    gripper_width_m: f64ToBase64(b.gripper, b.n),
  };
}

describe("jointBatchJsonBytes", () => {
  it("writes the very bytes of JSON.stringify of the batch message, for any row count, with and without torques", () => {
    let seed = 7;
    const rnd = () => {
      seed = (seed * 1103515245 + 12345) % 2 ** 31;
      return seed / 2 ** 31;
    };
    const dof = 7;
    const scratch = new Uint8Array(64); // too small: a buffer of its own is made
    for (let n = 1; n <= 25; n++) {
      for (const withTau of [false, true]) {
        const cap = n + 3; // arrays longer than the rows, as an open batch's
        const f = (k: number, scale: number) => Float64Array.from({ length: k }, () => (rnd() - 0.5) * scale);
        const t = Float64Array.from({ length: cap }, (_, i) => 12.345 + i * 0.001 + rnd() * 1e-9);
        const b = {
          n,
          t,
          q: f(cap * dof, 6),
          dq: f(cap * dof, 2),
          gripper: f(cap, 0.08),
          ...(withTau ? { tau: f(cap * dof, 80) } : {}),
        };
        const bytes = jointBatchJsonBytes(b, dof, n % 2 ? scratch : new Uint8Array(16384));
        expect(bytes).not.toBeNull();
        const text = new TextDecoder().decode(bytes!);
        expect(text).toBe(JSON.stringify(message(b, dof)));
        const back = decodeJointBatch(JSON.parse(text) as JointBatchMessage);
        expect(Array.from(back.q)).toEqual(Array.from(b.q.subarray(0, n * dof)));
      }
    }
  });

  it("leaves a non-finite time to the message (JSON writes it as null)", () => {
    const b = {
      n: 1,
      t: Float64Array.of(Number.NaN),
      q: new Float64Array(7),
      dq: new Float64Array(7),
      gripper: new Float64Array(1),
    };
    expect(jointBatchJsonBytes(b, 7, new Uint8Array(4096))).toBeNull();
  });
});
