import { describe, expect, it } from "vitest";
import { type Edge, fileCycles, layerViolations, productionEdges } from "./import-graph.ts";

describe("the import picture (DESIGN.md §1)", () => {
  const edges = productionEdges();

  it("reads the real sources", () => {
    expect(edges.length).toBeGreaterThan(100);
    expect(edges).toContainEqual({ from: "compose/compose.ts", to: "sim/sim-backend.ts" });
  });

  it("has no arrow up or sideways: gateway/ never imports sim/, drivers/ or compose/, and sim/ and drivers/ never import gateway/", () => {
    expect(layerViolations(edges)).toEqual([]);
  });

  it("has no file-level import cycle", () => expect(fileCycles(edges)).toEqual([]));

  it("the checker itself finds an arrow from gateway/ into sim/ and a cycle", () => {
    const bad: Edge[] = [
      { from: "gateway/x.ts", to: "sim/y.ts" },
      { from: "drivers/a.ts", to: "gateway/b.ts" },
      { from: "sim/a.ts", to: "drivers/b.ts" },
      { from: "cli/a.ts", to: "sim/b.ts" },
    ];
    expect(layerViolations(bad)).toEqual(bad.slice(0, 3));
    expect(
      fileCycles([
        { from: "a", to: "b" },
        { from: "b", to: "c" },
        { from: "c", to: "a" },
      ]),
    ).toEqual([["a", "b", "c"]]);
  });
});
