import { describe, expect, it } from "vitest";
import type { Backend } from "../../seam/types.ts";
import type { TaskStatus } from "../../tasks/types.ts";
import { causeOfVerdict, endReasonFor, type StopCause, StopArbiter, type StopSource } from "./stop.ts";

const running: TaskStatus = { state: "running" };
const failed: TaskStatus = { state: "failed", reason: "touched the wire" };

describe("endReasonFor: how an episode stopped for a cause ends", () => {
  it.each<[StopSource, TaskStatus, string]>([
    ["watchdog", running, "fault"],
    ["device_fault", running, "fault"],
    ["storage", running, "fault"],
    ["exception", failed, "fault"],
    ["tick", running, "time_limit"],
    ["signal", running, "aborted"],
    ["operator", running, "aborted"],
    ["estop", failed, "safety_stop"],
    ["safety", running, "safety_stop"],
    // the task's judge owns task outcomes
    ["task", failed, "task_failed"],
    ["task", { state: "success" }, "success"],
    ["contact", failed, "task_failed"],
    ["contact", running, "safety_stop"],
  ])("%s with the judge %j → %s", (source, status, reason) => {
    expect(endReasonFor({ source, detail: "x" }, status)).toBe(reason);
  });

  it("monitor verdicts map to their sources", () => {
    const v = (cause: object) => causeOfVerdict({ stop: true, cause, endReason: "fault" } as never);
    expect(v({ kind: "stale_reading", t: 1, gapMs: 90, limitMs: 50 }).source).toBe("watchdog");
    expect(v({ kind: "device_fault", t: 1, device: "firmata", message: "gone" })).toMatchObject({
      source: "device_fault",
      device: "firmata",
      detail: "firmata: gone",
    });
    expect(
      v({ kind: "task_event", t: 1, event: "contact", source: "buzzbox", detail: "circuit closed" }),
    ).toMatchObject({
      source: "contact",
      data: { kind: "task_event", source: "buzzbox" },
    });
    expect(v({ kind: "task_event", t: 1, event: "collision", source: "sim", detail: "a hit b" }).source).toBe(
      "safety",
    );
    expect(v({ kind: "velocity", t: 1, joint: "j4", value: 3, limit: 2 }).detail).toBe("velocity j4");
  });
});

describe("StopArbiter", () => {
  function backend(stop: (reason: string) => Promise<void>): Backend {
    return { stop } as unknown as Backend;
  }

  it("aborts the motion and calls the backend's stop before returning; keeps the first cause", () => {
    const calls: string[] = [];
    const a = new StopArbiter(
      backend(async (r) => {
        calls.push(r);
      }),
      () => {},
    );
    const signal = a.arm();
    const first: StopCause = { source: "contact", detail: "contact" };
    expect(a.request(first)).toBe(true);
    expect(signal.aborted).toBe(true);
    expect(calls).toEqual(["contact"]);
    // the same source again: nothing new; another source: stops again, the first cause stays
    expect(a.request({ source: "contact", detail: "again" })).toBe(false);
    expect(calls).toEqual(["contact"]);
    expect(a.request({ source: "estop", detail: "e-stop" })).toBe(false);
    expect(calls).toEqual(["contact", "e-stop"]);
    expect(a.cause).toBe(first);
    // a new motion forgets it
    a.arm();
    expect(a.cause).toBeUndefined();
  });

  it("a stop that rejects or throws goes to onStopFailed, never an unhandled rejection", async () => {
    const failures: string[] = [];
    const rejecting = new StopArbiter(
      backend(() => Promise.reject(new Error("port closed"))),
      (err, cause) => failures.push(`${cause.source}: ${(err as Error).message}`),
    );
    rejecting.request({ source: "signal", detail: "SIGTERM" });
    await rejecting.stopped;
    const throwing = new StopArbiter(
      backend(() => {
        throw new Error("sync throw");
      }),
      (err, cause) => failures.push(`${cause.source}: ${(err as Error).message}`),
    );
    throwing.request({ source: "watchdog", detail: "stale" });
    expect(failures).toEqual(["signal: port closed", "watchdog: sync throw"]);
  });
});
