/**
 * The operator console end to end: a real gateway on a loopback port (sim bench), Debian's
 * Chromium driven by playwright-core (never a downloaded browser). Screenshots of every view go
 * to .tmp/console-screenshots/ for a person to look at.
 */
import { join } from "node:path";
import type { Browser, Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { AGENT_TOKEN, OPERATOR_TOKEN, type TestGateway, testGateway } from "../../compose/testing.ts";
import {
  CONSOLE_SHOTS as SHOTS,
  launchChromium,
  shownImage as shown,
} from "../../test-support/console-browser.ts";
import { waitFor } from "../../test-support/wait.ts";

let g: TestGateway;
let url: string;
let browser: Browser;
let page: Page;

// biome-ignore lint/suspicious/noExplicitAny: tests read response bodies freely
async function agent(path: string, body?: unknown): Promise<{ status: number; body: any }> {
  const res = await fetch(url + path, {
    method: body === undefined ? "GET" : "POST",
    headers: {
      authorization: `Bearer ${AGENT_TOKEN}`,
      ...(body !== undefined ? { "content-type": "application/json" } : {}),
    },
    ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
  });
  return { status: res.status, body: await res.json() };
}

/** the measured joints and gripper opening */
async function measured(): Promise<{ q: number[]; grip: number }> {
  const r = (await agent("/v1/observe", { cameras: [] })).body.readings[0];
  return { q: r.q, grip: r.gripper_width_m };
}

/** rows that turn joint 1 by `delta` rad from the measured state over `n` half-second rows, the gripper held */
function sweep(m: { q: number[]; grip: number }, delta: number, n: number): number[][] {
  return Array.from({ length: n }, (_, k) => [
    ...m.q.map((v, i) => (i === 0 ? v + (delta * (k + 1)) / n : v)),
    m.grip,
  ]);
}

/** the bytes of the camera image the page shows now */
const shownImage = (camera: string) => shown(page, `[data-testid="camera-img-${camera}"]`);

beforeAll(async () => {
  g = await testGateway({
    backend: { type: "sim", scene: "pendulum" },
    task: { id: "free-motion", seed: 3 },
  });
  const address = await g.app.listen({ host: "127.0.0.1", port: 0 });
  url = address;
  browser = await launchChromium();
  page = await browser.newPage({ viewport: { width: 1400, height: 1000 } });
});

afterAll(async () => {
  await browser?.close();
  await g?.close();
});

describe("operator console in Chromium", () => {
  it("refuses the agent token at login and admits the operator token", { timeout: 120_000 }, async () => {
    await page.goto(`${url}/console`);
    await page.fill('input[name="token"]', AGENT_TOKEN);
    await page.click('button[type="submit"]');
    await expect.poll(() => page.textContent('[data-testid="login-error"]')).toContain("agent token");
    await page.screenshot({ path: join(SHOTS, "login-refused.png") });
    // and the data routes refuse it too, whatever the page does
    const live = await fetch(`${url}/v1/admin/live`, { headers: { authorization: `Bearer ${AGENT_TOKEN}` } });
    expect(live.status).toBe(403);
    await page.fill('input[name="token"]', OPERATOR_TOKEN);
    await page.click('button[type="submit"]');
    await page.waitForSelector('[data-testid="live"]');
    await page.waitForSelector('[data-testid="camera-img-front"]');
  });

  it("shows a camera image change while a chunk runs", { timeout: 120_000 }, async () => {
    const before = await shownImage("front");
    expect(before).not.toBe("");
    let moving = true;
    let changedWhileMoving = false;
    const motion = (async () => {
      try {
        for (let k = 0; k < 12 && !changedWhileMoving; k++) {
          const rows = sweep(await measured(), k % 2 === 0 ? 0.25 : -0.25, 6);
          const r = await agent("/v1/act", { type: "joint_position", dt: 0.5, rows });
          expect(r.status, JSON.stringify(r.body)).toBe(200);
        }
      } finally {
        moving = false;
      }
    })();
    await waitFor(
      () => {
        void shownImage("front").then((now) => {
          if (moving && now !== "" && now !== before) changedWhileMoving = true;
        });
        return changedWhileMoving || !moving;
      },
      "the front camera image to change during the motion",
      60_000,
    );
    await motion;
    expect(changedWhileMoving).toBe(true);
    await page.screenshot({ path: join(SHOTS, "live.png") });
  });

  it("e-stop button: the backend stops within one control period and the episode refuses new motion", {
    timeout: 120_000,
  }, async () => {
    const backend = g.gateway.bench.backend;
    const period = backend.describe().controlPeriodS;
    const stops: number[] = [];
    const stop = backend.stop.bind(backend);
    backend.stop = (reason: string) => {
      stops.push(backend.now());
      return stop(reason);
    };
    try {
      const m0 = await measured();
      const act = agent("/v1/act", { type: "joint_position", dt: 0.5, rows: sweep(m0, 0.3, 16) });
      // wait until the chunk is running, then press the button
      await waitFor(
        () =>
          (g.gateway.episode?.counters.steps ?? 0) > 0 || backend.read().dq.some((v) => Math.abs(v) > 1e-4),
        "motion to start",
        30_000,
      );
      expect(g.gateway.episode?.isEnded).toBe(false);
      await page.click('[data-testid="estop"]');
      const res = await act;
      await page.waitForSelector("#estop.engaged");
      const es = g.gateway.estop;
      expect(es.engaged).toBe(true);
      expect(stops.length).toBeGreaterThan(0);
      expect(g.gateway.episode?.endReason).toBe("safety_stop");
      // sim time run between the engage and the backend's stop call, and after it
      expect(stops[0]! - es.backendT!).toBeLessThanOrEqual(period + 1e-9);
      expect(backend.now() - es.backendT!).toBeLessThanOrEqual(period + 1e-9);
      expect(res.status === 200 || res.status === 409 || res.status === 423).toBe(true);
      const again = await agent("/v1/act", { type: "joint_position", dt: 0.5, rows: [[...m0.q, m0.grip]] });
      expect(again.status).toBeGreaterThanOrEqual(400);
      expect(["RB_ERR_ESTOP", "RB_ERR_EPISODE_ENDED"]).toContain(again.body.error.code);
      await page.screenshot({ path: join(SHOTS, "estop-engaged.png") });
    } finally {
      backend.stop = stop;
    }
  });

  it("episodes view: release, start an episode, list it with its result, grade an ended one, plot progress", {
    timeout: 180_000,
  }, async () => {
    await page.click('[data-testid="release"]');
    await page.waitForSelector("#estop:not(.engaged)");
    await page.click("text=Episodes");
    await page.waitForSelector('[data-testid="episode-table"]');
    await page.selectOption('select[name="task"]', "free-motion");
    await page.fill('input[name="seed"]', "4");
    await page.click('[data-testid="start-episode"]');
    await expect
      .poll(() => page.textContent('[data-testid="episode-msg"]'), { timeout: 60_000 })
      .toContain("started");
    expect(g.gateway.episode?.config.task.id).toBe("free-motion");
    expect(g.gateway.episode?.config.seed).toBe(4);
    await page.click('[data-testid="end-episode"]');
    await expect.poll(() => g.gateway.episode?.isEnded, { timeout: 30_000 }).toBe(true);
    const rows = page.locator('[data-testid="episode-table"] tr');
    await expect.poll(() => rows.count(), { timeout: 30_000 }).toBeGreaterThanOrEqual(3);
    await page.locator('[data-testid="episode-table"] tr >> nth=1 >> text=grade').click();
    await expect
      .poll(() => page.locator('[data-testid="episode-table"] tr >> nth=1').textContent(), {
        timeout: 60_000,
      })
      .toMatch(/agrees|DISAGREES/);
    expect(await page.locator('[data-testid="episode-table"] tr >> nth=1').textContent()).toContain("agrees");
    await page.waitForSelector('[data-testid="progress-plot"] canvas');
    await page.screenshot({ path: join(SHOTS, "episodes.png"), fullPage: true });
  });
});
