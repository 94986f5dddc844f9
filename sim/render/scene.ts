/**
 * The render scene contract between the simulator (which owns object poses) and the
 * software rasterizer (which turns them into RGB + depth). Shapes are described in their
 * own object frame; `pose` places the object in the world frame. A shape object is
 * tessellated once and cached by identity, so the simulator keeps shapes and only updates poses.
 */
import type { Mat4, Vec3 } from "../../robots/math.ts";

/** 8-bit sRGB colour. */
export type Rgb = readonly [number, number, number];

export type Shape =
  | { kind: "sphere"; radiusM: number }
  /** capsule along the object z axis, centred on the origin */
  | { kind: "capsule"; halfLengthM: number; radiusM: number }
  /** box centred on the origin */
  | { kind: "box"; halfExtentsM: Vec3 }
  /** cylinder along the object z axis, centred on the origin */
  | { kind: "cylinder"; halfLengthM: number; radiusM: number }
  /** ring in the object xy plane around the z axis */
  | { kind: "torus"; majorRadiusM: number; minorRadiusM: number }
  /** a tube swept along a polyline (object frame), e.g. the buzz wire */
  | { kind: "tube"; points: readonly Vec3[]; radiusM: number }
  /**
   * a flat textured rectangle in the object xy plane, x from originM[0] to originM[0] + sizeM[0],
   * y likewise; texel column 0 at the low-x edge, row 0 at the low-y edge. One-sided: its face
   * is seen from −z (looking along +z, the ChArUco board frame's convention).
   */
  | {
      kind: "texturedPlane";
      originM: readonly [number, number];
      sizeM: readonly [number, number];
      texture: Texture;
    };

/** A greyscale texture (0 black … 255 white), row-major; the object's colour tints it. */
export interface Texture {
  width: number;
  height: number;
  grey: Uint8Array;
}

export interface SceneObject {
  /** stable id, e.g. "wire", "link3", "lamp" */
  id: string;
  shape: Shape;
  /** world ← object transform (row-major, see robots/math.ts); updated by the owner */
  pose: Mat4;
  color: Rgb;
  /** drawn unlit at full colour (e.g. a lit lamp) */
  emissive?: boolean;
  /** hidden objects are skipped */
  visible?: boolean;
}

export interface Scene {
  objects: SceneObject[];
  /** background colour */
  background: Rgb;
  /** direction *towards* the light, world frame (normalised by the renderer) */
  lightDir: Vec3;
}
