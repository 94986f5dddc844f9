/**
 * Each misuse has its own code (Structure issue): a bad jog index, an FK q of the wrong width,
 * an unknown snapshot, recover/reset on a backend that cannot, and the registry keeps one live
 * code per meaning (retired codes are raised nowhere).
 */
import { existsSync, readdirSync, readFileSync, statSync } from "node:fs";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { type TestGateway, testGateway } from "../../compose/testing.ts";
import { api } from "../../test-support/api.ts";
import { ERRORS, type ErrorSpec } from "../errors.ts";

let g: TestGateway | undefined;
afterEach(async () => {
  await g?.close();
  g = undefined;
});

describe("one code per misuse", () => {
  it("a jog index outside the command list is RB_ERR_JOG_INDEX naming the range; nothing moves", async () => {
    g = await testGateway({ backend: { type: "sim" }, task: { id: "buzz-wire", level: "jog", seed: 2 } });
    const before = g.gateway.bench.backend.read();
    for (const bad of [99, -1, 1.5]) {
      const res = await api(g, "POST", "/v1/act", { type: "jog", dt: 0.01, rows: [[0], [bad]] });
      expect(res.status).toBe(400);
      expect(res.body.error.code).toBe("RB_ERR_JOG_INDEX");
      expect(res.body.error.details).toMatchObject({ row: 1, value: bad, max: 14 });
      expect(res.body.error.message).toContain("0…14");
    }
    expect(g.gateway.bench.backend.read()).toEqual(before);
  });

  it("FK q and IK q_seed of the wrong width are RB_ERR_Q_WIDTH (not a row-width error)", async () => {
    g = await testGateway({ backend: { type: "mirror" } });
    const res = await api(g, "POST", "/v1/kinematics/fk", { q: [0, 0, 0] });
    expect(res.status).toBe(400);
    expect(res.body.error).toMatchObject({
      code: "RB_ERR_Q_WIDTH",
      details: { field: "q", width: 3, dof: 7 },
    });
    const pose = (await api(g, "POST", "/v1/kinematics/fk", { q: g.gateway.bench.backend.read().q })).body
      .tool;
    const ik = await api(g, "POST", "/v1/kinematics/ik", { pose, q_seed: [0, 0, 0] });
    expect(ik.status).toBe(400);
    expect(ik.body.error).toMatchObject({
      code: "RB_ERR_Q_WIDTH",
      details: { field: "q_seed", width: 3, dof: 7 },
    });
  });

  it("restoring an unknown snapshot is RB_ERR_UNKNOWN_SNAPSHOT", async () => {
    g = await testGateway({ backend: { type: "sim" }, task: { id: "buzz-wire", seed: 2 } });
    await api(g, "POST", "/v1/admin/episodes", { seed: 2, privileged: true }, "operator");
    const res = await api(g, "POST", "/v1/admin/privileged/restore", { snapshot_id: "nope" }, "operator");
    expect(res.status).toBe(404);
    expect(res.body.error).toMatchObject({
      code: "RB_ERR_UNKNOWN_SNAPSHOT",
      details: { snapshot_id: "nope" },
    });
  });

  it("recover on a backend without devices, and reset on one that cannot, are RB_ERR_BACKEND_UNSUPPORTED", async () => {
    g = await testGateway({ backend: { type: "mirror" } });
    const rec = await api(g, "POST", "/v1/admin/recover", undefined, "operator");
    expect(rec.status).toBe(422);
    expect(rec.body.error).toMatchObject({
      code: "RB_ERR_BACKEND_UNSUPPORTED",
      details: { backend: "mirror", operation: "recover" },
    });
    // a task that grants a reset on a backend that cannot reset (a physical bench cannot teleport)
    const ep = g.gateway.requireEpisode();
    (ep.config.budgets as { resets: number }).resets = 1;
    (g.gateway.bench.backend as { reset?: unknown }).reset = undefined;
    const res = await api(g, "POST", "/v1/reset");
    expect(res.status).toBe(422);
    expect(res.body.error).toMatchObject({
      code: "RB_ERR_BACKEND_UNSUPPORTED",
      details: { operation: "reset" },
    });
  });
});

describe("the registry", () => {
  const live = Object.entries(ERRORS as Record<string, ErrorSpec>).filter(([, s]) => !s.retired);
  const retired = Object.entries(ERRORS as Record<string, ErrorSpec>).filter(([, s]) => s.retired);

  it("no two live codes share a message template", () => {
    const seen = new Map<string, string>();
    for (const [code, s] of live) {
      const key = s.message.replace(/\{\w+\}/g, "{}").toLowerCase();
      expect(seen.get(key), `${code} repeats ${seen.get(key)}`).toBeUndefined();
      seen.set(key, code);
    }
  });

  it("every retired code names a live replacement, and no source file raises a retired code", () => {
    const liveCodes = new Set(live.map(([c]) => c));
    for (const [code, s] of retired) expect(liveCodes.has(s.replacedBy ?? ""), code).toBe(true);
    const root = new URL("../../", import.meta.url).pathname;
    const hits: string[] = [];
    const walk = (dir: string) => {
      for (const name of readdirSync(dir)) {
        if (name === "node_modules" || name.startsWith(".")) continue;
        const p = join(dir, name);
        if (statSync(p).isDirectory()) walk(p);
        else if (name.endsWith(".ts") && !p.endsWith("seam/errors.ts")) {
          const text = readFileSync(p, "utf8");
          for (const [code] of retired) if (text.includes(`"${code}"`)) hits.push(`${p}: ${code}`);
        }
      }
    };
    // the code that raises (or expects) codes; clients may list every code, retired ones included
    for (const d of ["gateway", "seam", "sim", "drivers", "compose", "cli", "hil-tests"]) {
      if (existsSync(join(root, d))) walk(join(root, d));
    }
    expect(hits).toEqual([]);
  });
});
