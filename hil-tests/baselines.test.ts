import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { parseBenchConfig } from "../compose/bench-config.ts";
import { compareFigures, measureFigures, readBaselines, writeBaselines } from "./baselines.ts";

const dir = mkdtempSync(join(tmpdir(), "hil-baselines-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
const bench = (backend: Record<string, unknown>) =>
  parseBenchConfig({
    version: 1,
    name: "b",
    backend: { type: "sim", ...backend },
    task: { id: "buzz-wire", seed: 2 },
    recordsDir: join(dir, "r"),
  });

describe("HIL baselines", () => {
  it("a bench with a command delay and camera latency regresses against the nominal sim's baselines; the nominal one does not", async () => {
    const nominal = await measureFigures(bench({}));
    const path = join(dir, "baselines.json");
    writeBaselines(path, { b: nominal });
    const stored = readBaselines(path).b!;
    expect(compareFigures(await measureFigures(bench({})), stored, 0.2)).toEqual([]);
    const worse = await measureFigures(bench({ servo: { delayTicks: 4 }, realism: { domain: false } }));
    const reg = compareFigures(worse, stored, 0.2).map((r) => r.figure);
    expect(reg).toContain("tracking_max_rad");
    expect(reg).toContain("frame_latency_ms");
  }, 60_000);
});
