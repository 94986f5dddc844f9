import { describe, expect, it } from "vitest";
import { MirrorBackend } from "./mirror-backend.ts";
import { FR3 } from "../../robots/franka/models.ts";
import { assertMotionArgs, LifecycleError } from "../../seam/types.ts";

describe("seam argument checks", () => {
  it("refuses non-finite or negative holds and fractional capture strides", () => {
    expect(() => assertMotionArgs("hold", {}, Number.POSITIVE_INFINITY)).toThrow(RangeError);
    expect(() => assertMotionArgs("hold", {}, -1)).toThrow(/≥ 0/);
    expect(() => assertMotionArgs("hold", {}, Number.NaN)).toThrow(RangeError);
    expect(() =>
      assertMotionArgs("execute", { capture: { everyTicks: 0.5, cameras: [], depth: false } }),
    ).toThrow(/everyTicks/);
    expect(() =>
      assertMotionArgs("hold", { capture: { everyTicks: 3, cameras: [], depth: false } }, 0),
    ).not.toThrow();
  });

  it("a backend applies them and the lifecycle before moving", async () => {
    const b = new MirrorBackend({ robot: FR3 });
    await expect(b.hold(1)).rejects.toBeInstanceOf(LifecycleError);
    await b.configure();
    await b.activate();
    await expect(b.hold(-1)).rejects.toBeInstanceOf(RangeError);
    expect(b.now()).toBe(0);
  });
});

describe("sim powers are a separate capability", () => {
  it("the mirror has none; an object with all three is recognised, with two of them not", async () => {
    const { hasSimPowers } = await import("../../seam/types.ts");
    const b = new MirrorBackend({ robot: FR3 });
    expect(hasSimPowers(b)).toBe(false);
    const powers = { snapshot: () => new Uint8Array(), restore: () => {}, privilegedState: () => ({}) };
    expect(hasSimPowers(Object.assign(Object.create(b), powers))).toBe(true);
    const { restore: _r, ...two } = powers;
    expect(hasSimPowers(Object.assign(Object.create(b), two))).toBe(false);
  });
});
