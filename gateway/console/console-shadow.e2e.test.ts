/**
 * The operator console on a shadow bench (examples/benches/sim-shadow-two-sims.yaml: the "real"
 * bench is a simulator with a perturbed servo and sensor timing, the twin the nominal sim), in
 * Debian's Chromium: the bench's camera and the twin's render side by side, and the divergence
 * figures (per chunk and trial: joint RMS/max, tool path, contacts, progress, image agreement)
 * updating after a chunk. Watching never enters the measurement: the trial's image figures
 * count exactly the frames the agent asked for. Screenshot: .tmp/console-screenshots/shadow.png.
 */
import type { Browser, Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { calibrationSchema } from "../../calibration/schema.ts";
import { loadBenchFile } from "../../compose/bench-config.ts";
import { OPERATOR_TOKEN, type TestGateway, testGateway } from "../../compose/testing.ts";
import { wireReferencePath } from "../../sim/buzzwire/reference-path.ts";
import { api } from "../../test-support/api.ts";
import {
  launchChromium,
  loginConsole,
  shot,
  shownImage,
  textOf,
} from "../../test-support/console-browser.ts";
import { sleep } from "../../test-support/wait.ts";

const BENCH = "examples/benches/sim-shadow-two-sims.yaml";
const BENCH_IMG = '[data-testid="twin"] [data-testid="camera-img-front"]';
const TWIN_IMG = '[data-testid="twin"] [data-testid="twin-camera-img-front"]';

let g: TestGateway;
let url: string;
let browser: Browser;
let page: Page;

beforeAll(async () => {
  const { config } = loadBenchFile(BENCH);
  // records in a scratch folder (testGateway's), not the bench file's
  const { recordsDir: _r, ...bench } = config;
  g = await testGateway(bench);
  url = await g.app.listen({ host: "127.0.0.1", port: 0 });
  browser = await launchChromium();
  page = await browser.newPage({ viewport: { width: 1400, height: 1100 } });
}, 90_000);

afterAll(async () => {
  await browser?.close();
  await g?.close();
});

describe("operator console on a shadow bench", () => {
  it("shows bench and twin side by side; the divergence figures update after a chunk", {
    timeout: 180_000,
  }, async () => {
    const twin = g.gateway.bench.twin;
    expect(twin).toBeDefined();
    await loginConsole(page, url, OPERATOR_TOKEN);
    await page.waitForSelector('[data-testid="twin"]');
    await page.waitForSelector(BENCH_IMG, { timeout: 30_000 });
    await page.waitForSelector(TWIN_IMG, { timeout: 30_000 });
    expect(await shownImage(page, BENCH_IMG)).not.toBe("");
    expect(await shownImage(page, TWIN_IMG)).not.toBe("");
    // no chunk yet
    expect(await textOf(page, '[data-testid="divergence"]')).toContain("trial (0 chunks)");
    const twin0 = await shownImage(page, TWIN_IMG);

    // 2 s along the wire with the front camera's video of the execution
    const seed = g.gateway.requireEpisode().config.seed;
    const cal = calibrationSchema.parse(g.gateway.bench.taskBench(seed));
    const r0 = g.gateway.bench.backend.read();
    const ref = wireReferencePath(g.gateway.bench.backend.describe().robot, cal, {
      gripperWidthM: r0.gripperWidthM,
      seedQ: r0.q,
      speedMps: 0.02,
    });
    const res = await api(g, "POST", "/v1/act", {
      type: "joint_position",
      dt: ref.dtS,
      rows: ref.rows.slice(0, 8),
      frames: { fps: 5, cameras: ["front"] },
    });
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    expect(res.body.episode.status).toBe("running");
    const agentFrames = (res.body.frames as { camera: string }[]).filter((f) => f.camera === "front").length;
    expect(agentFrames).toBeGreaterThan(0);

    await expect
      .poll(() => textOf(page, '[data-testid="divergence"]'), { timeout: 30_000 })
      .toContain("trial (1 chunks)");
    const d = twin!.divergence();
    expect(d.chunk?.samples).toBeGreaterThan(0);
    // the perturbed servo lags the nominal one: the twin diverges, and the page shows the figures
    expect(Math.max(...d.trial.joint_rms_rad)).toBeGreaterThan(0);
    expect(d.trial.tool_mm.max).toBeGreaterThan(0);
    const cells = await page.locator('[data-testid="div-samples"]').allTextContents();
    expect(cells).toEqual([String(d.chunk!.samples), String(d.trial.samples)]);
    const tool = await page.locator('[data-testid="div-tool"]').allTextContents();
    expect(tool[1]).toBe(
      `${d.trial.tool_mm.rms.toFixed(2)} / ${d.trial.tool_mm.max.toFixed(2)} / ${d.trial.tool_mm.final.toFixed(2)}`,
    );
    expect(await textOf(page, '[data-testid="div-image-front"]')).toMatch(/\d\.\d{3} \/ .* \(\d+ fr\.\)/);
    await expect.poll(() => shownImage(page, TWIN_IMG), { timeout: 30_000 }).not.toBe(twin0);
    // the page kept polling both views all along; the trial compared only the agent's frames
    await sleep(1000);
    const front = twin!.divergence().trial.images.find((i) => i.camera === "front");
    expect(front?.frames).toBe(agentFrames);
    await shot(page, "shadow");
  });

  it("the twin's camera route is operator-only and says when a bench has no twin", async () => {
    const agent = await api(g, "GET", "/v1/admin/twin/cameras/front/image");
    expect(agent.status).toBe(403);
    const op = await g.app.inject({ url: "/v1/admin/twin/cameras/front/image", headers: g.operator });
    expect(op.statusCode).toBe(200);
    expect(op.headers["content-type"]).toBe("image/jpeg");
    const unknown = await g.app.inject({ url: "/v1/admin/twin/cameras/nope/image", headers: g.operator });
    expect(unknown.json().error.code).toBe("RB_ERR_UNKNOWN_CAMERA");
    const plain = await testGateway({ backend: { type: "mirror" } });
    try {
      const r = await plain.app.inject({
        url: "/v1/admin/twin/cameras/front/image",
        headers: plain.operator,
      });
      expect(r.statusCode).toBe(404);
      expect(r.json().error.code).toBe("RB_ERR_NO_TWIN");
      expect(plain.gateway.console.snapshot(plain.gateway).twin).toBeNull();
    } finally {
      await plain.close();
    }
  });
});
