import { describe, expect, it } from "vitest";
import type { Vec3 } from "../../robots/math.ts";
import { demoWirePoints } from "./demo-scene.ts";
import type { Shape } from "./scene.ts";
import { meshFor, tessellate } from "./tessellate.ts";

const bent: Vec3[] = [
  [0, 0, 0],
  [0.1, 0, 0],
  [0.15, 0.05, 0.02],
  [0.15, 0.12, 0.02],
  [0.15, 0.12, 0.02], // repeated point is dropped
  [0.05, 0.14, -0.03],
];

const shapes: Record<string, Shape> = {
  sphere: { kind: "sphere", radiusM: 0.02 },
  capsule: { kind: "capsule", halfLengthM: 0.1, radiusM: 0.05 },
  box: { kind: "box", halfExtentsM: [0.3, 0.2, 0.01] },
  cylinder: { kind: "cylinder", halfLengthM: 0.05, radiusM: 0.008 },
  torus: { kind: "torus", majorRadiusM: 0.022, minorRadiusM: 0.002 },
  tubeBent: { kind: "tube", points: bent, radiusM: 0.0015 },
  tubeWire: { kind: "tube", points: demoWirePoints(), radiusM: 0.0015 },
};

describe("tessellate", () => {
  for (const [name, shape] of Object.entries(shapes)) {
    it(`${name}: closed, consistently wound outwards, within its bounding sphere`, () => {
      const m = tessellate(shape);
      const P = m.positionsM;
      const N = m.normals;
      const I = m.indices;
      expect(I.length % 3).toBe(0);
      // every directed edge once, and its reverse once: a closed, consistently oriented surface
      const edges = new Map<string, number>();
      for (let t = 0; t < I.length; t += 3) {
        for (let k = 0; k < 3; k++) {
          const a = I[t + k]!;
          const b = I[t + ((k + 1) % 3)]!;
          const key = `${pkey(P, a)}>${pkey(P, b)}`;
          edges.set(key, (edges.get(key) ?? 0) + 1);
        }
      }
      const problems: string[] = [];
      for (const [key, n] of edges) {
        const [a, b] = key.split(">");
        if (a === b) continue; // degenerate edge at a pole
        if (n !== 1 || edges.get(`${b}>${a}`) !== 1) problems.push(key);
      }
      expect(problems.slice(0, 5)).toEqual([]);
      // geometric normal agrees with the vertex normals
      let wrong = 0;
      for (let t = 0; t < I.length; t += 3) {
        const [a, b, c] = [I[t]!, I[t + 1]!, I[t + 2]!];
        const e1 = [0, 1, 2].map((k) => P[b * 3 + k]! - P[a * 3 + k]!);
        const e2 = [0, 1, 2].map((k) => P[c * 3 + k]! - P[a * 3 + k]!);
        const g = [
          e1[1]! * e2[2]! - e1[2]! * e2[1]!,
          e1[2]! * e2[0]! - e1[0]! * e2[2]!,
          e1[0]! * e2[1]! - e1[1]! * e2[0]!,
        ];
        const area = Math.hypot(g[0]!, g[1]!, g[2]!);
        if (area < 1e-12) continue;
        const nsum = [0, 1, 2].map((k) => N[a * 3 + k]! + N[b * 3 + k]! + N[c * 3 + k]!);
        if (g[0]! * nsum[0]! + g[1]! * nsum[1]! + g[2]! * nsum[2]! <= 0) wrong++;
      }
      expect(wrong).toBe(0);
      const [cx, cy, cz] = m.boundCentreM;
      for (let i = 0; i < P.length; i += 3) {
        expect(Math.hypot(P[i]! - cx, P[i + 1]! - cy, P[i + 2]! - cz)).toBeLessThanOrEqual(m.boundRadiusM);
      }
    });
  }

  it("mitres tube joints exactly: each ring vertex lies on both neighbouring cylinders", () => {
    const m = tessellate({ kind: "tube", points: demoWirePoints(), radiusM: 0.0015 });
    const line = m.lines[0]!.pointsM;
    const nPts = line.length / 3;
    expect(nPts).toBe(201);
    const P = m.positionsM;
    let worst = 0;
    for (let j = 0; j < nPts; j++) {
      for (let k = 0; k < 12; k++) {
        const i = (j * 12 + k) * 3;
        // distance to the infinite lines of the incoming and outgoing segments
        if (j > 0) worst = Math.max(worst, Math.abs(lineDist(P, i, line, j - 1) - 0.0015));
        if (j + 1 < nPts) worst = Math.max(worst, Math.abs(lineDist(P, i, line, j) - 0.0015));
      }
    }
    expect(worst).toBeLessThan(0.0015 * 0.01);
  });

  it("caches by shape identity", () => {
    const s: Shape = { kind: "sphere", radiusM: 1 };
    expect(meshFor(s)).toBe(meshFor(s));
    expect(meshFor({ ...s })).not.toBe(meshFor(s));
  });

  it("rejects bad dimensions", () => {
    expect(() => tessellate({ kind: "sphere", radiusM: 0 })).toThrow(/radiusM/);
    expect(() => tessellate({ kind: "tube", points: [[0, 0, 0]], radiusM: 0.001 })).toThrow(/two distinct/);
    expect(() => tessellate({ kind: "box", halfExtentsM: [1, Number.NaN, 1] })).toThrow(/halfExtentsM/);
  });
});

function pkey(P: Float32Array, i: number): string {
  return `${P[i * 3]},${P[i * 3 + 1]},${P[i * 3 + 2]}`;
}

function lineDist(P: Float32Array, i: number, L: Float32Array, s: number): number {
  const a = [L[s * 3]!, L[s * 3 + 1]!, L[s * 3 + 2]!];
  const b = [L[s * 3 + 3]!, L[s * 3 + 4]!, L[s * 3 + 5]!];
  const p = [P[i]!, P[i + 1]!, P[i + 2]!];
  const ab = [b[0]! - a[0]!, b[1]! - a[1]!, b[2]! - a[2]!];
  const ap = [p[0]! - a[0]!, p[1]! - a[1]!, p[2]! - a[2]!];
  const l2 = ab[0]! ** 2 + ab[1]! ** 2 + ab[2]! ** 2;
  const t = (ap[0]! * ab[0]! + ap[1]! * ab[1]! + ap[2]! * ab[2]!) / l2;
  return Math.hypot(ap[0]! - t * ab[0]!, ap[1]! - t * ab[1]!, ap[2]! - t * ab[2]!);
}
