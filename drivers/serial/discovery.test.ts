import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { listSerialPorts } from "./discovery.ts";

describe("listSerialPorts", () => {
  const dev = mkdtempSync(join(tmpdir(), "dev-"));
  const bin = mkdtempSync(join(tmpdir(), "bin-"));
  for (const n of ["ttyACM1", "ttyUSB0", "ttyS0", "null"]) writeFileSync(join(dev, n), "");
  writeFileSync(join(bin, "udevadm"), "");
  afterAll(() => {
    rmSync(dev, { recursive: true, force: true });
    rmSync(bin, { recursive: true, force: true });
  });

  it("scans /dev for USB serial devices and says why when udevadm is missing", async () => {
    const r = await listSerialPorts({ devDir: dev, searchPath: "" });
    expect(r.method).toBe("dev-scan");
    expect(r.note).toMatch(/udevadm not found/);
    expect(r.ports.map((p) => p.path)).toEqual([join(dev, "ttyACM1"), join(dev, "ttyUSB0")]);
  });

  it("uses the serialport lister when udevadm exists, and falls back when it fails", async () => {
    const ok = await listSerialPorts({
      devDir: dev,
      searchPath: bin,
      list: async () => [{ path: "/dev/ttyACM0", manufacturer: "Arduino" }],
    });
    expect(ok).toEqual({ method: "udev", ports: [{ path: "/dev/ttyACM0", manufacturer: "Arduino" }] });
    const failed = await listSerialPorts({
      devDir: dev,
      searchPath: bin,
      list: async () => {
        throw new Error("boom");
      },
    });
    expect(failed.method).toBe("dev-scan");
    expect(failed.note).toMatch(/boom/);
    expect(failed.ports).toHaveLength(2);
  });
});
