/**
 * Small dense linear algebra for the calibration solvers: symmetric eigen-decomposition
 * (cyclic Jacobi), linear solves (Gaussian elimination with partial pivoting), the rotation
 * vector ↔ matrix maps and the nearest rotation to a 3 × 3 matrix. Matrices are row-major
 * number[] (n × n); 3 × 3 rotations and Mat4 follow robots/math.ts.
 */
import { type Mat4, mat4Identity } from "../robots/math.ts";

/** Eigen-decomposition of a symmetric n × n matrix: values ascending, vectors[k] the k-th eigenvector. */
export function symmetricEigen(a: readonly number[], n: number): { values: number[]; vectors: number[][] } {
  const A = a.slice();
  const V = new Array<number>(n * n).fill(0);
  for (let i = 0; i < n; i++) V[i * n + i] = 1;
  for (let sweep = 0; sweep < 100; sweep++) {
    let off = 0;
    for (let p = 0; p < n; p++) for (let q = p + 1; q < n; q++) off += A[p * n + q]! ** 2;
    if (off < 1e-30) break;
    for (let p = 0; p < n; p++) {
      for (let q = p + 1; q < n; q++) {
        const apq = A[p * n + q]!;
        if (Math.abs(apq) < 1e-300) continue;
        const theta = (A[q * n + q]! - A[p * n + p]!) / (2 * apq);
        const t = Math.sign(theta || 1) / (Math.abs(theta) + Math.sqrt(theta * theta + 1));
        const c = 1 / Math.sqrt(t * t + 1);
        const s = t * c;
        for (let k = 0; k < n; k++) {
          const akp = A[k * n + p]!;
          const akq = A[k * n + q]!;
          A[k * n + p] = c * akp - s * akq;
          A[k * n + q] = s * akp + c * akq;
        }
        for (let k = 0; k < n; k++) {
          const apk = A[p * n + k]!;
          const aqk = A[q * n + k]!;
          A[p * n + k] = c * apk - s * aqk;
          A[q * n + k] = s * apk + c * aqk;
        }
        for (let k = 0; k < n; k++) {
          const vkp = V[k * n + p]!;
          const vkq = V[k * n + q]!;
          V[k * n + p] = c * vkp - s * vkq;
          V[k * n + q] = s * vkp + c * vkq;
        }
      }
    }
  }
  const idx = [...Array(n).keys()].sort((i, j) => A[i * n + i]! - A[j * n + j]!);
  return {
    values: idx.map((i) => A[i * n + i]!),
    vectors: idx.map((i) => [...Array(n).keys()].map((k) => V[k * n + i]!)),
  };
}

/** Solve A x = b (n × n, row-major) by Gaussian elimination with partial pivoting; null when singular. */
export function solveLinear(a: readonly number[], b: readonly number[], n: number): number[] | null {
  const M = a.slice();
  const x = b.slice();
  for (let c = 0; c < n; c++) {
    let piv = c;
    for (let r = c + 1; r < n; r++) if (Math.abs(M[r * n + c]!) > Math.abs(M[piv * n + c]!)) piv = r;
    if (Math.abs(M[piv * n + c]!) < 1e-300) return null;
    if (piv !== c) {
      for (let k = 0; k < n; k++) [M[c * n + k], M[piv * n + k]] = [M[piv * n + k]!, M[c * n + k]!];
      [x[c], x[piv]] = [x[piv]!, x[c]!];
    }
    for (let r = c + 1; r < n; r++) {
      const f = M[r * n + c]! / M[c * n + c]!;
      if (f === 0) continue;
      for (let k = c; k < n; k++) M[r * n + k]! -= f * M[c * n + k]!;
      x[r]! -= f * x[c]!;
    }
  }
  for (let r = n - 1; r >= 0; r--) {
    let s = x[r]!;
    for (let k = r + 1; k < n; k++) s -= M[r * n + k]! * x[k]!;
    x[r] = s / M[r * n + r]!;
  }
  return x;
}

/** Rotation vector (axis · angle, rad) → 3 × 3 rotation, row-major. */
export function rotvecToMat3(w: readonly number[]): number[] {
  const th = Math.hypot(w[0]!, w[1]!, w[2]!);
  if (th < 1e-12) return [1, -w[2]!, w[1]!, w[2]!, 1, -w[0]!, -w[1]!, w[0]!, 1];
  const [x, y, z] = [w[0]! / th, w[1]! / th, w[2]! / th];
  const c = Math.cos(th);
  const s = Math.sin(th);
  const C = 1 - c;
  return [
    c + x * x * C,
    x * y * C - z * s,
    x * z * C + y * s,
    y * x * C + z * s,
    c + y * y * C,
    y * z * C - x * s,
    z * x * C - y * s,
    z * y * C + x * s,
    c + z * z * C,
  ];
}

/** 3 × 3 rotation (row-major) → rotation vector, rad. */
export function mat3ToRotvec(R: readonly number[]): [number, number, number] {
  const cos = Math.max(-1, Math.min(1, (R[0]! + R[4]! + R[8]! - 1) / 2));
  const th = Math.acos(cos);
  const v: [number, number, number] = [R[7]! - R[5]!, R[2]! - R[6]!, R[3]! - R[1]!];
  if (th < 1e-9) return [v[0] / 2, v[1] / 2, v[2] / 2];
  if (Math.PI - th < 1e-6) {
    // near π: axis from the diagonal
    const ax = [
      Math.sqrt(Math.max(0, (R[0]! + 1) / 2)),
      Math.sqrt(Math.max(0, (R[4]! + 1) / 2)),
      Math.sqrt(Math.max(0, (R[8]! + 1) / 2)),
    ];
    if (R[1]! < 0) ax[1] = -ax[1]!;
    if (R[2]! < 0) ax[2] = -ax[2]!;
    return [ax[0]! * th, ax[1]! * th, ax[2]! * th];
  }
  const k = th / (2 * Math.sin(th));
  return [v[0] * k, v[1] * k, v[2] * k];
}

/** The rotation nearest to a 3 × 3 matrix with positive determinant (polar decomposition by iteration). */
export function nearestRotation(m: readonly number[]): number[] {
  let R = m.slice();
  for (let it = 0; it < 50; it++) {
    const inv = inverse3(R);
    if (!inv) break;
    // R ← (R + R⁻ᵀ) / 2
    const next = R.map((v, i) => (v + inv[(i % 3) * 3 + Math.floor(i / 3)]!) / 2);
    const d = next.reduce((s, v, i) => s + Math.abs(v - R[i]!), 0);
    R = next;
    if (d < 1e-14) break;
  }
  return R;
}

export function det3(m: readonly number[]): number {
  return (
    m[0]! * (m[4]! * m[8]! - m[5]! * m[7]!) -
    m[1]! * (m[3]! * m[8]! - m[5]! * m[6]!) +
    m[2]! * (m[3]! * m[7]! - m[4]! * m[6]!)
  );
}

function inverse3(m: readonly number[]): number[] | null {
  const d = det3(m);
  if (Math.abs(d) < 1e-300) return null;
  return [
    (m[4]! * m[8]! - m[5]! * m[7]!) / d,
    (m[2]! * m[7]! - m[1]! * m[8]!) / d,
    (m[1]! * m[5]! - m[2]! * m[4]!) / d,
    (m[5]! * m[6]! - m[3]! * m[8]!) / d,
    (m[0]! * m[8]! - m[2]! * m[6]!) / d,
    (m[2]! * m[3]! - m[0]! * m[5]!) / d,
    (m[3]! * m[7]! - m[4]! * m[6]!) / d,
    (m[1]! * m[6]! - m[0]! * m[7]!) / d,
    (m[0]! * m[4]! - m[1]! * m[3]!) / d,
  ];
}

/** Rigid Mat4 from a 3 × 3 rotation and a translation. */
export function rigid(R: readonly number[], t: readonly number[]): Mat4 {
  const m = mat4Identity();
  for (let r = 0; r < 3; r++) {
    for (let c = 0; c < 3; c++) m[r * 4 + c] = R[r * 3 + c]!;
    m[r * 4 + 3] = t[r]!;
  }
  return m;
}

/** The rotation part of a Mat4, row-major 3 × 3. */
export function rotationOf(m: Mat4): number[] {
  return [m[0]!, m[1]!, m[2]!, m[4]!, m[5]!, m[6]!, m[8]!, m[9]!, m[10]!];
}

/** Angle between the rotations of two rigid transforms, rad. */
export function rotationAngle(a: Mat4, b: Mat4): number {
  // trace(Raᵀ Rb)
  let tr = 0;
  for (let r = 0; r < 3; r++) for (let c = 0; c < 3; c++) tr += a[r * 4 + c]! * b[r * 4 + c]!;
  return Math.acos(Math.max(-1, Math.min(1, (tr - 1) / 2)));
}
