/** Property test: random JSON at every endpoint never yields a 500 or crashes the server. */
import fc from "fast-check";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type TestGateway, testGateway } from "../compose/testing.ts";

let g: TestGateway;
beforeAll(async () => {
  g = await testGateway({ backend: { type: "mirror" } });
});
afterAll(async () => {
  await g.close();
});

const ENDPOINTS: [string, string][] = [
  ["GET", "/v1/task"],
  ["GET", "/v1/spec"],
  ["POST", "/v1/observe"],
  ["POST", "/v1/act"],
  ["POST", "/v1/kinematics/fk"],
  ["POST", "/v1/kinematics/ik"],
  ["POST", "/v1/reset"],
  ["POST", "/v1/submit"],
  ["GET", "/v1/frames/x"],
  ["POST", "/v1/admin/episodes"],
  ["GET", "/v1/admin/episodes"],
  ["GET", "/v1/admin/episodes/x"],
  ["GET", "/v1/admin/state"],
  ["GET", "/v1/admin/privileged/state"],
  ["POST", "/v1/admin/privileged/restore"],
  ["GET", "/v1/openapi.json"],
];

/** JSON values biased toward the shapes the API expects. */
const nearValid = fc.oneof(
  fc.jsonValue(),
  fc.record(
    {
      type: fc.oneof(fc.constantFrom("joint_position", "ee_pose", "jog"), fc.string()),
      dt: fc.oneof(fc.double(), fc.constantFrom(0.001, 0.01, 0.1), fc.string()),
      rows: fc.array(fc.array(fc.oneof(fc.double({ noNaN: true }), fc.jsonValue()), { maxLength: 9 }), {
        maxLength: 5,
      }),
      advance_s: fc.oneof(fc.double({ noNaN: true, min: -1, max: 0.05 }), fc.jsonValue()),
      q: fc.array(fc.double({ noNaN: true }), { maxLength: 8 }),
      pose: fc.jsonValue(),
      seed: fc.jsonValue(),
      cameras: fc.jsonValue(),
    },
    { requiredKeys: [] },
  ),
);

describe("random JSON at every endpoint", () => {
  it("never answers 500 and always answers JSON errors with a registered code", async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.constantFrom(...ENDPOINTS),
        nearValid,
        fc.constantFrom("agent", "operator", "none"),
        async ([method, url], body, who) => {
          const headers: Record<string, string> = { "content-type": "application/json" };
          if (who !== "none") headers.authorization = (who === "agent" ? g.agent : g.operator).authorization;
          const res = await g.app.inject({
            method: method as "GET" | "POST",
            url,
            headers,
            ...(method === "POST" ? { payload: JSON.stringify(body) } : {}),
          });
          expect(res.statusCode).toBeLessThan(500);
          if (res.statusCode >= 400) expect(res.json().error.code).toMatch(/^RB_ERR_[A-Z_]+$/);
        },
      ),
      { numRuns: 400 },
    );
    // the server still serves after the storm
    expect((await g.app.inject({ method: "GET", url: "/v1/spec", headers: g.agent })).statusCode).toBe(200);
  });
});
