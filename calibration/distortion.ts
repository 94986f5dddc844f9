/**
 * The OpenCV radial-tangential lens model (plumb bob: k1 k2 p1 p2 k3), pure functions shared by
 * the simulator's renderer and by clients that project or back-project with a published camera.
 * Forward model, normalised coordinates (x, y) = (X/Z, Y/Z):
 *   r² = x² + y², radial = 1 + k1 r² + k2 r⁴ + k3 r⁶
 *   x_d = x·radial + 2 p1 x y + p2 (r² + 2x²),  y_d = y·radial + p1 (r² + 2y²) + 2 p2 x y
 *   u = fx x_d + cx,  v = fy y_d + cy
 */

/** Distortion coefficients in OpenCV order. */
export interface DistortionCoefficients {
  k1: number;
  k2: number;
  p1: number;
  p2: number;
  k3: number;
}

/**
 * Parse a CameraDescription's `distortion` array (k1 k2 p1 p2 k3; missing entries are zero).
 * Returns null when every coefficient is zero (no remap needed). Throws on non-finite values
 * or on non-zero coefficients beyond k3 (the rational / thin-prism models are not supported).
 */
export function parseDistortion(d: readonly number[]): DistortionCoefficients | null {
  for (let i = 0; i < d.length; i++) {
    const v = d[i]!;
    if (!Number.isFinite(v)) throw new Error(`distortion[${i}] is not finite`);
    if (i >= 5 && v !== 0) throw new Error("only the k1 k2 p1 p2 k3 distortion model is supported");
  }
  const c = { k1: d[0] ?? 0, k2: d[1] ?? 0, p1: d[2] ?? 0, p2: d[3] ?? 0, k3: d[4] ?? 0 };
  return c.k1 === 0 && c.k2 === 0 && c.p1 === 0 && c.p2 === 0 && c.k3 === 0 ? null : c;
}

/** Apply the forward model to normalised coordinates. */
export function distortPoint(c: DistortionCoefficients, x: number, y: number): [number, number] {
  const r2 = x * x + y * y;
  const radial = 1 + r2 * (c.k1 + r2 * (c.k2 + r2 * c.k3));
  return [
    x * radial + 2 * c.p1 * x * y + c.p2 * (r2 + 2 * x * x),
    y * radial + c.p1 * (r2 + 2 * y * y) + 2 * c.p2 * x * y,
  ];
}

/**
 * Invert the forward model by fixed-point iteration. Returns null when the iteration does not
 * reproduce (xd, yd) to within `tol` (normalised units).
 */
export function undistortPoint(
  c: DistortionCoefficients,
  xd: number,
  yd: number,
  tol = 1e-9,
): [number, number] | null {
  let x = xd;
  let y = yd;
  for (let it = 0; it < 50; it++) {
    const r2 = x * x + y * y;
    const radial = 1 + r2 * (c.k1 + r2 * (c.k2 + r2 * c.k3));
    const dx = 2 * c.p1 * x * y + c.p2 * (r2 + 2 * x * x);
    const dy = c.p1 * (r2 + 2 * y * y) + 2 * c.p2 * x * y;
    if (!(radial > 0)) return null;
    x = (xd - dx) / radial;
    y = (yd - dy) / radial;
  }
  const [ex, ey] = distortPoint(c, x, y);
  return Math.hypot(ex - xd, ey - yd) <= tol && Number.isFinite(x + y) ? [x, y] : null;
}
