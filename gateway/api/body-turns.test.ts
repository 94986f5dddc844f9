/**
 * A large JSON body is parsed in a turn of the event loop of its own and validated in the next
 * (gateway/app.ts, issue #10: an e-stop that arrives while an act of 300 tool poses is read waits
 * for one of the turns, not for all of them), with fastify's own parser: the same answers as a
 * small body for bad JSON, prototype poisoning and nesting.
 */
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { type TestGateway, testGateway } from "../../compose/testing.ts";

let g: TestGateway;
beforeEach(async () => {
  g = await testGateway({ backend: { type: "mirror" } });
});
afterEach(async () => {
  await g.close();
});

const post = (text: string) =>
  g.app.inject({
    method: "POST",
    url: "/v1/act",
    payload: text,
    headers: { ...g.agent, "content-type": "application/json" },
  });
/** an act's JSON text of `n` rows holding the current pose */
const actText = (n: number) => {
  const r = g.gateway.bench.backend.read();
  const row = [...r.q, r.gripperWidthM];
  return JSON.stringify({ type: "joint_position", dt: 0.01, rows: Array.from({ length: n }, () => row) });
};

describe("a large JSON body", () => {
  it("is parsed, then validated and handed to the episode a turn later; a small one in one turn", async () => {
    const jsonParse = JSON.parse;
    let turned: boolean | undefined;
    let turnedAtAct: boolean | undefined;
    JSON.parse = (text: string, reviver?: Parameters<typeof JSON.parse>[1]) => {
      const v = jsonParse(text, reviver);
      if (text.startsWith('{"type":"joint_position"')) {
        turned = false;
        setImmediate(() => {
          turned = true;
        });
      }
      return v;
    };
    const ep = g.gateway.requireEpisode();
    const act = ep.act.bind(ep);
    ep.act = (...a: Parameters<typeof act>) => {
      turnedAtAct = turned;
      return act(...a);
    };
    try {
      const big = actText(200);
      expect(big.length).toBeGreaterThan(8 * 1024);
      expect((await post(big)).statusCode).toBe(200);
      expect(turnedAtAct).toBe(true);
      turnedAtAct = undefined;
      expect((await post(actText(2))).statusCode).toBe(200);
      expect(turnedAtAct).toBe(false);
    } finally {
      JSON.parse = jsonParse;
    }
  });

  it("answers bad JSON, prototype poisoning and deep nesting as a small body does", async () => {
    const pad = " ".repeat(9000);
    for (const [small, code] of [
      ['{"type":"joint_position",', undefined],
      ['{"type":"joint_position","__proto__":{"x":1}}', undefined],
      ['{"type":"joint_position","constructor":{"prototype":{"x":1}}}', undefined],
      [
        `{"type":"joint_position","dt":0.01,"rows":[${"[".repeat(40)}1${"]".repeat(40)}]}`,
        "RB_ERR_JSON_TOO_DEEP",
      ],
    ] as const) {
      const a = await post(small);
      const b = await post(`${pad}${small}`);
      expect(a.statusCode).toBeGreaterThanOrEqual(400);
      expect(a.statusCode).toBeLessThan(500);
      expect(b.statusCode).toBe(a.statusCode);
      expect(b.json().error.code).toBe(a.json().error.code);
      if (code) expect(b.json().error).toMatchObject({ code, details: { path: `/rows${"/0".repeat(31)}` } });
    }
    expect(g.gateway.requireEpisode().isEnded).toBe(false);
  });
});
