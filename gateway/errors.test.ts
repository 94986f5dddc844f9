import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { renderErrorsDoc } from "./errors-doc.ts";
import { ERRORS, GatewayError } from "./errors.ts";

describe("error registry", () => {
  it("docs/errors.md is the rendering of the registry", () => {
    expect(readFileSync(new URL("../docs/errors.md", import.meta.url), "utf8")).toBe(renderErrorsDoc());
  });

  it("codes are well-formed with HTTP error statuses", () => {
    for (const [code, spec] of Object.entries(ERRORS)) {
      expect(code).toMatch(/^RB_ERR_[A-Z_]+$/);
      expect(spec.status).toBeGreaterThanOrEqual(400);
      expect(spec.status).toBeLessThan(600);
    }
  });

  it("renders details into the message and keeps them in the body", () => {
    const e = new GatewayError("RB_ERR_ROW_WIDTH", { row: 3, width: 7, expected: 8, type: "joint_position" });
    expect(e.message).toBe("Row 3 has 7 values; action joint_position needs 8");
    expect(e.toBody().error).toMatchObject({ code: "RB_ERR_ROW_WIDTH", details: { row: 3 } });
    expect(e.status).toBe(400);
  });
});
