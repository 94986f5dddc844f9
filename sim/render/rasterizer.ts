/**
 * Software z-buffer rasterizer for the simulator's cameras: a render `Scene` plus a camera
 * pose → an RGB image and a depth image.
 *
 * ```ts
 * const r = new Rasterizer(camera);                  // CameraDescription (or just its intrinsics)
 * const out = r.createTarget();                      // { rgb, depthMm } — allocate once
 * r.render(scene, worldFromCamera, out);             // every frame, no allocation
 * ```
 *
 * Conventions
 * - Camera frame: OpenCV pinhole (x right, y down, z forward); pixel (u, v) has its centre at
 *   integer coordinates, u = fx·X/Z + cx, v = fy·Y/Z + cy.
 * - `worldFromCamera`: row-major Mat4 (robots/math.ts), world ← camera optical frame. The caller
 *   computes it (fixed camera: its pose; wrist camera: tool pose · camera pose).
 * - Output `rgb`: Uint8Array, width·height·3, row-major, RGB. `depthMm`: Uint16Array,
 *   width·height, millimetres along the camera z axis (not along the ray), 0 = no surface;
 *   surfaces beyond 65.535 m read 65535.
 *
 * Method
 * - Shapes are tessellated once, cached by shape identity (tessellate.ts); each frame the
 *   vertices are moved by camera ← object, objects outside the view frustum are skipped.
 * - Triangles crossing the near plane (`nearM`) are clipped against it (1 triangle → 1 or 2);
 *   back faces are culled (every mesh is closed); depth is interpolated as 1/z, which is affine
 *   in screen space, so depth is perspective-correct. Shading is Gouraud Lambert with an
 *   ambient term (`ambient`), light from `scene.lightDir`, interpolated in screen space
 *   and quantised to 256 levels; emissive objects are drawn at full colour. The fill loop
 *   stores 1/z and one word per pixel (object slot · 256 + shade); a final pass turns them
 *   into RGB through a per-frame colour table and into millimetres.
 * - Objects are drawn front to back (by bounding-sphere centre depth) so hidden pixels fail
 *   the depth test early; equal depths keep the earlier-drawn surface.
 * - Tubes and tori also draw their centreline as a depth-tested 1-pixel line at the
 *   centreline's depth: hidden behind the tube's own surface when the tube is wider than a
 *   pixel, and keeping a 1.5 mm wire visible when it projects below one pixel.
 * - Lens distortion: when any of k1 k2 p1 p2 k3 is non-zero, the scene is drawn into a larger
 *   ideal pinhole image and remapped per pixel (colour bilinear, depth nearest) with a map precomputed in
 *   the constructor (calibration/distortion.ts, ./distortion.ts); when all are zero there is no remap.
 * - Deterministic: the same scene and camera give bit-identical output (no randomness, fixed
 *   iteration order, no time-dependent state).
 *
 * `render` runs in the simulator's capture path: it allocates nothing once the vertex scratch
 * and colour table have grown to the scene (first frame). Measured with bench/render.ts.
 * Not thread-safe: one Rasterizer per camera (or per worker).
 */
import { type Mat4, mat4Mul, mat4RigidInverse } from "../../robots/math.ts";
import type { CameraDescription } from "../../seam/types.ts";
import { parseDistortion } from "../../calibration/distortion.ts";
import { buildRemap } from "./distortion.ts";
import { createMotionKernel, MAX_SLOTS, MOTION_TILE, type MotionKernel } from "./motion-simd.ts";
import type { Scene, Texture } from "./scene.ts";
import { type Mesh, meshFor } from "./tessellate.ts";
import { type MipLevel, mipPyramid, sampleBilinear } from "./texture.ts";

/** The part of a camera description the rasterizer needs. */
export type RasterCamera = Pick<
  CameraDescription,
  "width" | "height" | "fx" | "fy" | "cx" | "cy" | "distortion"
>;

/** Caller-owned output buffers. */
export interface RenderTarget {
  /** width·height·3 bytes, row-major RGB */
  rgb: Uint8Array;
  /** width·height, millimetres along the camera z axis, 0 = no surface */
  depthMm: Uint16Array;
}

/**
 * A per-tile summary of a motion field (Rasterizer.motionField): tiles of `size` × `size` px,
 * row-major (`cols` × `rows`); per tile the squared length `l2` and the vector (`vx`, `vy`) of its
 * longest displacement (the first in scan order; 0 where there is none), `slot` the only
 * colour-table slot drawn in it (−1: more than one), `least` its least reach; `reach` per pixel.
 * The buffers are (re)sized by motionField.
 */
export interface MotionTiles {
  size: number;
  cols: number;
  rows: number;
  l2: Float32Array;
  vx: Float32Array;
  vy: Float32Array;
  slot: Int32Array;
  /** per pixel: the length of its displacement in 1/REACH_PER_PX px, floored, at most REACH_MAX;
   * zero outside `rect` (x0, x1, y0, y1 px: what the last call wrote); the rasterizer's buffer,
   * valid until its next motionField */
  reach: Uint16Array;
  /** per tile: the least `reach` of its pixels (0 where any pixel of it is still), so that a tile
   * whose neighbourhood all moves far enough can skip per-sample tests (motion-blur.ts) */
  least: Int32Array;
  /** per tile: 1 where `reach` holds its pixels' values; 0: a tile from a linear model whose
   * pixels' reach `fillReach` writes when asked (the tile's record is set either way) */
  ready: Uint8Array;
  /** writes the reach of the tiles marked 1 in `need` (cols × rows) that are not ready, valid
   * until the next motionField (null: every tile ready) */
  fillReach: ((need: Uint8Array) => void) | null;
  rect: [number, number, number, number];
}

/** MotionTiles.reach's unit: 1/64 px */
export const REACH_PER_PX = 64;
/** MotionTiles.reach's largest value (1024 px less one unit; a threshold of 65535 is never met) */
export const REACH_MAX = 65534;

export interface RasterizerOptions {
  /** near clipping plane, metres along camera z (default 0.01) */
  nearM?: number;
  /** ambient share of the Lambert shading, 0…1 (default 0.35) */
  ambient?: number;
  /** draw tube / torus centrelines so sub-pixel wires stay visible (default true) */
  thinLines?: boolean;
}

/** inclusive tolerance (pixels) at triangle edges, so shared edges never leave cracks */
const EDGE_EPS = 1e-3;

export class Rasterizer {
  /** output size, pixels */
  readonly width: number;
  readonly height: number;
  readonly nearM: number;
  readonly ambient: number;
  readonly thinLines: boolean;

  // ideal pinhole image that triangles are drawn into (= output when undistorted)
  private readonly iw: number;
  private readonly ih: number;
  private readonly fx: number;
  private readonly fy: number;
  private readonly cx: number;
  private readonly cy: number;
  /** per ideal pixel: 1/z (1/m) of the nearest surface, 0 = none */
  private readonly invZ: Float32Array;
  /**
   * per ideal pixel: slot·256 + shade (0…255) of the nearest surface; valid where invZ > 0.
   * The colour is looked up in `lut` when resolving, so the fill loop stores one word.
   */
  private readonly shade: Uint32Array;
  /** colour table: slot·256 + shade → packed RGB (r | g << 8 | b << 16); slot 0 is the background */
  private lut = new Uint32Array(256);
  private readonly remap: Int32Array | null;
  /** bilinear lens remap: up-left ideal pixel and fractional offsets per output pixel */
  private readonly remapBase: Int32Array | null;
  private readonly remapFrac: Float32Array | null;
  /** view-frustum side planes (unit normals through the camera centre), 4 × xyz */
  private readonly planes = new Float64Array(12);

  // per-frame scratch
  private readonly camFromWorld = new Float64Array(16);
  private readonly camFromObj = new Float64Array(16);
  private vx = new Float64Array(0);
  private vy = new Float64Array(0);
  private vz = new Float64Array(0);
  private vu = new Float64Array(0);
  private vv = new Float64Array(0);
  private vi = new Float64Array(0);
  private vw = new Float64Array(0);
  /** unit light direction: world frame (light[0..2]) and current object frame (light[3..5]) */
  private readonly light = new Float64Array(6);
  /** line segment scratch: camera-frame endpoints a, b and shade (doubles passed as arguments get boxed) */
  private readonly seg = new Float64Array(7);
  /** first scratch vertex slot for near-plane clipping output (4 slots) */
  private clipBase = 0;
  /** clipped polygon scratch: up to 4 vertices × (x, y, z, intensity) */
  private readonly clip = new Float64Array(16);
  private readonly clipIn = new Float64Array(12);
  private own: RenderTarget | null = null;
  /** draw order (front to back by bounding-sphere depth) and its keys */
  private order = new Int32Array(0);
  private orderKey = new Float64Array(0);

  /** motionField's pixel pass in WebAssembly SIMD (null: not available, or a lens remap) */
  private readonly motionKernel: MotionKernel | null;
  /**
   * false: motionField's pixel pass in JS (the reference) even where the kernel would run; the
   * same reach and tiles either way (motion-simd.test.ts)
   */
  motionSimd = true;
  /** which pass computed the last motionField ("none": nothing moved), for tests */
  lastMotionPass: "kernel" | "js" | "none" = "none";
  /** the tiles of the last motionField taken from the linear model, for tests */
  lastLinearTiles = 0;

  /** whether motionField's pixel pass can run in the kernel (WebAssembly SIMD there, no lens remap) */
  get motionKernelReady(): boolean {
    return this.motionKernel !== null;
  }
  /** motionBound's ρ: the tangent of the view's half-diagonal, ×1.1 (set in the constructor: Math.hypot allocates) */
  private readonly viewRho: number;

  /**
   * An upper bound of slot `sl`'s image motion between a and b, px: its bounding sphere's points
   * move by at most |T·c − c| + θ·r (T's rotation angle θ) at either end; a point moving by d at a
   * depth of at least z, seen within ρ of the axis, moves by at most f · d · √(1 + ρ²) / z px.
   */
  private motionBound(sl: number, toA: Float64Array, toB: Float64Array): number {
    const S = this.objSphere;
    const o = 4 * sl;
    if (o + 3 >= S.length) return Number.POSITIVE_INFINITY;
    const cx = S[o]!;
    const cy = S[o + 1]!;
    const cz = S[o + 2]!;
    const r = S[o + 3]!;
    let d = 0;
    let dMax = 0;
    for (let e = 0; e < 2; e++) {
      const T = e === 0 ? toA : toB;
      const b = 16 * sl;
      const mx = T[b]! * cx + T[b + 1]! * cy + T[b + 2]! * cz + T[b + 3]! - cx;
      const my = T[b + 4]! * cx + T[b + 5]! * cy + T[b + 6]! * cz + T[b + 7]! - cy;
      const mz = T[b + 8]! * cx + T[b + 9]! * cy + T[b + 10]! * cz + T[b + 11]! - cz;
      const cos = Math.max(-1, Math.min(1, (T[b]! + T[b + 5]! + T[b + 10]! - 1) / 2));
      const de = Math.sqrt(mx * mx + my * my + mz * mz) + Math.acos(cos) * r;
      d += de;
      dMax = Math.max(dMax, de);
    }
    const zMin = cz - r - dMax;
    if (!(zMin > this.nearM)) return Number.POSITIVE_INFINITY;
    // |Δ(x/z, y/z)| ≤ (|Δxy| + ρ·|Δz|) / z ≤ |ΔX| · √(1 + ρ²) / z, ρ the tangent of the view's
    // half-diagonal (points in view at the rendered instant), ×1.1 for the ends of the interval
    const f = Math.max(this.fx, this.fy);
    const rho = this.viewRho;
    return (f * d * Math.sqrt(1 + rho * rho)) / zMin;
  }

  /** per slot of the last render: the ideal-image rectangle (u0, u1, v0, v1) it may cover */
  private objBox = new Float64Array(4);
  /** per slot of the last render: its bounding sphere in the camera frame (x, y, z, r) */
  private objSphere = new Float64Array(4);
  /** motionField's per-slot transforms in pixel form (two ends × three rows × four, f64) */
  private motionM = new Float64Array(0);
  /** motionField's per-slot rows za, ua, va, dz, du, dv (four coefficients each, f32) */
  private motionMf = new Float32Array(0);
  /** motionField's per slot: 1 = moving (index `slots`: 0) */
  private motionFlags = new Uint8Array(1);
  /** motionField's reach buffer (the kernel's where there is one) and the rectangle last written to it */
  private readonly reachBuf: Uint16Array;
  private readonly reachRect = new Int32Array(4);
  /** motionField's tiles' ready flags: all 1 (the JS pass), the kernel's (a view) */
  private readyJs = new Uint8Array(0);
  private readyKernel: Uint8Array | null = null;
  /** the kernel's last pass: slots, cols, tx0, tx1, ty0, ty1 (for fillReach) */
  private readonly lastRun = new Int32Array(6);
  /** motionTiles' scratch: a tile's linear model (tileModel), [8] the linear tiles counted, [9] [10] its 1/z range */
  private readonly motionLin = new Float64Array(11);
  /**
   * motionField's tolerance for the linear model of a tile, px: a tile of one moving surface
   * whose field a first-order expansion about its centre reproduces within this (a bound on the
   * expansion's remainder) takes the expansion's values; the others are computed per pixel
   */
  motionLinearTolPx = LINEAR_TOL_PX;

  /** colour-table slot of the object being drawn, ·256 */
  private slotBase = 0;

  constructor(camera: RasterCamera, options: RasterizerOptions = {}) {
    const { width, height, fx, fy, cx, cy } = camera;
    if (!(Number.isInteger(width) && Number.isInteger(height) && width > 0 && height > 0)) {
      throw new Error(`camera size must be positive integers, got ${width}×${height}`);
    }
    for (const [k, v] of Object.entries({ fx, fy, cx, cy })) {
      if (!Number.isFinite(v)) throw new Error(`camera ${k} must be finite`);
    }
    if (!(fx > 0 && fy > 0)) throw new Error("camera fx and fy must be > 0");
    this.width = width;
    this.height = height;
    this.nearM = options.nearM ?? 0.01;
    if (!(this.nearM > 0)) throw new Error("nearM must be > 0");
    this.ambient = options.ambient ?? 0.35;
    this.thinLines = options.thinLines ?? true;
    this.fx = fx;
    this.fy = fy;
    const dist = parseDistortion(camera.distortion);
    if (dist === null) {
      this.iw = width;
      this.ih = height;
      this.cx = cx;
      this.cy = cy;
      this.remap = null;
      this.remapBase = null;
      this.remapFrac = null;
    } else {
      const m = buildRemap(camera, dist);
      this.iw = m.idealWidth;
      this.ih = m.idealHeight;
      this.cx = m.idealCx;
      this.cy = m.idealCy;
      this.remap = m.source;
      this.remapBase = m.base;
      this.remapFrac = m.frac;
    }
    this.viewRho =
      1.1 *
      Math.hypot(
        Math.max(this.cx, this.iw - this.cx) / this.fx,
        Math.max(this.cy, this.ih - this.cy) / this.fy,
      );
    // without a lens remap, motionField's pixel pass runs in WebAssembly SIMD where available:
    // the 1/z and word buffers live in its memory, where a render writes them
    this.motionKernel =
      this.remap === null
        ? createMotionKernel(this.iw * this.ih, Math.ceil(width / 8) * Math.ceil(height / 8))
        : null;
    this.invZ = this.motionKernel ? this.motionKernel.invZ : new Float32Array(this.iw * this.ih);
    this.shade = this.motionKernel ? this.motionKernel.shade : new Uint32Array(this.iw * this.ih);
    this.reachBuf = this.motionKernel ? this.motionKernel.reach : new Uint16Array(width * height);
    // side planes: u ≥ -0.5, u ≤ W-0.5, v ≥ -0.5, v ≤ H-0.5, as n·X ≥ 0
    const raw = [
      [this.fx, 0, this.cx + 0.5],
      [-this.fx, 0, this.iw - 0.5 - this.cx],
      [0, this.fy, this.cy + 0.5],
      [0, -this.fy, this.ih - 0.5 - this.cy],
    ];
    raw.forEach((p, k) => {
      const n = Math.hypot(p[0]!, p[1]!, p[2]!);
      this.planes[k * 3] = p[0]! / n;
      this.planes[k * 3 + 1] = p[1]! / n;
      this.planes[k * 3 + 2] = p[2]! / n;
    });
  }

  /** Allocate a pair of output buffers of this camera's size. */
  createTarget(): RenderTarget {
    return {
      rgb: new Uint8Array(this.width * this.height * 3),
      depthMm: new Uint16Array(this.width * this.height),
    };
  }

  /**
   * Render the scene seen from `worldFromCamera` into `out` (or into buffers owned by this
   * rasterizer, overwritten by the next call) and return them. Allocation-free per frame.
   * Throws if `out` has the wrong size.
   */
  render(scene: Scene, worldFromCamera: Mat4, out?: RenderTarget): RenderTarget {
    const target = out ?? (this.own ??= this.createTarget());
    const n = this.width * this.height;
    if (target.rgb.length !== n * 3 || target.depthMm.length !== n) {
      throw new Error(`render target must be ${this.width}×${this.height} (rgb ×3, depth ×1)`);
    }
    mat4RigidInverse(worldFromCamera, this.camFromWorld);
    this.invZ.fill(0);

    const objects = scene.objects;
    const no = objects.length;
    if (this.order.length < no) {
      this.order = new Int32Array(no);
      this.orderKey = new Float64Array(no);
    }
    if (this.lut.length < (no + 1) * 256) this.lut = new Uint32Array((no + 1) * 256);
    // image rectangles of the drawn objects (empty until drawn; the background: all)
    if (this.objBox.length < (no + 1) * 4) {
      this.objBox = new Float64Array((no + 1) * 4);
      this.objSphere = new Float64Array((no + 1) * 4);
    }
    this.objBox.fill(0);
    this.objBox[1] = this.iw;
    this.objBox[3] = this.ih;
    const lut = this.lut;
    const bgc = scene.background;
    lut[0] = packRgb(bgc[0], bgc[1], bgc[2]);

    // front-to-back order by the camera z of each bounding-sphere centre (ties: list order),
    // so that hidden pixels fail the depth test early; insertion sort, no allocation
    const C = this.camFromWorld;
    const order = this.order;
    const key = this.orderKey;
    for (let i = 0; i < no; i++) {
      const o = objects[i]!;
      const c = meshFor(o.shape).boundCentreM;
      const p = o.pose;
      const wx = p[0]! * c[0] + p[1]! * c[1] + p[2]! * c[2] + p[3]!;
      const wy = p[4]! * c[0] + p[5]! * c[1] + p[6]! * c[2] + p[7]!;
      const wz = p[8]! * c[0] + p[9]! * c[1] + p[10]! * c[2] + p[11]!;
      const z = C[8]! * wx + C[9]! * wy + C[10]! * wz + C[11]!;
      let j = i;
      while (j > 0 && key[j - 1]! > z) {
        key[j] = key[j - 1]!;
        order[j] = order[j - 1]!;
        j--;
      }
      key[j] = z;
      order[j] = i;
    }

    const lw = scene.lightDir;
    const ln = Math.sqrt(lw[0] * lw[0] + lw[1] * lw[1] + lw[2] * lw[2]) || 1;
    this.light[0] = lw[0] / ln;
    this.light[1] = lw[1] / ln;
    this.light[2] = lw[2] / ln;
    for (let k = 0; k < no; k++) {
      const i = order[k]!;
      const obj = objects[i]!;
      if (obj.visible === false) continue;
      // colour table for this object: shade s (0…255) → colour · s / 255
      const slot = i + 1;
      const base = slot * 256;
      const col = obj.color;
      const r = col[0];
      const g = col[1];
      const b = col[2];
      for (let sh = 0; sh < 256; sh++)
        lut[base + sh] = packRgb((r * sh) / 255, (g * sh) / 255, (b * sh) / 255);
      this.slotBase = slot * 256;
      this.drawObject(
        meshFor(obj.shape),
        obj.pose,
        obj.emissive === true,
        obj.shape.kind === "texturedPlane" ? obj.shape.texture : null,
      );
    }
    this.resolve(target);
    return target;
  }

  /**
   * The image motion of the last render's pixels (motion blur, sim/sensors/motion-blur.ts): per
   * output pixel, the displacement in px from where its surface point is seen at an instant a to
   * where it is seen at an instant b. Per colour-table slot (0: the background, i + 1:
   * `scene.objects[i]` of the last render), `toA` and `toB` hold the row-major 4 × 4 transforms
   * (16 numbers a slot) camera at a ← rendered camera and camera at b ← rendered camera of that
   * slot's points (camera ← world at a · world ← object at a · (world ← object now)⁻¹ · world ←
   * camera now); the background is at infinity (only the rotation acts on it). Slots with
   * `moving[slot]` 0 get 0 without arithmetic. With lens distortion the displacement is the one in
   * the ideal pinhole image at the pixel's source. Writes every pixel of `dx`, `dy` (null: not
   * wanted; the blur needs only the lengths) and, with `tiles`, each pixel's reach and a summary
   * per tile (the longest displacement, the least reach, and the one slot drawn in it or −1) in
   * the same pass. With `ignoreBelowPx` > 0, a slot whose image motion is certainly below it (a
   * bound from its bounding sphere's motion) is taken as still. Returns the number of pixels of
   * moving slots. No allocation after the first call with a slot count.
   *
   * Arithmetic (motionTiles below; its kernel, motion-simd.ts, gives the same bits): per slot, the
   * maps of (u, v, 1, 1/z) to the homogeneous image point at a (za, ua, va) and to its change from
   * a to b (dz, du, dv), rounded to 32-bit floats; per pixel those six in 32-bit float operations,
   * the displacement (du·za − ua·dz, dv·za − va·dz) / (za·zb) (the difference of the two
   * projections without subtracting two image positions: its rounding error is ~1e-6 px, not the
   * 1e-4 px of ub/zb − ua/za in 32 bits), its length √(dx² + dy²) and reach ⌊64 · length⌋.
   */
  motionField(
    toA: Float64Array,
    toB: Float64Array,
    moving: Uint8Array,
    dx: Float32Array | null,
    dy: Float32Array | null,
    tiles: MotionTiles | null = null,
    ignoreBelowPx = 0,
  ): number {
    const ow = this.width;
    const oh = this.height;
    const n = ow * oh;
    if ((dx !== null && dx.length < n) || (dy !== null && dy.length < n))
      throw new Error(`motion field buffers must hold ${n} pixels`);
    const slots = moving.length;
    // slots whose image motion is certainly below `ignoreBelowPx` are taken as still
    if (this.motionFlags.length < slots + 1) this.motionFlags = new Uint8Array(slots + 1);
    const vf = this.motionFlags;
    for (let sl = 0; sl < slots; sl++)
      vf[sl] =
        moving[sl] !== 0 && !(sl > 0 && ignoreBelowPx > 0 && this.motionBound(sl, toA, toB) < ignoreBelowPx)
          ? 1
          : 0;
    vf[slots] = 0;
    // per moving slot, the transforms as maps of (u, v, 1, 1/z) to (u·Z', v·Z', Z') at a and b:
    // K · T[0..2] · (K⁻¹ on u, v); then the f32 rows za, ua, va at a and dz, du, dv (b − a)
    if (this.motionM.length < 24 * slots) {
      this.motionM = new Float64Array(24 * slots);
      this.motionMf = new Float32Array(24 * slots);
    }
    const M = this.motionM;
    const Mf = this.motionMf;
    const fx = this.fx;
    const fy = this.fy;
    const cx = this.cx;
    const cy = this.cy;
    for (let s = 0; s < slots; s++) {
      if (vf[s] === 0) continue;
      for (let e = 0; e < 2; e++) {
        const T = e === 0 ? toA : toB;
        const o = s * 16;
        const d = s * 24 + e * 12;
        for (let r = 0; r < 3; r++) {
          // row r of K · T: fx·T0 + cx·T2, fy·T1 + cy·T2, T2
          const k0 = r === 0 ? fx : 0;
          const k1 = r === 1 ? fy : 0;
          const k2 = r === 0 ? cx : r === 1 ? cy : 1;
          const row = d + 4 * r;
          for (let c = 0; c < 4; c++) M[row + c] = k0 * T[o + c]! + k1 * T[o + 4 + c]! + k2 * T[o + 8 + c]!;
          const a0 = M[row]!;
          const a1 = M[row + 1]!;
          M[row] = a0 / fx;
          M[row + 1] = a1 / fy;
          M[row + 2] = M[row + 2]! - (a0 * cx) / fx - (a1 * cy) / fy;
        }
      }
      // rows of Mf: za, ua, va (a's z, u, v rows), dz, du, dv (b's minus a's)
      for (let k = 0; k < 3; k++) {
        const ra = s * 24 + 4 * ((k + 2) % 3);
        for (let c = 0; c < 4; c++) {
          Mf[s * 24 + 4 * k + c] = M[ra + c]!;
          Mf[s * 24 + 4 * (k + 3) + c] = M[ra + 12 + c]! - M[ra + c]!;
        }
      }
    }
    // only the rectangle the moving slots can cover (whole tiles; all of it with lens distortion)
    let u0 = ow;
    let u1 = 0;
    let v0 = oh;
    let v1 = 0;
    const B = this.objBox;
    for (let sl = 0; sl < slots; sl++) {
      if (vf[sl] === 0 || 4 * sl + 3 >= B.length || !(B[4 * sl + 1]! > B[4 * sl]!)) continue;
      u0 = Math.min(u0, B[4 * sl]!);
      u1 = Math.max(u1, B[4 * sl + 1]!);
      v0 = Math.min(v0, B[4 * sl + 2]!);
      v1 = Math.max(v1, B[4 * sl + 3]!);
    }
    if (this.remap !== null && u1 > u0) {
      u0 = 0;
      u1 = ow;
      v0 = 0;
      v1 = oh;
    }
    dx?.fill(0, 0, n);
    dy?.fill(0, 0, n);
    const ts = tiles ? tiles.size : ow;
    const cols = Math.ceil(ow / ts);
    const rows = Math.ceil(oh / ts);
    // this rasterizer's reach buffer (the kernel's, where there is one) is zero outside the
    // rectangle motionField last wrote into it (its only writer; every pixel inside is written,
    // or, in a linear tile, by fillReach): that one is cleared where the new one does not cover it
    const k = this.motionKernel;
    const old = this.reachRect;
    const ox0 = old[0]!;
    const ox1 = old[1]!;
    const oy0 = old[2]!;
    const oy1 = old[3]!;
    old.fill(0);
    if (tiles) {
      tiles.reach = this.reachBuf;
      tiles.rect.fill(0);
      tiles.fillReach = null;
      const nt = cols * rows;
      if (this.readyJs.length !== nt) {
        this.readyJs = new Uint8Array(nt).fill(1);
        this.readyKernel =
          k !== null && nt <= k.ready.length ? new Uint8Array(k.ready.buffer, k.ready.byteOffset, nt) : null;
      }
      tiles.ready = this.readyJs;
      if (tiles.l2.length !== nt) {
        tiles.l2 = new Float32Array(nt);
        tiles.vx = new Float32Array(nt);
        tiles.vy = new Float32Array(nt);
        tiles.slot = new Int32Array(nt);
        tiles.least = new Int32Array(nt);
      }
      tiles.cols = cols;
      tiles.rows = rows;
      // outside the rectangle: no motion, slots not looked at (−1: not known to be one surface)
      tiles.l2.fill(0);
      tiles.least.fill(0);
      tiles.slot.fill(-1);
    }
    const tx0 = Math.max(0, Math.floor((u0 - 1) / ts));
    const tx1 = Math.min(cols, Math.ceil((u1 + 1) / ts));
    const ty0 = Math.max(0, Math.floor((v0 - 1) / ts));
    const ty1 = Math.min(rows, Math.ceil((v1 + 1) / ts));
    if (!(u1 > u0 && v1 > v0) || tx1 <= tx0 || ty1 <= ty0) {
      if (tiles) clearOutside(this.reachBuf, ow, ox0, ox1, oy0, oy1, 0, 0, 0, 0);
      else keepRect(old, ox0, ox1, oy0, oy1);
      this.lastMotionPass = "none";
      this.lastLinearTiles = 0;
      return 0;
    }
    const x0 = tx0 * ts;
    const x1 = Math.min(ow, tx1 * ts);
    const y0 = ty0 * ts;
    const y1 = Math.min(oh, ty1 * ts);
    if (tiles) {
      clearOutside(this.reachBuf, ow, ox0, ox1, oy0, oy1, x0, x1, y0, y1);
      old[0] = x0;
      old[1] = x1;
      old[2] = y0;
      old[3] = y1;
      const rect = tiles.rect;
      rect[0] = x0;
      rect[1] = x1;
      rect[2] = y0;
      rect[3] = y1;
    } else keepRect(old, ox0, ox1, oy0, oy1);
    if (
      k !== null &&
      this.motionSimd &&
      tiles !== null &&
      dx === null &&
      dy === null &&
      ts === MOTION_TILE &&
      ow % 4 === 0 &&
      slots <= MAX_SLOTS &&
      this.readyKernel !== null &&
      tiles.l2.length <= k.tSlot.length
    ) {
      this.lastMotionPass = "kernel";
      return this.motionFieldSimd(k, this.readyKernel, M, Mf, vf, slots, tiles, cols, tx0, tx1, ty0, ty1);
    }
    this.lastMotionPass = "js";
    this.motionLin[8] = 0;
    const count = motionTiles(
      this.invZ,
      this.shade,
      this.remap,
      this.iw,
      ow,
      oh,
      M,
      Mf,
      this.motionLin,
      this.motionLinearTolPx,
      vf,
      slots,
      dx,
      dy,
      tiles ? this.reachBuf : null,
      ts,
      cols,
      tx0,
      tx1,
      ty0,
      ty1,
      tiles ? tiles.l2 : null,
      tiles ? tiles.vx : null,
      tiles ? tiles.vy : null,
      tiles ? tiles.slot : null,
      tiles ? tiles.least : null,
    );
    this.lastLinearTiles = this.motionLin[8]!;
    return count;
  }

  /**
   * motionTiles' work through the kernel: its inputs into the kernel's memory, its tiles' records
   * out (the reach stays in the kernel's memory: tiles.reach is a view of it); linear tiles are
   * not ready until tiles.fillReach writes their reach
   */
  private motionFieldSimd(
    k: MotionKernel,
    ready: Uint8Array,
    M: Float64Array,
    Mf: Float32Array,
    vf: Uint8Array,
    slots: number,
    tiles: MotionTiles,
    cols: number,
    tx0: number,
    tx1: number,
    ty0: number,
    ty1: number,
  ): number {
    const ow = this.width;
    const oh = this.height;
    const kM = k.M;
    const kM64 = k.M64;
    for (let j = 0; j < 24 * slots; j++) kM[j] = Mf[j]!;
    // per end: the u and v rows' coefficients in pairs, then the z row (the kernel's layout)
    for (let e = 0; e < 24 * slots; e += 12) {
      for (let c = 0; c < 4; c++) {
        kM64[e + 2 * c] = M[e + c]!;
        kM64[e + 2 * c + 1] = M[e + 4 + c]!;
      }
      for (let c = 8; c < 12; c++) kM64[e + c] = M[e + c]!;
    }
    k.lin[0] = this.motionLinearTolPx;
    for (let s = 0; s <= slots; s++) k.flags[s] = vf[s]!;
    k.linCount[2] = 0;
    ready.fill(1);
    const count = k.run(0, slots, ow, oh, cols, tx0, tx1, ty0, ty1);
    this.lastLinearTiles = k.linCount[2]!;
    const run = this.lastRun;
    run[0] = slots;
    run[1] = cols;
    run[2] = tx0;
    run[3] = tx1;
    run[4] = ty0;
    run[5] = ty1;
    tiles.ready = ready;
    tiles.fillReach = this.fill;
    for (let ty = ty0; ty < ty1; ty++)
      for (let t = ty * cols + tx0; t < ty * cols + tx1; t++) {
        tiles.slot[t] = k.tSlot[t]!;
        tiles.least[t] = k.tLeast[t]!;
        tiles.l2[t] = k.tL2[t]!;
        tiles.vx[t] = k.tVx[t]!;
        tiles.vy[t] = k.tVy[t]!;
      }
    return count;
  }

  /** MotionTiles.fillReach of the kernel's last pass: the reach of the linear tiles marked in `need` */
  private readonly fill = (need: Uint8Array): void => {
    const k = this.motionKernel;
    if (k === null) return;
    const r = this.lastRun;
    k.need.set(need);
    k.run(1, r[0]!, this.width, this.height, r[1]!, r[2]!, r[3]!, r[4]!, r[5]!);
  };

  /** Colour (via the colour table) and depth in one pass, through the lens remap if any. */
  private resolve(target: RenderTarget): void {
    const rgb = target.rgb;
    const depth = target.depthMm;
    const iz = this.invZ;
    const shade = this.shade;
    const lut = this.lut;
    const n = this.width * this.height;
    const remap = this.remap;
    if (remap !== null && this.remapBase !== null && this.remapFrac !== null) {
      // lens remap: depth from the nearest ideal pixel, colour blended bilinearly from the
      // 2 × 2 ideal pixels around the exact source point (edges stay sub-pixel accurate)
      const base = this.remapBase;
      const frac = this.remapFrac;
      const W = this.iw;
      for (let i = 0, o = 0; i < n; i++, o += 3) {
        const near = resolvePixel(i, remap, iz, shade, lut, depth);
        const b = base[i]!;
        if (b < 0) {
          rgb[o] = near & 255;
          rgb[o + 1] = (near >>> 8) & 255;
          rgb[o + 2] = (near >>> 16) & 255;
          continue;
        }
        const fu = frac[2 * i]!;
        const fv = frac[2 * i + 1]!;
        const c00 = idealColour(b, iz, shade, lut);
        const c10 = idealColour(b + 1, iz, shade, lut);
        const c01 = idealColour(b + W, iz, shade, lut);
        const c11 = idealColour(b + W + 1, iz, shade, lut);
        const w00 = (1 - fu) * (1 - fv);
        const w10 = fu * (1 - fv);
        const w01 = (1 - fu) * fv;
        const w11 = fu * fv;
        for (let ch = 0, sh = 0; ch < 3; ch++, sh += 8) {
          const v =
            w00 * ((c00 >>> sh) & 255) +
            w10 * ((c10 >>> sh) & 255) +
            w01 * ((c01 >>> sh) & 255) +
            w11 * ((c11 >>> sh) & 255);
          rgb[o + ch] = (v + 0.5) | 0;
        }
      }
      return;
    }
    const words = wordView(rgb);
    if (words !== null) {
      // 4 pixels = 12 bytes = 3 aligned little-endian words
      for (let i = 0, w = 0; i < n; i += 4, w += 3) {
        const c0 = resolvePixel(i, remap, iz, shade, lut, depth);
        const c1 = resolvePixel(i + 1, remap, iz, shade, lut, depth);
        const c2 = resolvePixel(i + 2, remap, iz, shade, lut, depth);
        const c3 = resolvePixel(i + 3, remap, iz, shade, lut, depth);
        words[w] = c0 | (c1 << 24);
        words[w + 1] = (c1 >>> 8) | (c2 << 16);
        words[w + 2] = (c2 >>> 16) | (c3 << 8);
      }
      return;
    }
    for (let i = 0, o = 0; i < n; i++, o += 3) {
      const c = resolvePixel(i, remap, iz, shade, lut, depth);
      rgb[o] = c & 255;
      rgb[o + 1] = (c >>> 8) & 255;
      rgb[o + 2] = (c >>> 16) & 255;
    }
  }

  private ensureScratch(nv: number): void {
    if (this.vx.length >= nv) return;
    const m = Math.max(nv, this.vx.length * 2);
    this.vx = new Float64Array(m);
    this.vy = new Float64Array(m);
    this.vz = new Float64Array(m);
    this.vu = new Float64Array(m);
    this.vv = new Float64Array(m);
    this.vi = new Float64Array(m);
    this.vw = new Float64Array(m);
  }

  /**
   * The drawn object's image rectangle (ideal image px), from its bounding sphere (camera frame):
   * x/z and y/z over the sphere's box are extreme at its corners; reaching the near plane: all.
   */
  private noteBox(bx: number, by: number, bz: number, br: number): void {
    const o = (this.slotBase >> 8) * 4;
    const S = this.objSphere;
    S[o] = bx;
    S[o + 1] = by;
    S[o + 2] = bz;
    S[o + 3] = br;
    const B = this.objBox;
    const z0 = bz - br;
    if (z0 <= this.nearM) {
      B[o] = 0;
      B[o + 1] = this.iw;
      B[o + 2] = 0;
      B[o + 3] = this.ih;
      return;
    }
    const z1 = bz + br;
    B[o] = this.cx + this.fx * Math.min((bx - br) / z0, (bx - br) / z1);
    B[o + 1] = this.cx + this.fx * Math.max((bx + br) / z0, (bx + br) / z1);
    B[o + 2] = this.cy + this.fy * Math.min((by - br) / z0, (by - br) / z1);
    B[o + 3] = this.cy + this.fy * Math.max((by + br) / z0, (by + br) / z1);
  }

  private drawObject(mesh: Mesh, pose: Mat4, emissive: boolean, texture: Texture | null = null): void {
    const L = this.light;
    const lx = L[0]!;
    const ly = L[1]!;
    const lz = L[2]!;
    const M = this.camFromObj;
    mat4Mul(this.camFromWorld, pose, M);
    const m0 = M[0]!;
    const m1 = M[1]!;
    const m2 = M[2]!;
    const m3 = M[3]!;
    const m4 = M[4]!;
    const m5 = M[5]!;
    const m6 = M[6]!;
    const m7 = M[7]!;
    const m8 = M[8]!;
    const m9 = M[9]!;
    const m10 = M[10]!;
    const m11 = M[11]!;

    // bounding-sphere culling against near plane and the four side planes
    const bc = mesh.boundCentreM;
    const bx = m0 * bc[0] + m1 * bc[1] + m2 * bc[2] + m3;
    const by = m4 * bc[0] + m5 * bc[1] + m6 * bc[2] + m7;
    const bz = m8 * bc[0] + m9 * bc[1] + m10 * bc[2] + m11;
    const br = mesh.boundRadiusM;
    if (bz + br < this.nearM) return;
    const P = this.planes;
    for (let k = 0; k < 12; k += 3) {
      if (P[k]! * bx + P[k + 1]! * by + P[k + 2]! * bz < -br) return;
    }
    this.noteBox(bx, by, bz, br);

    // light direction in the object frame: pose rotationᵀ · light (world)
    const olx = pose[0]! * lx + pose[4]! * ly + pose[8]! * lz;
    const oly = pose[1]! * lx + pose[5]! * ly + pose[9]! * lz;
    const olz = pose[2]! * lx + pose[6]! * ly + pose[10]! * lz;
    // vertex shade on the 0…255 scale of the colour table
    const amb = 255 * this.ambient;
    const dif = 255 - amb;

    const pos = mesh.positionsM;
    const nrm = mesh.normals;
    const nv = pos.length / 3;
    this.ensureScratch(nv + 4);
    this.clipBase = nv;
    const vx = this.vx;
    const vy = this.vy;
    const vz = this.vz;
    const vu = this.vu;
    const vv = this.vv;
    const vi = this.vi;
    const vw = this.vw;
    const fx = this.fx;
    const fy = this.fy;
    const cx = this.cx;
    const cy = this.cy;
    const near = this.nearM;
    for (let i = 0, k = 0; i < nv; i++, k += 3) {
      const px = pos[k]!;
      const py = pos[k + 1]!;
      const pz = pos[k + 2]!;
      const x = m0 * px + m1 * py + m2 * pz + m3;
      const y = m4 * px + m5 * py + m6 * pz + m7;
      const z = m8 * px + m9 * py + m10 * pz + m11;
      vx[i] = x;
      vy[i] = y;
      vz[i] = z;
      if (z >= near) {
        const w = 1 / z;
        vu[i] = fx * x * w + cx;
        vv[i] = fy * y * w + cy;
        vw[i] = w;
      }
      if (emissive) vi[i] = 255;
      else {
        const d = nrm[k]! * olx + nrm[k + 1]! * oly + nrm[k + 2]! * olz;
        vi[i] = d > 0 ? amb + dif * d : amb;
      }
    }

    const idx = mesh.indices;
    const nt = idx.length;
    if (texture !== null && mesh.uv) {
      // textured: whole triangles in front of the near plane only (a board is never that close)
      const mips = mipPyramid(texture);
      for (let t = 0; t < nt; t += 3) {
        const a = idx[t]!;
        const b = idx[t + 1]!;
        const c = idx[t + 2]!;
        if (vz[a]! < near || vz[b]! < near || vz[c]! < near) continue;
        this.fillTriTextured(a, b, c, mesh.uv, mips);
      }
      return;
    }
    for (let t = 0; t < nt; t += 3) {
      const a = idx[t]!;
      const b = idx[t + 1]!;
      const c = idx[t + 2]!;
      const za = vz[a]!;
      const zb = vz[b]!;
      const zc = vz[c]!;
      if (za >= near && zb >= near && zc >= near) {
        // back face (non-negative area with v down): skip before the call; fillTri re-checks
        const ua = vu[a]!;
        const va = vv[a]!;
        if ((vu[b]! - ua) * (vv[c]! - va) - (vv[b]! - va) * (vu[c]! - ua) >= 0) continue;
        this.fillTri(a, b, c);
      } else if (za >= near || zb >= near || zc >= near) {
        this.clipAndFill(a, b, c);
      }
    }

    if (this.thinLines) {
      L[3] = olx;
      L[4] = oly;
      L[5] = olz;
      for (const line of mesh.lines) this.drawLine(line.pointsM, line.closed, emissive);
    }
  }

  /** Clip a triangle crossing the near plane (Sutherland–Hodgman, one plane) and fill it. */
  private clipAndFill(a: number, b: number, c: number): void {
    const near = this.nearM;
    const src = this.clipIn;
    const dst = this.clip;
    for (let k = 0; k < 3; k++) {
      const i = k === 0 ? a : k === 1 ? b : c;
      src[k * 4] = this.vx[i]!;
      src[k * 4 + 1] = this.vy[i]!;
      src[k * 4 + 2] = this.vz[i]!;
      src[k * 4 + 3] = this.vi[i]!;
    }
    let n = 0;
    for (let k = 0; k < 3; k++) {
      const p = k * 4;
      const q = ((k + 1) % 3) * 4;
      const zp = src[p + 2]!;
      const zq = src[q + 2]!;
      const pin = zp >= near;
      const qin = zq >= near;
      if (pin) {
        dst[n * 4] = src[p]!;
        dst[n * 4 + 1] = src[p + 1]!;
        dst[n * 4 + 2] = zp;
        dst[n * 4 + 3] = src[p + 3]!;
        n++;
      }
      if (pin !== qin) {
        const s = (near - zp) / (zq - zp);
        dst[n * 4] = src[p]! + s * (src[q]! - src[p]!);
        dst[n * 4 + 1] = src[p + 1]! + s * (src[q + 1]! - src[p + 1]!);
        dst[n * 4 + 2] = near;
        dst[n * 4 + 3] = src[p + 3]! + s * (src[q + 3]! - src[p + 3]!);
        n++;
      }
    }
    // project into the clip slots of the vertex scratch
    const cb = this.clipBase;
    for (let k = 0; k < n; k++) {
      const w = 1 / dst[k * 4 + 2]!;
      this.vu[cb + k] = this.fx * dst[k * 4]! * w + this.cx;
      this.vv[cb + k] = this.fy * dst[k * 4 + 1]! * w + this.cy;
      this.vw[cb + k] = w;
      this.vi[cb + k] = dst[k * 4 + 3]!;
    }
    for (let k = 1; k + 1 < n; k++) this.fillTri(cb, cb + k, cb + k + 1);
  }

  /**
   * Fill one projected triangle (screen u, v; w = 1/z; intensity i) with depth test.
   * Back faces (counter-clockwise on screen with v down, i.e. positive area) are culled.
   */
  private fillTri(a: number, b: number, c: number): void {
    // vertices come as indices into the scratch arrays: passing 12 doubles as arguments would
    // box them on every call. Front faces have negative area in (u right, v down); read them
    // as (a, c, b) to work with positive area.
    const vu = this.vu;
    const vv = this.vv;
    const vw = this.vw;
    const vi = this.vi;
    const u0 = vu[a]!;
    const v0 = vv[a]!;
    const w0 = vw[a]!;
    const i0 = vi[a]!;
    const u1 = vu[c]!;
    const v1 = vv[c]!;
    const w1 = vw[c]!;
    const i1 = vi[c]!;
    const u2 = vu[b]!;
    const v2 = vv[b]!;
    const w2 = vw[b]!;
    const i2 = vi[b]!;
    const area = (u1 - u0) * (v2 - v0) - (v1 - v0) * (u2 - u0);
    if (!(area > 0)) return;

    const W = this.iw;
    const H = this.ih;
    let minU = Math.min(u0, u1);
    if (u2 < minU) minU = u2;
    let maxU = Math.max(u0, u1);
    if (u2 > maxU) maxU = u2;
    let minV = Math.min(v0, v1);
    if (v2 < minV) minV = v2;
    let maxV = Math.max(v0, v1);
    if (v2 > maxV) maxV = v2;
    let xs0 = Math.ceil(minU - EDGE_EPS);
    let xe0 = Math.floor(maxU + EDGE_EPS);
    let ys = Math.ceil(minV - EDGE_EPS);
    let ye = Math.floor(maxV + EDGE_EPS);
    if (xs0 < 0) xs0 = 0;
    if (xe0 > W - 1) xe0 = W - 1;
    if (ys < 0) ys = 0;
    if (ye > H - 1) ye = H - 1;
    if (xs0 > xe0 || ys > ye) return;

    // plane gradients of 1/z and intensity
    const du1 = u1 - u0;
    const dv1 = v1 - v0;
    const du2 = u2 - u0;
    const dv2 = v2 - v0;
    const inv = 1 / area;
    const dwdx = ((w1 - w0) * dv2 - (w2 - w0) * dv1) * inv;
    const dwdy = ((w2 - w0) * du1 - (w1 - w0) * du2) * inv;
    const didx = ((i1 - i0) * dv2 - (i2 - i0) * dv1) * inv;
    const didy = ((i2 - i0) * du1 - (i1 - i0) * du2) * inv;
    const w00 = w0 - dwdx * u0 - dwdy * v0; // 1/z at pixel (0, 0)
    const i00 = i0 - didx * u0 - didy * v0;

    // Edge a→b, inside where (bu−au)(y−av) − (bv−av)(x−au) ≥ 0. For a non-horizontal edge
    // the boundary is x = au + (bu−au)(y−av)/(bv−av); it bounds x from below when bv < av.
    // Boundary x(y) = e0 + e1·y; kind: 1 = lower bound, −1 = upper bound, 0 = horizontal.
    const k01 = v1 < v0 ? 1 : v1 > v0 ? -1 : 0;
    const s01 = k01 === 0 ? 0 : (u1 - u0) / (v1 - v0);
    const e01 = u0 - s01 * v0;
    const k12 = v2 < v1 ? 1 : v2 > v1 ? -1 : 0;
    const s12 = k12 === 0 ? 0 : (u2 - u1) / (v2 - v1);
    const e12 = u1 - s12 * v1;
    const k20 = v0 < v2 ? 1 : v0 > v2 ? -1 : 0;
    const s20 = k20 === 0 ? 0 : (u0 - u2) / (v0 - v2);
    const e20 = u2 - s20 * v2;

    const zbuf = this.invZ;
    const shade = this.shade;
    // +0.5: truncation below rounds to nearest
    const sRow0 = i00 + 0.5;
    const base = this.slotBase;
    for (let y = ys; y <= ye; y++) {
      let lo = xs0 - EDGE_EPS;
      let hi = xe0 + EDGE_EPS;
      let x = e01 + s01 * y;
      if (k01 > 0) {
        if (x > lo) lo = x;
      } else if (k01 < 0 && x < hi) hi = x;
      x = e12 + s12 * y;
      if (k12 > 0) {
        if (x > lo) lo = x;
      } else if (k12 < 0 && x < hi) hi = x;
      x = e20 + s20 * y;
      if (k20 > 0) {
        if (x > lo) lo = x;
      } else if (k20 < 0 && x < hi) hi = x;
      const xs = Math.ceil(lo - EDGE_EPS);
      const xe = Math.floor(hi + EDGE_EPS);
      if (xs > xe) continue;
      const wRow = w00 + dwdy * y;
      const iRow = sRow0 + didy * y;
      const row = y * W;
      for (let xi = xs; xi <= xe; xi++) {
        const w = wRow + dwdx * xi;
        const p = row + xi;
        if (w > zbuf[p]!) {
          zbuf[p] = w;
          let s = (iRow + didx * xi) | 0;
          if (s > 255) s = 255;
          else if (s < 0) s = 0;
          shade[p] = base + s;
        }
      }
    }
  }

  /**
   * Fill a textured triangle: 1/z, s/z and t/z are affine in screen space, so texel coordinates
   * are perspective-correct; the mip level follows the triangle's texel-to-pixel area ratio and
   * each pixel is a bilinear sample of it, times the vertex shading. Back faces are culled.
   */
  private fillTriTextured(a: number, b: number, c: number, uv: Float32Array, mips: MipLevel[]): void {
    const vu = this.vu;
    const vv = this.vv;
    const vw = this.vw;
    const u0 = vu[a]!;
    const v0 = vv[a]!;
    const u1 = vu[c]!;
    const v1 = vv[c]!;
    const u2 = vu[b]!;
    const v2 = vv[b]!;
    const area = (u1 - u0) * (v2 - v0) - (v1 - v0) * (u2 - u0);
    if (!(area > 0)) return;
    const w0 = vw[a]!;
    const w1 = vw[c]!;
    const w2 = vw[b]!;
    const s0 = uv[a * 2]!;
    const t0 = uv[a * 2 + 1]!;
    const s1 = uv[c * 2]!;
    const t1 = uv[c * 2 + 1]!;
    const s2 = uv[b * 2]!;
    const t2 = uv[b * 2 + 1]!;
    const texArea = Math.abs((s1 - s0) * (t2 - t0) - (t1 - t0) * (s2 - s0));
    const lod = Math.max(0, Math.min(mips.length - 1, Math.round(0.5 * Math.log2(texArea / area))));
    const level = mips[lod]!;
    const scale = level.width / mips[0]!.width;
    const i0 = this.vi[a]!;
    const W = this.iw;
    const H = this.ih;
    const xs = Math.max(0, Math.ceil(Math.min(u0, u1, u2) - EDGE_EPS));
    const xe = Math.min(W - 1, Math.floor(Math.max(u0, u1, u2) + EDGE_EPS));
    const ys = Math.max(0, Math.ceil(Math.min(v0, v1, v2) - EDGE_EPS));
    const ye = Math.min(H - 1, Math.floor(Math.max(v0, v1, v2) + EDGE_EPS));
    if (xs > xe || ys > ye) return;
    const inv = 1 / area;
    const zbuf = this.invZ;
    const shade = this.shade;
    const base = this.slotBase;
    for (let y = ys; y <= ye; y++) {
      for (let x = xs; x <= xe; x++) {
        // barycentric weights (edge functions), inclusive at shared edges
        const e0 = ((u2 - u1) * (y - v1) - (v2 - v1) * (x - u1)) * inv;
        const e1 = ((u0 - u2) * (y - v2) - (v0 - v2) * (x - u2)) * inv;
        const e2 = 1 - e0 - e1;
        if (e0 < -1e-7 || e1 < -1e-7 || e2 < -1e-7) continue;
        const w = e0 * w0 + e1 * w1 + e2 * w2;
        const p = y * W + x;
        if (!(w > zbuf[p]!)) continue;
        const sw = e0 * s0 * w0 + e1 * s1 * w1 + e2 * s2 * w2;
        const tw = e0 * t0 * w0 + e1 * t1 * w1 + e2 * t2 * w2;
        const g = sampleBilinear(level, scale, sw / w, tw / w);
        zbuf[p] = w;
        let sh = ((g * i0) / 255 + 0.5) | 0;
        if (sh > 255) sh = 255;
        else if (sh < 0) sh = 0;
        shade[p] = base + sh;
      }
    }
  }

  /**
   * Draw a centreline (object frame) as a depth-tested 1-pixel line, shaded as the side of a
   * tube facing the camera. Uses the current camFromObj and colour.
   */
  private drawLine(pts: Float32Array, closed: boolean, emissive: boolean): void {
    const olx = this.light[3]!;
    const oly = this.light[4]!;
    const olz = this.light[5]!;
    const M = this.camFromObj;
    const np = pts.length / 3;
    this.ensureScratch(np);
    const vx = this.vx;
    const vy = this.vy;
    const vz = this.vz;
    for (let i = 0, k = 0; i < np; i++, k += 3) {
      const px = pts[k]!;
      const py = pts[k + 1]!;
      const pz = pts[k + 2]!;
      vx[i] = M[0]! * px + M[1]! * py + M[2]! * pz + M[3]!;
      vy[i] = M[4]! * px + M[5]! * py + M[6]! * pz + M[7]!;
      vz[i] = M[8]! * px + M[9]! * py + M[10]! * pz + M[11]!;
    }
    // light in the camera frame: camFromObj rotation · object-frame light
    const lx = M[0]! * olx + M[1]! * oly + M[2]! * olz;
    const ly = M[4]! * olx + M[5]! * oly + M[6]! * olz;
    const lz = M[8]! * olx + M[9]! * oly + M[10]! * olz;
    const amb = this.ambient;
    const near = this.nearM;
    const nSeg = closed ? np : np - 1;
    for (let s = 0; s < nSeg; s++) {
      const a = s;
      const b = s + 1 === np ? 0 : s + 1;
      let ax = vx[a]!;
      let ay = vy[a]!;
      let az = vz[a]!;
      let bx = vx[b]!;
      let by = vy[b]!;
      let bz = vz[b]!;
      if (az < near && bz < near) continue;
      if (az < near) {
        const t = (near - az) / (bz - az);
        ax += t * (bx - ax);
        ay += t * (by - ay);
        az = near;
      } else if (bz < near) {
        const t = (near - bz) / (az - bz);
        bx += t * (ax - bx);
        by += t * (ay - by);
        bz = near;
      }
      let it = 255;
      if (!emissive) {
        // normal: from the segment axis towards the camera, perpendicular to the segment
        let tx = bx - ax;
        let ty = by - ay;
        let tz = bz - az;
        const tl = Math.sqrt(tx * tx + ty * ty + tz * tz) || 1;
        tx /= tl;
        ty /= tl;
        tz /= tl;
        const mx = -(ax + bx) / 2;
        const my = -(ay + by) / 2;
        const mz = -(az + bz) / 2;
        const d = mx * tx + my * ty + mz * tz;
        const nx = mx - d * tx;
        const ny = my - d * ty;
        const nz = mz - d * tz;
        const nl = Math.sqrt(nx * nx + ny * ny + nz * nz) || 1;
        const l = (nx * lx + ny * ly + nz * lz) / nl;
        it = 255 * (l > 0 ? amb + (1 - amb) * l : amb);
      }
      const sg = this.seg;
      sg[0] = ax;
      sg[1] = ay;
      sg[2] = az;
      sg[3] = bx;
      sg[4] = by;
      sg[5] = bz;
      sg[6] = it;
      this.lineSeg();
    }
  }

  /** Draw the segment in `seg` (camera frame, both ends at z ≥ near) with its shade. */
  private lineSeg(): void {
    const sg = this.seg;
    const wa = 1 / sg[2]!;
    const wb = 1 / sg[5]!;
    const ua = this.fx * sg[0]! * wa + this.cx;
    const va = this.fy * sg[1]! * wa + this.cy;
    const ub = this.fx * sg[3]! * wb + this.cx;
    const vb = this.fy * sg[4]! * wb + this.cy;
    const it = sg[6]!;
    const W = this.iw;
    const H = this.ih;
    // trivially outside?
    if ((ua < -0.5 && ub < -0.5) || (va < -0.5 && vb < -0.5)) return;
    if ((ua > W - 0.5 && ub > W - 0.5) || (va > H - 0.5 && vb > H - 0.5)) return;
    const du = ub - ua;
    const dv = vb - va;
    let steps = Math.ceil(Math.max(Math.abs(du), Math.abs(dv)));
    if (steps < 1) steps = 1;
    if (steps > 4 * (W + H)) steps = 4 * (W + H); // a segment crossing the whole view (clipped at near)
    const zbuf = this.invZ;
    const shade = this.shade;
    const s = this.slotBase + Math.max(0, Math.min(255, Math.round(it)));
    const inv = 1 / steps;
    for (let k = 0; k <= steps; k++) {
      const t = k * inv;
      const x = Math.round(ua + du * t);
      const y = Math.round(va + dv * t);
      if (x < 0 || y < 0 || x >= W || y >= H) continue;
      const w = wa + (wb - wa) * t;
      const p = y * W + x;
      if (w > zbuf[p]!) {
        zbuf[p] = w;
        shade[p] = s;
      }
    }
  }
}

/** Pack 0…255 channel values (rounded, clamped) as r | g << 8 | b << 16. */
function packRgb(r: number, g: number, b: number): number {
  return channel(r) | (channel(g) << 8) | (channel(b) << 16);
}

function channel(v: number): number {
  return v <= 0 ? 0 : v >= 255 ? 255 : (v + 0.5) | 0;
}

/**
 * Resolve one output pixel: write its depth (mm) and return its packed colour.
 * `remap` maps output pixels to ideal-image pixels (-1 = none); null = identity.
 */
function resolvePixel(
  i: number,
  remap: Int32Array | null,
  iz: Float32Array,
  shade: Uint32Array,
  lut: Uint32Array,
  depth: Uint16Array,
): number {
  const src = remap === null ? i : remap[i]!;
  const z = src >= 0 ? iz[src]! : 0;
  if (z > 0) {
    const mm = 1000 / z;
    depth[i] = mm >= 65534.5 ? 65535 : (mm + 0.5) | 0;
    return lut[shade[src]!]!;
  }
  depth[i] = 0;
  return lut[0]!;
}

/** Packed colour of an ideal-image pixel (background where nothing was drawn). */
function idealColour(p: number, iz: Float32Array, shade: Uint32Array, lut: Uint32Array): number {
  return iz[p]! > 0 ? lut[shade[p]!]! : lut[0]!;
}

const LITTLE_ENDIAN = new Uint8Array(new Uint32Array([1]).buffer)[0] === 1;
const wordViews = new WeakMap<Uint8Array, Uint32Array>();

/** A Uint32 view of an RGB buffer for 4-pixel word writes, or null when not possible. */
function wordView(rgb: Uint8Array): Uint32Array | null {
  if (!LITTLE_ENDIAN || rgb.byteOffset % 4 !== 0 || rgb.length % 12 !== 0) return null;
  let v = wordViews.get(rgb);
  if (v === undefined) {
    v = new Uint32Array(rgb.buffer, rgb.byteOffset, rgb.length / 4);
    wordViews.set(rgb, v);
  }
  return v;
}

/** r = (x0, x1, y0, y1) (a call without tiles leaves the reach buffer's rectangle as it was) */
function keepRect(r: Int32Array, x0: number, x1: number, y0: number, y1: number): void {
  r[0] = x0;
  r[1] = x1;
  r[2] = y0;
  r[3] = y1;
}

/** zero the pixels of rectangle o (x0, x1, y0, y1; row width ow) that are not in rectangle n */
function clearOutside(
  a: Uint16Array,
  ow: number,
  ox0: number,
  ox1: number,
  oy0: number,
  oy1: number,
  nx0: number,
  nx1: number,
  ny0: number,
  ny1: number,
): void {
  for (let y = oy0; y < oy1; y++) {
    const r = y * ow;
    if (y < ny0 || y >= ny1 || nx1 <= nx0) a.fill(0, r + ox0, r + ox1);
    else {
      if (nx0 > ox0) a.fill(0, r + ox0, r + Math.min(ox1, nx0));
      if (nx1 < ox1) a.fill(0, r + Math.max(ox0, nx1), r + ox1);
    }
  }
}

const fr = Math.fround;

/** the tile size of motionField's linear model, px (MotionTiles of another size: per pixel) */
const LINEAR_TILE = 8;
/** Rasterizer.motionLinearTolPx's default */
export const LINEAR_TOL_PX = 0.01;
/** motionTiles' scratch: the 8 columns' bases of a linear tile, x then y */
const linBase = new Float32Array(2 * LINEAR_TILE);

/**
 * A lower bound of a linear tile's reach (tileModel's lin, its `rows`: half extents hv in v and
 * hw in 1/z about the centre): |d| ≥ |d(centre)| − Σ (|∂x| + |∂y|) · half-extent, less 1/1024 px for the pixels'
 * 32-bit rounding, in reach units (floored, 0 … REACH_MAX)
 */
function leastOf(lin: Float64Array, rows: number): number {
  const hv = (rows - 1) / 2;
  const hw = (lin[10]! - lin[9]!) / 2;
  const m =
    Math.sqrt(lin[0]! * lin[0]! + lin[1]! * lin[1]!) -
    ((Math.abs(lin[2]!) + Math.abs(lin[5]!)) * 3.5 +
      (Math.abs(lin[3]!) + Math.abs(lin[6]!)) * hv +
      (Math.abs(lin[4]!) + Math.abs(lin[7]!)) * hw) -
    1 / 1024;
  return m > 0 ? Math.min(REACH_MAX, Math.floor(m * REACH_PER_PX)) : 0;
}

/**
 * The linear model of a tile's field (x0 … x0 + 7, rows y0 … y1 − 1, 1/z in lin[9] … lin[10]) of the
 * slot whose f64 maps start at M[d] (motionField's M: per end the u, v and z rows over
 * (u, v, 1, 1/z)), about the tile's centre: into lin the displacement there (x, y) and its
 * derivatives by u, v, 1/z (x: 2–4, y: 5–7). Returns 1 when the expansion's remainder is within
 * `tol` px over the tile: for each end and component X = U / Z (U, Z affine), |X''| along a step δ
 * is 2 |g| |a − X g| / Z² with g = ∇Z·δ, a = ∇U·δ; with G, A their bounds over the tile's box,
 * Zm = Z(centre) − G and |X| ≤ (|U(centre)| + A) / Zm, the remainder is at most
 * G (A + |X| G) / Zm²; the four such bounds summed (the displacement's error is at most their sum).
 * (Divisions as multiplications by 1/Z and 1/Zm: the kernel's order.)
 * 0: not within `tol`, or a surface that may reach the camera plane (Zm ≤ 0).
 */
function tileModel(
  M: Float64Array,
  d: number,
  x0: number,
  y0: number,
  y1: number,
  tol: number,
  lin: Float64Array,
): number {
  const wmin = lin[9]!;
  const wmax = lin[10]!;
  const hu = 3.5;
  const hv = (y1 - y0 - 1) / 2;
  const hw = (wmax - wmin) / 2;
  const uc = x0 + hu;
  const vc = y0 + hv;
  const wc = (wmin + wmax) / 2;
  let bound = 0;
  for (let k = 0; k < 8; k++) lin[k] = 0;
  for (let e = 0; e < 2; e++) {
    const b = d + 12 * e;
    const sign = e === 0 ? -1 : 1;
    const Z = M[b + 8]! * uc + M[b + 9]! * vc + M[b + 10]! + M[b + 11]! * wc;
    const G = Math.abs(M[b + 8]!) * hu + Math.abs(M[b + 9]!) * hv + Math.abs(M[b + 11]!) * hw;
    const Zm = Z - G;
    if (!(Zm > 0)) return 0;
    const iZ = 1 / Z;
    const iZm = 1 / Zm;
    for (let c = 0; c < 2; c++) {
      const r = b + 4 * c;
      const U = M[r]! * uc + M[r + 1]! * vc + M[r + 2]! + M[r + 3]! * wc;
      const X = U * iZ;
      const A = Math.abs(M[r]!) * hu + Math.abs(M[r + 1]!) * hv + Math.abs(M[r + 3]!) * hw;
      bound += G * (A + (Math.abs(U) + A) * iZm * G) * (iZm * iZm);
      const o = 3 * c;
      lin[c] = lin[c]! + sign * X;
      lin[2 + o] = lin[2 + o]! + sign * ((M[r]! - X * M[b + 8]!) * iZ);
      lin[3 + o] = lin[3 + o]! + sign * ((M[r + 1]! - X * M[b + 9]!) * iZ);
      lin[4 + o] = lin[4 + o]! + sign * ((M[r + 3]! - X * M[b + 11]!) * iZ);
    }
  }
  return bound <= tol ? 1 : 0;
}

/**
 * motionField's pass over the tiles tx0 … tx1 − 1, ty0 … ty1 − 1 of size ts (a function of its
 * own, every input a local: V8 optimises it far better than the same loop in a method). Every
 * operation on a pixel is a 32-bit float one (Math.fround after each: the kernel's f32x4 lanes
 * round the same), see motionField. Per tile: the longest displacement (the first in scan order),
 * the least reach, the one slot seen (−1: several).
 */
function motionTiles(
  iz: Float32Array,
  shade: Uint32Array,
  remap: Int32Array | null,
  W: number,
  ow: number,
  oh: number,
  M: Float64Array,
  Mf: Float32Array,
  lin: Float64Array,
  tol: number,
  vf: Uint8Array,
  slots: number,
  dx: Float32Array | null,
  dy: Float32Array | null,
  reach: Uint16Array | null,
  ts: number,
  cols: number,
  tx0: number,
  tx1: number,
  ty0: number,
  ty1: number,
  tl2: Float32Array | null,
  tvx: Float32Array | null,
  tvy: Float32Array | null,
  tslot: Int32Array | null,
  tleast: Int32Array | null,
): number {
  let cur = -1;
  let cv = Number.NaN;
  // the current slot's u and w coefficients and its row terms (v coefficient · v + constant) of
  // the rows za, ua, va, dz, du, dv
  let za0 = 0;
  let za3 = 0;
  let ua0 = 0;
  let ua3 = 0;
  let va0 = 0;
  let va3 = 0;
  let dz0 = 0;
  let dz3 = 0;
  let du0 = 0;
  let du3 = 0;
  let dv0 = 0;
  let dv3 = 0;
  let zar = 0;
  let uar = 0;
  let var_ = 0;
  let dzr = 0;
  let dur = 0;
  let dvr = 0;
  let count = 0;
  for (let ty = ty0; ty < ty1; ty++)
    for (let tx = tx0; tx < tx1; tx++) {
      const x0 = tx * ts;
      const x1 = Math.min(ow, x0 + ts);
      const y0 = ty * ts;
      const y1 = Math.min(oh, y0 + ts);
      let one = -2;
      let best = 0;
      let bx = 0;
      let by = 0;
      let least = 65535;
      // a full tile of one moving slot whose linear model is within the tolerance: the model's
      // values (32-bit float operations: per row and column a base, + the 1/z term)
      let linear = false;
      if (remap === null && ts === LINEAR_TILE && x1 - x0 === LINEAR_TILE) {
        const s = iz[y0 * ow + x0]! > 0 ? shade[y0 * ow + x0]! >>> 8 : 0;
        let uniform = s < slots && vf[s] === 1;
        let wmin = Number.POSITIVE_INFINITY;
        let wmax = Number.NEGATIVE_INFINITY;
        for (let y = y0; y < y1 && uniform; y++)
          for (let i = y * ow + x0; i < y * ow + x1; i++) {
            const w = iz[i]!;
            if ((w > 0 ? shade[i]! >>> 8 : 0) !== s) uniform = false;
            if (w < wmin) wmin = w;
            if (w > wmax) wmax = w;
          }
        // (1/z's range through the scratch: doubles passed as arguments per tile are boxed)
        lin[9] = wmin;
        lin[10] = wmax;
        if (uniform && tileModel(M, 24 * s, x0, y0, y1, tol, lin) === 1) {
          linear = true;
          one = s;
          const hv = (y1 - y0 - 1) / 2;
          const hw = (wmax - wmin) / 2;
          const wc = (wmin + wmax) / 2;
          // the tile's summary from the model: its longest displacement at the box's corners in
          // (u, v, 1/z) (≥ every pixel's), its least reach from a lower bound of the length
          best = 0;
          const ax = lin[2]! * 3.5;
          const bx_ = lin[3]! * hv;
          const cw = lin[4]! * hw;
          const ay = lin[5]! * 3.5;
          const by_ = lin[6]! * hv;
          const cwy = lin[7]! * hw;
          for (let k = 0; k < 8; k++) {
            const cx_ = lin[0]! + (k & 1 ? ax : -ax) + (k & 2 ? bx_ : -bx_) + (k & 4 ? cw : -cw);
            const cy_ = lin[1]! + (k & 1 ? ay : -ay) + (k & 2 ? by_ : -by_) + (k & 4 ? cwy : -cwy);
            const l2 = cx_ * cx_ + cy_ * cy_;
            if (l2 > best) {
              best = l2;
              bx = cx_;
              by = cy_;
            }
          }
          least = leastOf(lin, y1 - y0);
          const jvx = fr(lin[3]!);
          const jvy = fr(lin[6]!);
          const jwx = fr(lin[4]!);
          const jwy = fr(lin[7]!);
          const kx = lin[0]! - lin[3]! * hv - lin[4]! * wc;
          const ky = lin[1]! - lin[6]! * hv - lin[7]! * wc;
          for (let j = 0; j < LINEAR_TILE; j++) {
            linBase[j] = fr(kx + lin[2]! * (j - 3.5));
            linBase[LINEAR_TILE + j] = fr(ky + lin[5]! * (j - 3.5));
          }
          for (let y = y0; y < y1; y++) {
            for (let j = 0; j < LINEAR_TILE; j++) {
              const i = y * ow + x0 + j;
              const w = iz[i]!;
              const ddx = fr(linBase[j]! + fr(jwx * w));
              const ddy = fr(linBase[LINEAR_TILE + j]! + fr(jwy * w));
              const l2 = fr(fr(ddx * ddx) + fr(ddy * ddy));
              if (dx !== null && dy !== null) {
                dx[i] = ddx;
                dy[i] = ddy;
              }
              if (reach !== null)
                reach[i] = Math.min(REACH_MAX, Math.floor(fr(Math.sqrt(l2)) * REACH_PER_PX));
            }
            for (let j = 0; j < LINEAR_TILE; j++) {
              linBase[j] = fr(linBase[j]! + jvx);
              linBase[LINEAR_TILE + j] = fr(linBase[LINEAR_TILE + j]! + jvy);
            }
          }
          count += (y1 - y0) * LINEAR_TILE;
          lin[8] = lin[8]! + 1;
        }
      }
      for (let y = y0; y < y1 && !linear; y++)
        for (let x = x0; x < x1; x++) {
          const i = y * ow + x;
          let src = i;
          let u = x;
          let v = y;
          if (remap !== null) {
            src = remap[i]!;
            u = src % W;
            v = (src - u) / W;
          }
          const w = src >= 0 ? iz[src]! : 0;
          const slot = w > 0 ? shade[src]! >>> 8 : 0;
          if (one !== slot) one = one === -2 ? slot : -1;
          if (slot >= slots || vf[slot] === 0) {
            least = 0;
            if (reach !== null) reach[i] = 0;
            continue;
          }
          count++;
          if (slot !== cur) {
            cur = slot;
            const d = 24 * slot;
            za0 = Mf[d]!;
            za3 = Mf[d + 3]!;
            ua0 = Mf[d + 4]!;
            ua3 = Mf[d + 7]!;
            va0 = Mf[d + 8]!;
            va3 = Mf[d + 11]!;
            dz0 = Mf[d + 12]!;
            dz3 = Mf[d + 15]!;
            du0 = Mf[d + 16]!;
            du3 = Mf[d + 19]!;
            dv0 = Mf[d + 20]!;
            dv3 = Mf[d + 23]!;
            cv = Number.NaN;
          }
          if (v !== cv) {
            cv = v;
            const d = 24 * slot;
            zar = fr(fr(Mf[d + 1]! * v) + Mf[d + 2]!);
            uar = fr(fr(Mf[d + 5]! * v) + Mf[d + 6]!);
            var_ = fr(fr(Mf[d + 9]! * v) + Mf[d + 10]!);
            dzr = fr(fr(Mf[d + 13]! * v) + Mf[d + 14]!);
            dur = fr(fr(Mf[d + 17]! * v) + Mf[d + 18]!);
            dvr = fr(fr(Mf[d + 21]! * v) + Mf[d + 22]!);
          }
          const za = fr(fr(fr(za0 * u) + zar) + fr(za3 * w));
          const dz = fr(fr(fr(dz0 * u) + dzr) + fr(dz3 * w));
          const zb = fr(za + dz);
          let ddx = 0;
          let ddy = 0;
          let l2 = 0;
          let q = 0;
          // behind the camera at one end of the interval: no defined image motion
          if (za > 0 && zb > 0) {
            const ua = fr(fr(fr(ua0 * u) + uar) + fr(ua3 * w));
            const va = fr(fr(fr(va0 * u) + var_) + fr(va3 * w));
            const du = fr(fr(fr(du0 * u) + dur) + fr(du3 * w));
            const dv = fr(fr(fr(dv0 * u) + dvr) + fr(dv3 * w));
            const r = fr(1 / fr(za * zb));
            ddx = fr(fr(fr(du * za) - fr(ua * dz)) * r);
            ddy = fr(fr(fr(dv * za) - fr(va * dz)) * r);
            l2 = fr(fr(ddx * ddx) + fr(ddy * ddy));
            q = Math.min(REACH_MAX, Math.floor(fr(Math.sqrt(l2)) * REACH_PER_PX));
          }
          if (dx !== null && dy !== null) {
            dx[i] = ddx;
            dy[i] = ddy;
          }
          if (reach !== null) reach[i] = q;
          if (q < least) least = q;
          if (l2 > best) {
            best = l2;
            bx = ddx;
            by = ddy;
          }
        }
      if (tl2 !== null && tvx !== null && tvy !== null && tslot !== null && tleast !== null) {
        const t = ty * cols + tx;
        tslot[t] = one;
        tleast[t] = least;
        tl2[t] = best;
        tvx[t] = bx;
        tvy[t] = by;
      }
    }
  return count;
}
