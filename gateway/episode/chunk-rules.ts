/**
 * Chunk shape rules of DESIGN.md §2, the same for every backend. Pure functions that either
 * return the validated value or throw a coded GatewayError naming the offending row/column.
 * Position clipping and the dynamic checks live in gateway/safety/.
 */
import { GatewayError } from "../errors.ts";

/** Relative tolerance for "dt is a whole multiple of the period": float representation only. */
const MULTIPLE_EPS = 1e-9;

/**
 * Check dt and return the whole number of control periods per row. dt is never rounded: a dt
 * that is not k·period (to floating-point representation accuracy) is refused.
 */
export function checkDt(dtS: number, periodS: number, maxDtS: number): number {
  const k = dtS / periodS;
  const kInt = Math.round(k);
  const ok =
    Number.isFinite(dtS) &&
    kInt >= 1 &&
    Math.abs(k - kInt) <= MULTIPLE_EPS * Math.max(1, k) &&
    dtS <= maxDtS + 1e-12;
  if (!ok) throw new GatewayError("RB_ERR_DT", { dt: dtS, period: periodS, max: maxDtS });
  return kInt;
}

/**
 * Check row count, row width and that every value is a finite number.
 * @returns the rows as numbers
 */
export function checkRows(
  rows: readonly (readonly unknown[])[],
  width: number,
  maxRows: number,
  type: string,
): number[][] {
  if (rows.length < 1 || rows.length > maxRows) {
    throw new GatewayError("RB_ERR_ROWS", { count: rows.length, max: maxRows });
  }
  const out: number[][] = new Array(rows.length);
  for (let r = 0; r < rows.length; r++) {
    const row = rows[r]!;
    if (row.length !== width) {
      throw new GatewayError("RB_ERR_ROW_WIDTH", { row: r, width: row.length, expected: width, type });
    }
    const nums = new Array<number>(width);
    for (let c = 0; c < width; c++) {
      const v = row[c];
      if (typeof v !== "number" || !Number.isFinite(v)) {
        // never String(v) of a client's value: {"toString":1} or a deep array makes it throw
        const value = v === null || typeof v !== "object" ? String(v) : Array.isArray(v) ? "array" : "object";
        throw new GatewayError("RB_ERR_NOT_FINITE", { row: r, column: c, value });
      }
      nums[c] = v;
    }
    out[r] = nums;
  }
  return out;
}
