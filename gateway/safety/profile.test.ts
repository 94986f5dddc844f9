import { describe, expect, it } from "vitest";
import { FR3, PANDA } from "../../robots/franka/models.ts";
import { parseSafetyProfile, resolveLimits, SafetyConfigError } from "./profile.ts";

describe("safety profile", () => {
  it("fills defaults and resolves frozen limits from the published ones", () => {
    const p = parseSafetyProfile({});
    const L = resolveLimits(PANDA, p);
    expect(Object.isFrozen(L)).toBe(true);
    expect(Object.isFrozen(L.maxVelocityRadps)).toBe(true);
    expect(L.lowerRad[0]).toBeCloseTo(-2.8973 + 0.05, 12);
    expect(L.maxVelocityRadps[4]).toBeCloseTo(2.61 * 0.5, 12);
    expect(L.maxJerkRadps3[1]).toBeCloseTo(3750 * 0.5, 12);
    expect(resolveLimits(FR3, p).maxAccelerationRadps2[0]).toBeCloseTo(5, 12);
  });

  it("rejects unknown keys, at every level", () => {
    expect(() => parseSafetyProfile({ velocityFactor: 0.5 })).toThrow();
    expect(() => parseSafetyProfile({ gripper: { maxForce: 10 } })).toThrow();
    expect(() =>
      parseSafetyProfile({
        keepOut: [{ type: "sphere", name: "s", centerM: [0, 0, 0], radiusM: 0.1, colour: "red" }],
      }),
    ).toThrow();
  });

  it("a fraction above 1 (above the published limit) or at 0 is a config error", () => {
    expect(() => parseSafetyProfile({ velocityFraction: 1.01 })).toThrow();
    expect(() => parseSafetyProfile({ jerkFraction: 0 })).toThrow();
    expect(() => parseSafetyProfile({ accelerationFraction: 1 })).not.toThrow();
  });

  it("checks what only the robot knows, listing every problem", () => {
    const p = parseSafetyProfile({
      maxToolSpeedMps: 2,
      gripper: { maxSpeedMps: 0.1, maxForceN: 100 },
      keepOut: [
        { type: "sphere", name: "a", centerM: [0, 0, 0], radiusM: 0.1 },
        { type: "sphere", name: "a", centerM: [1, 0, 0], radiusM: 0.1 },
      ],
    });
    try {
      resolveLimits(PANDA, p);
      expect.unreachable();
    } catch (e) {
      expect(e).toBeInstanceOf(SafetyConfigError);
      expect((e as SafetyConfigError).issues.map((i) => i.path)).toEqual([
        "maxToolSpeedMps",
        "gripper.maxSpeedMps",
        "gripper.maxForceN",
        "keepOut.1.name",
      ]);
    }
    expect(() => resolveLimits(PANDA, parseSafetyProfile({ jointPositionMarginRad: 1.8 }))).toThrow(
      /joint 2 .*joint 4/,
    );
  });

  it("a workspace with min above max is refused", () => {
    expect(() => parseSafetyProfile({ workspace: { minM: [0, 0, 1], maxM: [1, 1, 0.5] } })).toThrow();
  });
});
