/**
 * Depth (mm, 0 = no return) → an RGB colour map for people to look at: near is warm, far is cool
 * (a piecewise-linear approximation of the "turbo" map), no return is black. The range is the
 * frame's own 2nd–98th percentile of valid depths, so the bench's working volume fills the map.
 */
const STOPS: readonly (readonly [number, number, number])[] = [
  [122, 4, 3],
  [249, 117, 29],
  [237, 208, 58],
  [164, 252, 60],
  [26, 228, 182],
  [70, 134, 251],
  [48, 18, 59],
];

export function depthColourMap(depthMm: Uint16Array): Uint8Array {
  const out = new Uint8Array(depthMm.length * 3);
  const hist = new Uint32Array(65536);
  let valid = 0;
  for (let i = 0; i < depthMm.length; i++) {
    const d = depthMm[i]!;
    if (d > 0) {
      hist[d]!++;
      valid++;
    }
  }
  if (valid === 0) return out;
  const pick = (share: number) => {
    let acc = 0;
    const want = share * valid;
    for (let d = 1; d < 65536; d++) {
      acc += hist[d]!;
      if (acc >= want) return d;
    }
    return 65535;
  };
  const lo = pick(0.02);
  const hi = Math.max(lo + 1, pick(0.98));
  const n = STOPS.length - 1;
  for (let i = 0; i < depthMm.length; i++) {
    const d = depthMm[i]!;
    if (d === 0) continue;
    const x = Math.min(1, Math.max(0, (d - lo) / (hi - lo))) * n;
    const k = Math.min(n - 1, Math.floor(x));
    const f = x - k;
    const a = STOPS[k]!;
    const b = STOPS[k + 1]!;
    out[i * 3] = a[0] + (b[0] - a[0]) * f;
    out[i * 3 + 1] = a[1] + (b[1] - a[1]) * f;
    out[i * 3 + 2] = a[2] + (b[2] - a[2]) * f;
  }
  return out;
}
