/**
 * Shape → triangle mesh, in the shape's own object frame. Every mesh is closed and wound
 * counter-clockwise seen from outside (outward normals), so the rasterizer may cull back faces.
 *
 * Detail is fixed per shape kind, chosen so that the buzz-wire scene stays round from a wrist
 * camera a few centimetres away (tube: 12 sides; torus: 48 × 12) while a full scene stays near
 * 15 k triangles. Tubes and tori also carry their centreline (`lines`), which the rasterizer
 * draws as a depth-tested 1-pixel line so that a wire thinner than a pixel never vanishes.
 *
 * `meshFor` caches by shape object identity (WeakMap): keep the shape object, change the pose.
 */
import type { Vec3 } from "../../robots/math.ts";
import type { Shape } from "./scene.ts";

/** A centreline drawn as a thin line in addition to the surface (for sub-pixel tubes). */
export interface MeshLine {
  /** centreline points, object frame, metres, xyz interleaved */
  pointsM: Float32Array;
  /** whether the last point connects back to the first */
  closed: boolean;
  /** tube radius, metres (for reference; the line itself is 1 px wide) */
  radiusM: number;
}

export interface Mesh {
  /** vertex positions, object frame, metres, xyz interleaved */
  positionsM: Float32Array;
  /** unit vertex normals, object frame, xyz interleaved */
  normals: Float32Array;
  /** triangle vertex indices, counter-clockwise seen from outside */
  indices: Uint32Array;
  /** bounding sphere centre in the object frame, metres */
  boundCentreM: Vec3;
  /** bounding sphere radius, metres */
  boundRadiusM: number;
  lines: MeshLine[];
  /** texture coordinates per vertex in level-0 texels (s along columns, t along rows), textured shapes only */
  uv?: Float32Array;
}

/** Tessellation detail (segment counts). */
export const DETAIL = {
  sphereLon: 24,
  sphereLat: 12,
  /** around the axis of capsules and cylinders */
  roundSides: 24,
  /** latitude rings per capsule hemisphere */
  capsuleCapRings: 5,
  tubeSides: 12,
  torusMajor: 48,
  torusMinor: 12,
} as const;

const cache = new WeakMap<Shape, Mesh>();

/** The mesh for a shape, tessellated on first use and cached by shape identity. */
export function meshFor(shape: Shape): Mesh {
  let m = cache.get(shape);
  if (m === undefined) {
    m = tessellate(shape);
    cache.set(shape, m);
  }
  return m;
}

/** Tessellate a shape (uncached). Throws on non-finite or non-positive dimensions. */
export function tessellate(shape: Shape): Mesh {
  switch (shape.kind) {
    case "sphere":
      checkPositive("radiusM", shape.radiusM);
      return sphere(shape.radiusM);
    case "capsule":
      checkPositive("radiusM", shape.radiusM);
      checkNonNegative("halfLengthM", shape.halfLengthM);
      return capsule(shape.halfLengthM, shape.radiusM);
    case "box":
      for (const h of shape.halfExtentsM) checkPositive("halfExtentsM", h);
      return box(shape.halfExtentsM);
    case "cylinder":
      checkPositive("radiusM", shape.radiusM);
      checkPositive("halfLengthM", shape.halfLengthM);
      return cylinder(shape.halfLengthM, shape.radiusM);
    case "torus":
      checkPositive("majorRadiusM", shape.majorRadiusM);
      checkPositive("minorRadiusM", shape.minorRadiusM);
      return torus(shape.majorRadiusM, shape.minorRadiusM);
    case "tube":
      checkPositive("radiusM", shape.radiusM);
      return tube(shape.points, shape.radiusM);
    case "texturedPlane":
      checkPositive("sizeM", shape.sizeM[0]);
      checkPositive("sizeM", shape.sizeM[1]);
      return texturedPlane(shape.originM, shape.sizeM, shape.texture.width, shape.texture.height);
  }
}

function checkPositive(name: string, v: number): void {
  if (!(Number.isFinite(v) && v > 0)) throw new Error(`shape ${name} must be finite and > 0, got ${v}`);
}
function checkNonNegative(name: string, v: number): void {
  if (!(Number.isFinite(v) && v >= 0)) throw new Error(`shape ${name} must be finite and ≥ 0, got ${v}`);
}

/** Growable mesh builder (setup time only). */
class Builder {
  readonly pos: number[] = [];
  readonly nrm: number[] = [];
  readonly idx: number[] = [];
  readonly lines: MeshLine[] = [];

  vertex(px: number, py: number, pz: number, nx: number, ny: number, nz: number): number {
    const n = Math.hypot(nx, ny, nz) || 1;
    this.pos.push(px, py, pz);
    this.nrm.push(nx / n, ny / n, nz / n);
    return this.pos.length / 3 - 1;
  }

  tri(a: number, b: number, c: number): void {
    this.idx.push(a, b, c);
  }

  /** quad a-b-c-d, counter-clockwise seen from outside */
  quad(a: number, b: number, c: number, d: number): void {
    this.idx.push(a, b, c, a, c, d);
  }

  /**
   * Connect ring i (start index s0) to ring i+1 (start s1), each with `n` vertices going
   * counter-clockwise around the local axis; the axis points from ring 0 towards ring 1.
   */
  band(s0: number, s1: number, n: number): void {
    for (let k = 0; k < n; k++) {
      const k1 = (k + 1) % n;
      this.quad(s0 + k, s0 + k1, s1 + k1, s1 + k);
    }
  }

  build(): Mesh {
    const positionsM = Float32Array.from(this.pos);
    let cx = 0;
    let cy = 0;
    let cz = 0;
    let minX = Infinity;
    let minY = Infinity;
    let minZ = Infinity;
    let maxX = -Infinity;
    let maxY = -Infinity;
    let maxZ = -Infinity;
    for (let i = 0; i < positionsM.length; i += 3) {
      const x = positionsM[i]!;
      const y = positionsM[i + 1]!;
      const z = positionsM[i + 2]!;
      minX = Math.min(minX, x);
      minY = Math.min(minY, y);
      minZ = Math.min(minZ, z);
      maxX = Math.max(maxX, x);
      maxY = Math.max(maxY, y);
      maxZ = Math.max(maxZ, z);
    }
    cx = (minX + maxX) / 2;
    cy = (minY + maxY) / 2;
    cz = (minZ + maxZ) / 2;
    let r = 0;
    for (let i = 0; i < positionsM.length; i += 3) {
      r = Math.max(r, Math.hypot(positionsM[i]! - cx, positionsM[i + 1]! - cy, positionsM[i + 2]! - cz));
    }
    return {
      positionsM,
      normals: Float32Array.from(this.nrm),
      indices: Uint32Array.from(this.idx),
      boundCentreM: [cx, cy, cz],
      // a little slack for float32 rounding and the mitre stretch of tubes
      boundRadiusM: r * 1.001 + 1e-6,
      lines: this.lines,
    };
  }
}

function sphere(r: number): Mesh {
  const b = new Builder();
  const nLon = DETAIL.sphereLon;
  const nLat = DETAIL.sphereLat;
  const south = b.vertex(0, 0, -r, 0, 0, -1);
  let prev = -1;
  for (let i = 1; i < nLat; i++) {
    const polar = Math.PI - (Math.PI * i) / nLat; // angle from +z axis
    const cz = Math.cos(polar);
    const sr = Math.sin(polar);
    const start = b.pos.length / 3;
    for (let k = 0; k < nLon; k++) {
      const a = (2 * Math.PI * k) / nLon;
      const nx = sr * Math.cos(a);
      const ny = sr * Math.sin(a);
      b.vertex(r * nx, r * ny, r * cz, nx, ny, cz);
    }
    if (prev < 0) {
      for (let k = 0; k < nLon; k++) b.tri(south, start + ((k + 1) % nLon), start + k);
    } else {
      b.band(prev, start, nLon);
    }
    prev = start;
  }
  const north = b.vertex(0, 0, r, 0, 0, 1);
  for (let k = 0; k < nLon; k++) b.tri(north, prev + k, prev + ((k + 1) % nLon));
  return b.build();
}

/** Capsule along z: hemisphere rings from the south pole up to the north pole. */
function capsule(h: number, r: number): Mesh {
  const b = new Builder();
  const n = DETAIL.roundSides;
  const nc = DETAIL.capsuleCapRings;
  const south = b.vertex(0, 0, -h - r, 0, 0, -1);
  let prev = -1;
  // rings: south hemisphere (polar π … π/2), then north hemisphere (π/2 … 0)
  const rings: { polar: number; zc: number }[] = [];
  for (let i = 1; i <= nc; i++) rings.push({ polar: Math.PI - (Math.PI / 2) * (i / nc), zc: -h });
  for (let i = 0; i < nc; i++) rings.push({ polar: (Math.PI / 2) * (1 - i / nc), zc: h });
  for (const { polar, zc } of rings) {
    const cz = Math.cos(polar);
    const sr = Math.sin(polar);
    const start = b.pos.length / 3;
    for (let k = 0; k < n; k++) {
      const a = (2 * Math.PI * k) / n;
      const nx = sr * Math.cos(a);
      const ny = sr * Math.sin(a);
      b.vertex(r * nx, r * ny, zc + r * cz, nx, ny, cz);
    }
    if (prev < 0) {
      for (let k = 0; k < n; k++) b.tri(south, start + ((k + 1) % n), start + k);
    } else {
      b.band(prev, start, n);
    }
    prev = start;
  }
  const north = b.vertex(0, 0, h + r, 0, 0, 1);
  for (let k = 0; k < n; k++) b.tri(north, prev + k, prev + ((k + 1) % n));
  return b.build();
}

function box(he: Vec3): Mesh {
  const b = new Builder();
  const [hx, hy, hz] = he;
  // each face: outward normal n, and two in-plane axes u, v with u × v = n
  const faces: [Vec3, Vec3, Vec3][] = [
    [
      [1, 0, 0],
      [0, 1, 0],
      [0, 0, 1],
    ],
    [
      [-1, 0, 0],
      [0, 0, 1],
      [0, 1, 0],
    ],
    [
      [0, 1, 0],
      [0, 0, 1],
      [1, 0, 0],
    ],
    [
      [0, -1, 0],
      [1, 0, 0],
      [0, 0, 1],
    ],
    [
      [0, 0, 1],
      [1, 0, 0],
      [0, 1, 0],
    ],
    [
      [0, 0, -1],
      [0, 1, 0],
      [1, 0, 0],
    ],
  ];
  for (const [n, u, v] of faces) {
    const s = b.pos.length / 3;
    for (const [su, sv] of [
      [-1, -1],
      [1, -1],
      [1, 1],
      [-1, 1],
    ] as const) {
      const x = (n[0] + su * u[0] + sv * v[0]) * hx;
      const y = (n[1] + su * u[1] + sv * v[1]) * hy;
      const z = (n[2] + su * u[2] + sv * v[2]) * hz;
      b.vertex(x, y, z, n[0], n[1], n[2]);
    }
    b.quad(s, s + 1, s + 2, s + 3);
  }
  return b.build();
}

function cylinder(h: number, r: number): Mesh {
  const b = new Builder();
  const n = DETAIL.roundSides;
  const ring = (z: number, normalZ: number): number => {
    const s = b.pos.length / 3;
    for (let k = 0; k < n; k++) {
      const a = (2 * Math.PI * k) / n;
      const c = Math.cos(a);
      const si = Math.sin(a);
      if (normalZ === 0) b.vertex(r * c, r * si, z, c, si, 0);
      else b.vertex(r * c, r * si, z, 0, 0, normalZ);
    }
    return s;
  };
  const side0 = ring(-h, 0);
  const side1 = ring(h, 0);
  b.band(side0, side1, n);
  const bottom = ring(-h, -1);
  const cb = b.vertex(0, 0, -h, 0, 0, -1);
  for (let k = 0; k < n; k++) b.tri(cb, bottom + ((k + 1) % n), bottom + k);
  const top = ring(h, 1);
  const ct = b.vertex(0, 0, h, 0, 0, 1);
  for (let k = 0; k < n; k++) b.tri(ct, top + k, top + ((k + 1) % n));
  return b.build();
}

function torus(R: number, r: number): Mesh {
  const b = new Builder();
  const nM = DETAIL.torusMajor;
  const nm = DETAIL.torusMinor;
  for (let i = 0; i < nM; i++) {
    const a = (2 * Math.PI * i) / nM;
    const ca = Math.cos(a);
    const sa = Math.sin(a);
    for (let k = 0; k < nm; k++) {
      // offset = cos p · radial + sin p · (−z): counter-clockwise about the tangent (−sa, ca, 0)
      const p = (2 * Math.PI * k) / nm;
      const cp = Math.cos(p);
      const sp = Math.sin(p);
      const nx = ca * cp;
      const ny = sa * cp;
      const nz = -sp;
      b.vertex((R + r * cp) * ca, (R + r * cp) * sa, r * nz, nx, ny, nz);
    }
  }
  for (let i = 0; i < nM; i++) b.band(i * nm, ((i + 1) % nM) * nm, nm);
  const pts = new Float32Array(nM * 3);
  for (let i = 0; i < nM; i++) {
    const a = (2 * Math.PI * i) / nM;
    pts[i * 3] = R * Math.cos(a);
    pts[i * 3 + 1] = R * Math.sin(a);
  }
  b.lines.push({ pointsM: pts, closed: true, radiusM: r });
  return b.build();
}

/**
 * A tube swept along a polyline with mitred joints: at each interior point the cross-section
 * lies in the plane bisecting the two segments (the exact intersection of both cylinders, so
 * joints neither gap nor overlap), oriented by a rotation-minimising (parallel-transport) frame
 * so the tube does not twist. Both ends are closed with flat caps.
 */
function tube(points: readonly Vec3[], r: number): Mesh {
  // drop repeated points
  const p: Vec3[] = [];
  for (const q of points) {
    if (!q.every(Number.isFinite)) throw new Error("tube points must be finite");
    const last = p[p.length - 1];
    if (last === undefined || Math.hypot(q[0] - last[0], q[1] - last[1], q[2] - last[2]) > 1e-9) p.push(q);
  }
  if (p.length < 2) throw new Error("tube needs at least two distinct points");
  const nSeg = p.length - 1;
  const tan: Vec3[] = [];
  for (let i = 0; i < nSeg; i++) tan.push(unit(sub(p[i + 1]!, p[i]!)));

  // initial normal: any unit vector perpendicular to the first tangent
  const t0 = tan[0]!;
  const helper: Vec3 = Math.abs(t0[0]) < 0.9 ? [1, 0, 0] : [0, 1, 0];
  let nrm = unit(cross(cross(t0, helper), t0));

  const b = new Builder();
  const n = DETAIL.tubeSides;
  const ringStarts: number[] = [];
  for (let j = 0; j <= nSeg; j++) {
    const tIn = tan[Math.max(0, j - 1)]!;
    const tOut = tan[Math.min(nSeg - 1, j)]!;
    // frame of the incoming segment at this joint (for j = 0 the outgoing one); `nrm` is its normal
    const tf = j === 0 ? tOut : tIn;
    const nf = nrm;
    const bf = cross(tf, nf);
    const d = unit(add(tIn, tOut));
    const cosHalf = Math.max(0.25, dot(tf, d)); // cap the mitre stretch at 4× on hairpin bends
    ringStarts.push(b.pos.length / 3);
    const pj = p[j]!;
    for (let k = 0; k < n; k++) {
      const a = (2 * Math.PI * k) / n;
      const ox = Math.cos(a) * nf[0] + Math.sin(a) * bf[0];
      const oy = Math.cos(a) * nf[1] + Math.sin(a) * bf[1];
      const oz = Math.cos(a) * nf[2] + Math.sin(a) * bf[2];
      // slide along the incoming tangent onto the mitre plane
      const s = (-(ox * d[0] + oy * d[1] + oz * d[2]) * r) / cosHalf;
      const qx = r * ox + s * tf[0];
      const qy = r * oy + s * tf[1];
      const qz = r * oz + s * tf[2];
      // normal: average of the two cylinders' normals at this point
      const q: Vec3 = [qx, qy, qz];
      const nIn = sub(q, scale(tIn, dot(q, tIn)));
      const nOut = sub(q, scale(tOut, dot(q, tOut)));
      const nn = add(unit(nIn), unit(nOut));
      b.vertex(pj[0] + qx, pj[1] + qy, pj[2] + qz, nn[0], nn[1], nn[2]);
    }
    if (j > 0 && j < nSeg) nrm = transport(nrm, tIn, tOut);
  }
  // ring k goes counter-clockwise about the tangent (n → b = t × n), axis from ring j to j+1
  for (let j = 0; j < nSeg; j++) b.band(ringStarts[j]!, ringStarts[j + 1]!, n);

  // flat caps with their own vertices
  const cap = (j: number, outward: Vec3): void => {
    const c = b.vertex(p[j]![0], p[j]![1], p[j]![2], outward[0], outward[1], outward[2]);
    const s = b.pos.length / 3;
    const src = ringStarts[j]!;
    for (let k = 0; k < n; k++) {
      const i = (src + k) * 3;
      b.vertex(b.pos[i]!, b.pos[i + 1]!, b.pos[i + 2]!, outward[0], outward[1], outward[2]);
    }
    const atStart = j === 0;
    for (let k = 0; k < n; k++) {
      const k1 = (k + 1) % n;
      if (atStart) b.tri(c, s + k1, s + k);
      else b.tri(c, s + k, s + k1);
    }
  };
  cap(0, scale(tan[0]!, -1));
  cap(nSeg, tan[nSeg - 1]!);

  const pts = new Float32Array(p.length * 3);
  for (let i = 0; i < p.length; i++) pts.set(p[i]!, i * 3);
  b.lines.push({ pointsM: pts, closed: false, radiusM: r });
  return b.build();
}

/** Rotate v by the minimal rotation that takes unit a to unit b. */
function transport(v: Vec3, a: Vec3, b: Vec3): Vec3 {
  const axis = cross(a, b);
  const s = Math.hypot(axis[0], axis[1], axis[2]);
  const c = dot(a, b);
  if (s < 1e-12) return c > 0 ? v : scale(v, -1);
  const k = scale(axis, 1 / s);
  // Rodrigues: v cosθ + (k × v) sinθ + k (k·v)(1 − cosθ)
  const kv = cross(k, v);
  const kd = dot(k, v) * (1 - c);
  return unit([
    v[0] * c + kv[0] * s + k[0] * kd,
    v[1] * c + kv[1] * s + k[1] * kd,
    v[2] * c + kv[2] * s + k[2] * kd,
  ]);
}

function sub(a: Vec3, b: Vec3): Vec3 {
  return [a[0] - b[0], a[1] - b[1], a[2] - b[2]];
}
function add(a: Vec3, b: Vec3): Vec3 {
  return [a[0] + b[0], a[1] + b[1], a[2] + b[2]];
}
function scale(a: Vec3, s: number): Vec3 {
  return [a[0] * s, a[1] * s, a[2] * s];
}
function dot(a: Vec3, b: Vec3): number {
  return a[0] * b[0] + a[1] * b[1] + a[2] * b[2];
}
function cross(a: Vec3, b: Vec3): Vec3 {
  return [a[1] * b[2] - a[2] * b[1], a[2] * b[0] - a[0] * b[2], a[0] * b[1] - a[1] * b[0]];
}
function unit(a: Vec3): Vec3 {
  const n = Math.hypot(a[0], a[1], a[2]);
  return n > 0 ? [a[0] / n, a[1] / n, a[2] / n] : [0, 0, 1];
}

/** Grid cells per side of a textured plane (small triangles keep the per-triangle mip level right). */
export const TEXTURED_PLANE_GRID = 16;

/** A one-sided rectangle facing −z, as a grid of triangles with texel coordinates. */
function texturedPlane(
  origin: readonly [number, number],
  size: readonly [number, number],
  texW: number,
  texH: number,
): Mesh {
  const N = TEXTURED_PLANE_GRID;
  const nv = (N + 1) * (N + 1);
  const pos = new Float32Array(nv * 3);
  const nrm = new Float32Array(nv * 3);
  const uv = new Float32Array(nv * 2);
  for (let j = 0; j <= N; j++) {
    for (let i = 0; i <= N; i++) {
      const k = j * (N + 1) + i;
      pos[k * 3] = origin[0] + (i / N) * size[0];
      pos[k * 3 + 1] = origin[1] + (j / N) * size[1];
      nrm[k * 3 + 2] = -1;
      uv[k * 2] = (i / N) * texW;
      uv[k * 2 + 1] = (j / N) * texH;
    }
  }
  const idx = new Uint32Array(N * N * 6);
  let t = 0;
  for (let j = 0; j < N; j++) {
    for (let i = 0; i < N; i++) {
      const a = j * (N + 1) + i;
      const b = a + 1;
      const c = a + N + 2;
      const d = a + N + 1;
      // counter-clockwise seen from −z
      idx.set([a, c, b, a, d, c], t);
      t += 6;
    }
  }
  const cx = origin[0] + size[0] / 2;
  const cy = origin[1] + size[1] / 2;
  return {
    positionsM: pos,
    normals: nrm,
    indices: idx,
    boundCentreM: [cx, cy, 0],
    boundRadiusM: Math.hypot(size[0], size[1]) / 2,
    lines: [],
    uv,
  };
}
