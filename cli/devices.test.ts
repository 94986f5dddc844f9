import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { FR3 } from "../robots/franka/models.ts";
import { FrankaRosbridgeRig } from "../hil-tests/rigs/rosbridge/franka-rig.ts";
import { MirrorBackend } from "../drivers/mirror/mirror-backend.ts";
import { devices } from "./devices.ts";

const dir = mkdtempSync(join(tmpdir(), "devices-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe("robot-gateway devices", () => {
  it("lists USB serial ports (dev scan without udevadm) and prints them", async () => {
    for (const n of ["ttyACM0", "ttyUSB1", "ttyS0", "null"]) writeFileSync(join(dir, n), "");
    const lines: string[] = [];
    const r = await devices({ devDir: dir, searchPath: join(dir, "no-bin"), print: (l) => lines.push(l) });
    expect(r.serial.method).toBe("dev-scan");
    expect(r.serial.ports.map((p) => p.path)).toEqual([join(dir, "ttyACM0"), join(dir, "ttyUSB1")]);
    expect(r.ros).toBeUndefined();
    expect(lines.join("\n")).toContain(join(dir, "ttyACM0"));
  });

  it("probes a rosbridge server: connection and joint states", async () => {
    const rig = await FrankaRosbridgeRig.start({ backend: new MirrorBackend({ robot: FR3 }) });
    try {
      const lines: string[] = [];
      const r = await devices({
        devDir: dir,
        searchPath: join(dir, "no-bin"),
        rosbridge: rig.url,
        timeoutMs: 2000,
        print: (l) => lines.push(l),
      });
      expect(r.ros).toMatchObject({ url: rig.url, reachable: true, jointStates: { received: true } });
      expect(r.ros!.jointStates!.joints).toEqual(FR3.joints.map((j) => j.name));
      expect(lines.join("\n")).toMatch(/joint states flow/);
    } finally {
      await rig.close();
    }
  });

  it("reports an unreachable rosbridge without throwing", async () => {
    const r = await devices({
      devDir: dir,
      searchPath: join(dir, "no-bin"),
      rosbridge: "ws://127.0.0.1:1",
      timeoutMs: 300,
      json: true,
      print: () => {},
    });
    expect(r.ros).toMatchObject({ reachable: false });
    expect(r.ros!.error).toBeTruthy();
  });
});
