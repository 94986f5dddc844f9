/**
 * Motion blur of a simulated RGB-D frame. A frame is an exposure over an interval, not an instant:
 * what moves relative to the camera during it (the arm in a fixed camera; the whole scene in a
 * wrist camera, which moves with the arm) is seen along its path. The renderer draws the frame at
 * the exposure's middle and gives each pixel's image displacement over the exposure
 * (Rasterizer.motionField, from the rigid motion of the object that drew it and of the camera;
 * the renderer knows which object drew each pixel and at which depth);
 * this module turns that into the time average a sensor integrates, approximately:
 *
 * - colour: a box filter along the displacement, as a gather (a reconstruction filter in the
 *   manner of McGuire et al., "A reconstruction filter for plausible motion blur", I3D 2012): the
 *   image is cut into 8 × 8 px tiles; a tile samples along the largest displacement in its
 *   neighbourhood (as far as the longest half-smear reaches, so a moving surface smears over the
 *   static pixels next to it), N samples spread evenly over the exposure (spacing ≤ 1 px up to
 *   8 px of smear, N ≤ 9). A sample p counts for pixel q when p's own
 *   path reaches q (its half-displacement covers the distance, ± ½ px) and p is not behind q, or,
 *   p lying behind q, when q's path reaches p (q's surface moved off and uncovered p's); otherwise
 *   q's own colour counts. A uniformly moving image becomes a box average; a moving object over a static
 *   background gets a translucent fringe half its smear wide on both sides of its edge.
 * - depth (stereo): the infrared exposure is shorter (the same displacements scaled by the
 *   exposure ratio); a pixel that a surface at another depth (more than the edge step away) crosses
 *   during it has no return (the matcher sees two disparities in its window); inside a moving
 *   surface the depth stays (both imagers see the same smear).
 *
 * Per pixel the passes compare the length of its displacement over the interval (MotionTiles.reach,
 * in 1/64 px, floored) with each sample's threshold (rounded up to that unit).
 * Both passes, tile set-up included, run in WebAssembly SIMD (gather-simd.ts, a tile row of 8 px a
 * step) where the frame's width is a multiple of 8 px; `simd` false: JS alone, the same bytes.
 * Work that cannot change a byte is skipped (`fastPaths`; false: every sample through its tests,
 * the same output): a tile whose samples all count (every pixel they reach moves far enough) is
 * a plain box average; a sample within that guarantee counts untested; a depth tile whose
 * sampled depths span no edge step has no hole.
 * Displacements below ½ px in a tile's neighbourhood leave it untouched (a frame without motion
 * keeps its bytes); longer than 32 px they are shortened to 32 px. Deterministic, no random draws.
 * Colours are averaged in the image's 8-bit values (the renderer has no gamma). No allocation
 * after the first frame of a size.
 */

import { type Mat4, mat4Mul, mat4RigidInverse } from "../../robots/math.ts";
import { type MotionTiles, REACH_PER_PX } from "../render/rasterizer.ts";
import type { SceneObject } from "../render/scene.ts";
import { createGatherKernel, type GatherKernel, MAX_SMOOTH } from "./gather-simd.ts";

/** tile edge, px (Rasterizer.motionField summarises the field per tile of this size) */
export const BLUR_TILE = 8;
/** displacements below this leave a tile as it is (Rasterizer.motionField may skip such slots) */
export const BLUR_MIN_PX = 0.5;
/** the longest smear, px (longer displacements are shortened to it) */
const MAX_LEN = 32;
/** samples per pixel at most: 1 px apart up to 8 px of smear, farther apart beyond */
const MAX_SAMPLES = 9;
/** a sample nearer than the pixel by less than this is "the same surface", mm (RGB occlusion test) */
const BEHIND_MM = 10;
/** a reach threshold no pixel meets (MotionTiles.reach is at most REACH_MAX = 65534) */
const NEVER = 65535;

export interface FrameMotion {
  /** Rasterizer.motionField's summary of the frame's image motion over the interval: per pixel
   * the length of the displacement (`reach`), per tile (BLUR_TILE px) the longest one and the one
   * surface seen */
  tiles: MotionTiles;
  /** per colour-table slot: 1 where the object's shading is smooth (untextured), so that a
   * neighbourhood showing only it is unchanged by a box filter and is skipped */
  smooth: Uint8Array;
  /** the clean depth of the frame, mm, 0 = nothing (which surface is in front) */
  zMm: Uint16Array;
  /** the interval the displacements cover, ms */
  intervalMs: number;
}

export class MotionBlur {
  private src = new Uint8Array(0);
  /** per tile: the neighbourhood's longest displacement, or (0, 0) to skip the tile */
  private nbX = new Float32Array(0);
  private nbY = new Float32Array(0);
  /** per tile: the least and greatest clean depth (0 read as 65535), valid where zSeen = zFrame */
  private zLo = new Int32Array(0);
  private zHi = new Int32Array(0);
  private zSeen = new Int32Array(0);
  private zFrame = 0;
  /** a need mask of every tile (MotionTiles.fillReach), for the JS passes */
  private needAll = new Uint8Array(0);
  /** false: every pixel through the per-sample tests (the skips below give the same bytes; tests) */
  fastPaths = true;
  /** false: the colour gather and depth sweep in JS alone (the reference), even where the SIMD kernel would run (same bytes; tests) */
  simd = true;
  private readonly gather: GatherKernel | null = createGatherKernel();
  /** colour / depth tiles of the last frame through the kernel (the others: JS), for tests */
  readonly simdTiles = new Int32Array(2);
  /** tiles of the last frame through the plain box average (colour) / skipped (depth), for tests */
  readonly fastTiles = new Int32Array(2);
  private readonly ox = new Int32Array(MAX_SAMPLES);
  private readonly oy = new Int32Array(MAX_SAMPLES);
  /** the samples' reach thresholds (MotionTiles.reach units; NEVER: not met) */
  private readonly thr = new Int32Array(MAX_SAMPLES);
  /** the samples' offsets as pixel index steps (oy · w + ox), for tiles whose samples stay inside */
  private readonly po = new Int32Array(MAX_SAMPLES);
  /** the pass's exposure share, the current tile's smear vector (px), the edge step */
  private readonly sv = new Float64Array(4);
  /** depth pixels without return from motion (indices, in no particular order), valid up to `holeCount` */
  holes = new Int32Array(0);
  holeCount = 0;
  /** pixels the colour pass visited (tiles with motion and more than one surface), for tests and the bench */
  visited = 0;

  /**
   * Blur `rgb` in place over a `rgbScale` share of the motion's interval and list the depth
   * pixels without return over a `depthScale` share (0: none). Returns whether any tile moved.
   */
  apply(
    w: number,
    h: number,
    rgb: Uint8Array,
    m: FrameMotion,
    rgbScale: number,
    depthScale: number,
    edgeStepMm: number,
  ): boolean {
    this.holeCount = 0;
    this.visited = 0;
    const tiles = m.tiles;
    if (tiles.size !== BLUR_TILE) throw new Error(`motion tiles must be ${BLUR_TILE} px`);
    const tw = tiles.cols;
    const th = tiles.rows;
    const nt = tw * th;
    this.fastTiles.fill(0);
    this.simdTiles.fill(0);
    const scale = Math.max(rgbScale, depthScale);
    if (!(scale > 0)) return false;
    const tL = tiles.l2;
    let top = 0;
    for (let t = 0; t < nt; t++) if (tL[t]! > top) top = tL[t]!;
    // the neighbourhood a tile samples reaches as far as the longest half-smear
    const reach = Math.min(MAX_LEN, Math.sqrt(top) * scale) / 2;
    if (2 * reach < BLUR_MIN_PX) return false;
    const R = Math.ceil(reach / BLUR_TILE);
    if (this.holes.length !== w * h) this.holes = new Int32Array(w * h);
    // the kernel takes every tile (8 px wide), integer edge steps below 65536 (a step exceeds
    // edge iff it exceeds floor(edge)) and up to MAX_SMOOTH colour-table slots; else JS
    const gk = this.simd ? this.gather : null;
    if (
      gk !== null &&
      w % BLUR_TILE === 0 &&
      m.smooth.length <= MAX_SMOOTH &&
      !(depthScale > 0 && !(edgeStepMm >= 0 && edgeStepMm < 65536))
    )
      return this.applyKernel(gk, w, h, rgb, m, rgbScale, depthScale, edgeStepMm, R, scale);
    return this.applyJs(w, h, rgb, m, rgbScale, depthScale, edgeStepMm, R, scale);
  }

  /** apply's passes in the WebAssembly kernel: the tile set-up and the pixels */
  private applyKernel(
    gk: GatherKernel,
    w: number,
    h: number,
    rgb: Uint8Array,
    m: FrameMotion,
    rgbScale: number,
    depthScale: number,
    edgeStepMm: number,
    R: number,
    scale: number,
  ): boolean {
    const tiles = m.tiles;
    const tw = tiles.cols;
    const th = tiles.rows;
    const nt = tw * th;
    gk.layout(w, h, nt);
    gk.tL2.set(tiles.l2);
    gk.tVx.set(tiles.vx);
    gk.tVy.set(tiles.vy);
    gk.tSlot.set(tiles.slot);
    gk.tLeast.set(tiles.least);
    gk.smooth.set(m.smooth);
    const prm = gk.prm;
    prm[2] = scale * scale;
    if (gk.classify(m.smooth.length, tw, th, R) === 0) return false;
    // only the rows the passes can read: the tile rows with something to do, and as far as a
    // sample reaches beyond them
    let t0 = nt;
    let t1 = -1;
    const nX = gk.nbx;
    const nY = gk.nby;
    for (let t = 0; t < nt; t++)
      if (nX[t] !== 0 || nY[t] !== 0) {
        if (t0 === nt) t0 = t;
        t1 = t;
      }
    const r0 = Math.max(0, Math.floor(t0 / tw) * BLUR_TILE - MAX_LEN / 2);
    const r1 = Math.min(h, (Math.floor(t1 / tw) + 1) * BLUR_TILE + MAX_LEN / 2);
    gk.stage.set(m.zMm.subarray(r0 * w, r1 * w), r0 * w);
    gk.padDepth(r0, r1);
    const fast = this.fastPaths ? 1 : 0;
    // the records of both passes first: they say which tiles' reach is read (a linear tile of the
    // field has its reach written only when asked)
    let colour = 0;
    let depth = 0;
    if (rgbScale > 0) {
      prm[0] = rgbScale;
      colour = gk.plan(false, fast, tw, th);
      this.visited = gk.stats[0]!;
      this.fastTiles[0] = gk.stats[1]!;
      this.simdTiles[0] = colour;
    }
    if (depthScale > 0) {
      if (fast === 1) gk.zranges(tw, r0 / BLUR_TILE, Math.ceil(r1 / BLUR_TILE));
      prm[0] = depthScale;
      prm[1] = edgeStepMm;
      depth = gk.plan(true, fast, tw, th);
      this.fastTiles[1] = gk.stats[1]!;
      this.simdTiles[1] = depth;
    }
    if (tiles.fillReach !== null) {
      gk.need.fill(0);
      gk.markNeed(false, colour, tw, th);
      gk.markNeed(true, depth, tw, th);
      tiles.fillReach(gk.need);
    }
    gk.stage.set(tiles.reach.subarray(r0 * w, r1 * w), r0 * w);
    gk.padReach(r0, r1);
    if (rgbScale > 0) {
      gk.out.set(rgb.subarray(3 * r0 * w, 3 * r1 * w), 3 * r0 * w);
      gk.planes(r0, r1);
      gk.gatherTiles(colour);
      rgb.set(gk.out.subarray(3 * r0 * w, 3 * r1 * w), 3 * r0 * w);
    }
    if (depthScale > 0) {
      const found = gk.holesTiles(depth, Math.floor(edgeStepMm));
      this.holes.set(gk.holes.subarray(0, found));
      this.holeCount = found;
    }
    return true;
  }

  /** apply's passes in JS (the reference) */
  private applyJs(
    w: number,
    h: number,
    rgb: Uint8Array,
    m: FrameMotion,
    rgbScale: number,
    depthScale: number,
    edgeStepMm: number,
    R: number,
    scale: number,
  ): boolean {
    const tiles = m.tiles;
    const tw = tiles.cols;
    const th = tiles.rows;
    const nt = tw * th;
    if (this.nbX.length !== nt) {
      this.nbX = new Float32Array(nt);
      this.nbY = new Float32Array(nt);
      this.zLo = new Int32Array(nt);
      this.zHi = new Int32Array(nt);
      this.zSeen = new Int32Array(nt);
    }
    // a new frame's depth: every tile's range is stale (the counter wraps after 2³¹ frames)
    this.zFrame = this.zFrame === 0x7fffffff ? 1 : this.zFrame + 1;
    if (this.zFrame === 1) this.zSeen.fill(0);
    const fast = this.fastPaths ? 1 : 0;
    // the reach of every tile (the JS passes do not know which they read)
    if (tiles.fillReach !== null) {
      if (this.needAll.length !== nt) this.needAll = new Uint8Array(nt).fill(1);
      tiles.fillReach(this.needAll);
    }
    // the passes are module functions with every input an argument or local: as methods of this
    // class (and with doubles passed per tile) V8 deoptimised them repeatedly and boxed numbers
    // (≈ 290 KB of heap per wrist frame)
    if (
      classify(
        tiles.l2,
        tiles.vx,
        tiles.vy,
        tiles.slot,
        m.smooth,
        this.nbX,
        this.nbY,
        tw,
        th,
        R,
        scale * scale,
      ) === 0
    )
      return false;
    const z = m.zMm;
    const sv = this.sv;
    if (rgbScale > 0) {
      const n = w * h;
      if (this.src.length !== 3 * n) this.src = new Uint8Array(3 * n);
      this.src.set(rgb);
      sv[0] = rgbScale;
      this.visited = rgbPass(
        fast,
        w,
        h,
        rgb,
        this.src,
        tiles.reach,
        tiles.least,
        z,
        this.nbX,
        this.nbY,
        sv,
        this.ox,
        this.oy,
        this.thr,
        this.po,
        tw,
        th,
        this.fastTiles,
      );
    }
    if (depthScale > 0) {
      sv[0] = depthScale;
      sv[3] = edgeStepMm;
      this.holeCount = depthHoles(
        fast,
        w,
        h,
        tiles.reach,
        z,
        this.zLo,
        this.zHi,
        this.zSeen,
        this.zFrame,
        this.nbX,
        this.nbY,
        sv,
        this.ox,
        this.oy,
        this.thr,
        this.po,
        tw,
        th,
        this.holes,
        this.fastTiles,
      );
    }
    return true;
  }
}

/**
 * Per tile the longest displacement in its (2R + 1)² neighbourhood (nX, nY), or (0, 0) where the
 * neighbourhood is one smooth surface (a box filter leaves it as it is). Returns 1 when any tile
 * has something to do at the exposure (`scale2`: its squared share of the interval).
 */
function classify(
  tL: Float32Array,
  tX: Float32Array,
  tY: Float32Array,
  tS: Int32Array,
  smooth: Uint8Array,
  nX: Float32Array,
  nY: Float32Array,
  tw: number,
  th: number,
  R: number,
  scale2: number,
): number {
  let moved = 0;
  for (let ty = 0; ty < th; ty++)
    for (let tx = 0; tx < tw; tx++) {
      let best = 0;
      let bx = 0;
      let by = 0;
      const one = tS[ty * tw + tx]!;
      let uniform = one >= 0 && smooth[one] === 1;
      const j1 = Math.min(th - 1, ty + R);
      const k0 = Math.max(0, tx - R);
      const k1 = Math.min(tw - 1, tx + R);
      for (let j = Math.max(0, ty - R); j <= j1; j++)
        for (let k = k0; k <= k1; k++) {
          const t = j * tw + k;
          if (tS[t] !== one) uniform = false;
          const l = tL[t]!;
          if (l > best) {
            best = l;
            bx = tX[t]!;
            by = tY[t]!;
          }
        }
      if (uniform || best * scale2 < BLUR_MIN_PX * BLUR_MIN_PX) {
        bx = 0;
        by = 0;
      } else moved = 1;
      nX[ty * tw + tx] = bx;
      nY[ty * tw + tx] = by;
    }
  return moved;
}

/**
 * The sample offsets of a tile whose neighbourhood moves by (sv[1], sv[2]) px (clamped to 32
 * px) at an exposure share sv[0]: N odd, evenly over the interval; `thr` the reach (MotionTiles
 * units, displacement over the whole interval) a pixel needs for its half-smear at this exposure
 * to cover the sample's distance less ½ px, rounded up. Returns N (1: nothing to do).
 */
function samplesOf(sv: Float64Array, ox: Int32Array, oy: Int32Array, thr: Int32Array): number {
  const sc = sv[0]!;
  let vx = sv[1]!;
  let vy = sv[2]!;
  // (Math.hypot would allocate: it is a variadic builtin V8 does not inline)
  let l = Math.sqrt(vx * vx + vy * vy);
  if (l < BLUR_MIN_PX) return 1;
  if (l > MAX_LEN) {
    vx *= MAX_LEN / l;
    vy *= MAX_LEN / l;
    l = MAX_LEN;
  }
  const ns = Math.min(MAX_SAMPLES, 2 * Math.ceil(l / 2) + 1);
  const half = (ns - 1) / 2;
  for (let k = 0; k < ns; k++) {
    const s = (k - half) / (ns - 1);
    // symmetric rounding: the samples either side of the centre mirror each other
    ox[k] = Math.sign(s) * Math.round(Math.abs(s * vx));
    oy[k] = Math.sign(s) * Math.round(Math.abs(s * vy));
    // half the displacement at this exposure (reach / REACH_PER_PX · sc / 2) must cover t
    const t = Math.max(0, Math.abs(s) * l - 0.5);
    thr[k] = t === 0 ? 0 : Math.min(NEVER, Math.ceil((2 * REACH_PER_PX * t) / sc));
  }
  return ns;
}

/** the colour gather over every tile with something to do (sv[0]: the exposure's share); returns the pixels visited */
function rgbPass(
  fast: number,
  w: number,
  h: number,
  rgb: Uint8Array,
  src: Uint8Array,
  reach: Uint16Array,
  least: Int32Array,
  z: Uint16Array,
  nX: Float32Array,
  nY: Float32Array,
  sv: Float64Array,
  ox: Int32Array,
  oy: Int32Array,
  thr: Int32Array,
  po: Int32Array,
  tw: number,
  th: number,
  fastTiles: Int32Array,
): number {
  const sc = sv[0]!;
  let visited = 0;
  for (let ty = 0; ty < th; ty++)
    for (let tx = 0; tx < tw; tx++) {
      const tile = ty * tw + tx;
      if (nX[tile] === 0 && nY[tile] === 0) continue;
      sv[1] = nX[tile]! * sc;
      sv[2] = nY[tile]! * sc;
      const ns = samplesOf(sv, ox, oy, thr);
      if (ns === 1) continue;
      const inv = 1 / ns;
      const x0 = tx * BLUR_TILE;
      const y0 = ty * BLUR_TILE;
      const x1 = Math.min(w, x0 + BLUR_TILE);
      const y1 = Math.min(h, y0 + BLUR_TILE);
      const lo = Math.max(Math.abs(ox[0]!), Math.abs(oy[0]!));
      const inside = x0 - lo >= 0 && y0 - lo >= 0 && x1 + lo <= w && y1 + lo <= h;
      for (let k = 0; k < ns; k++) po[k] = oy[k]! * w + ox[k]!;
      visited += (x1 - x0) * (y1 - y0);
      // the least reach of the pixels the tile's samples can reach: a sample whose threshold is
      // at most this counts for every pixel of the tile, in front or behind (−1: no guarantee);
      // every sample within it (thr[0] is the largest threshold): a plain box average
      const sure = fast === 1 ? leastIn(least, tw, th, x0 - lo, x1 - 1 + lo, y0 - lo, y1 - 1 + lo) : -1;
      const box = sure >= thr[0]!;
      if (box) fastTiles[0]!++;
      if (box) {
        for (let y = y0; y < y1; y++)
          for (let x = x0; x < x1; x++) {
            let sr = 0;
            let sg = 0;
            let sb = 0;
            const q = y * w + x;
            for (let k = 0; k < ns; k++) {
              let p = q + po[k]!;
              if (!inside) {
                const px = x + ox[k]!;
                const py = y + oy[k]!;
                p = (py < 0 ? 0 : py >= h ? h - 1 : py) * w + (px < 0 ? 0 : px >= w ? w - 1 : px);
              }
              const o = 3 * p;
              sr += src[o]!;
              sg += src[o + 1]!;
              sb += src[o + 2]!;
            }
            const o = 3 * q;
            rgb[o] = (sr * inv + 0.5) | 0;
            rgb[o + 1] = (sg * inv + 0.5) | 0;
            rgb[o + 2] = (sb * inv + 0.5) | 0;
          }
        continue;
      }
      for (let y = y0; y < y1; y++)
        for (let x = x0; x < x1; x++) {
          const q = y * w + x;
          const rq = reach[q]!;
          const zq = z[q] === 0 ? 65535 : z[q]!;
          let sr = 0;
          let sg = 0;
          let sb = 0;
          let own = 0;
          for (let k = 0; k < ns; k++) {
            let p = q + po[k]!;
            if (!inside) {
              const px = x + ox[k]!;
              const py = y + oy[k]!;
              p = (py < 0 ? 0 : py >= h ? h - 1 : py) * w + (px < 0 ? 0 : px >= w ? w - 1 : px);
            }
            const t = thr[k]!;
            // within the tile's guarantee it counts; else, behind q: seen at q only where q's
            // surface moved off it; else: where its own path reaches q
            let counts = t <= sure;
            if (!counts) {
              const zp = z[p] === 0 ? 65535 : z[p]!;
              counts = (zp > zq + BEHIND_MM ? rq : reach[p]!) >= t;
            }
            if (counts) {
              const o = 3 * p;
              sr += src[o]!;
              sg += src[o + 1]!;
              sb += src[o + 2]!;
            } else own++;
          }
          const o = 3 * q;
          rgb[o] = ((sr + own * src[o]!) * inv + 0.5) | 0;
          rgb[o + 1] = ((sg + own * src[o + 1]!) * inv + 0.5) | 0;
          rgb[o + 2] = ((sb + own * src[o + 2]!) * inv + 0.5) | 0;
        }
    }
  return visited;
}

/** the least of `least` over the tiles that hold pixels x0…x1, y0…y1 (clamped to the image) */
function leastIn(
  least: Int32Array,
  tw: number,
  th: number,
  x0: number,
  x1: number,
  y0: number,
  y1: number,
): number {
  const k0 = Math.max(0, Math.floor(x0 / BLUR_TILE));
  const k1 = Math.min(tw - 1, Math.floor(x1 / BLUR_TILE));
  const j0 = Math.max(0, Math.floor(y0 / BLUR_TILE));
  const j1 = Math.min(th - 1, Math.floor(y1 / BLUR_TILE));
  let lo = NEVER;
  for (let j = j0; j <= j1; j++)
    for (let k = k0; k <= k1; k++) {
      const v = least[j * tw + k]!;
      if (v < lo) lo = v;
    }
  return lo;
}

/**
 * The depth pixels that another surface (more than the edge step sv[3] away) crosses during the
 * infrared exposure (sv[0]: its share), into `holes`; returns their number.
 */
function depthHoles(
  fast: number,
  w: number,
  h: number,
  reach: Uint16Array,
  z: Uint16Array,
  zLo: Int32Array,
  zHi: Int32Array,
  zSeen: Int32Array,
  frame: number,
  nX: Float32Array,
  nY: Float32Array,
  sv: Float64Array,
  ox: Int32Array,
  oy: Int32Array,
  thr: Int32Array,
  po: Int32Array,
  tw: number,
  th: number,
  holes: Int32Array,
  fastTiles: Int32Array,
): number {
  const sc = sv[0]!;
  const edge = sv[3]!;
  let count = 0;
  for (let ty = 0; ty < th; ty++)
    for (let tx = 0; tx < tw; tx++) {
      const tile = ty * tw + tx;
      if (nX[tile] === 0 && nY[tile] === 0) continue;
      sv[1] = nX[tile]! * sc;
      sv[2] = nY[tile]! * sc;
      const ns = samplesOf(sv, ox, oy, thr);
      if (ns === 1) continue;
      const x0 = tx * BLUR_TILE;
      const y0 = ty * BLUR_TILE;
      const x1 = Math.min(w, x0 + BLUR_TILE);
      const y1 = Math.min(h, y0 + BLUR_TILE);
      const lo = Math.max(Math.abs(ox[0]!), Math.abs(oy[0]!));
      const inside = x0 - lo >= 0 && y0 - lo >= 0 && x1 + lo <= w && y1 + lo <= h;
      for (let k = 0; k < ns; k++) po[k] = oy[k]! * w + ox[k]!;
      if (fast === 1) {
        // no two depths the samples can pair differ by more than the step: no pixel of the tile
        // can lose its return (the per-sample test below would pass over every sample)
        const k0 = Math.max(0, Math.floor((x0 - lo) / BLUR_TILE));
        const k1 = Math.min(tw - 1, Math.floor((x1 - 1 + lo) / BLUR_TILE));
        const j0 = Math.max(0, Math.floor((y0 - lo) / BLUR_TILE));
        const j1 = Math.min(th - 1, Math.floor((y1 - 1 + lo) / BLUR_TILE));
        let zmin = 65535;
        let zmax = 0;
        for (let j = j0; j <= j1; j++)
          for (let k = k0; k <= k1; k++) {
            const t = j * tw + k;
            if (zSeen[t] !== frame) depthRange(z, w, h, t, tw, zLo, zHi, zSeen, frame);
            if (zLo[t]! < zmin) zmin = zLo[t]!;
            if (zHi[t]! > zmax) zmax = zHi[t]!;
          }
        if (zmax - zmin <= edge) {
          fastTiles[1]!++;
          continue;
        }
      }
      for (let y = y0; y < y1; y++)
        for (let x = x0; x < x1; x++) {
          const q = y * w + x;
          const rq = reach[q]!;
          const zq = z[q] === 0 ? 65535 : z[q]!;
          for (let k = 0; k < ns; k++) {
            let p = q + po[k]!;
            if (!inside) {
              const px = x + ox[k]!;
              const py = y + oy[k]!;
              p = (py < 0 ? 0 : py >= h ? h - 1 : py) * w + (px < 0 ? 0 : px >= w ? w - 1 : px);
            }
            const zp = z[p] === 0 ? 65535 : z[p]!;
            const step = zp - zq;
            if (step <= edge && -step <= edge) continue;
            // another surface crosses q during the exposure: a farther one where q's moved off
            // it, a nearer one where its own path reaches q
            if ((step > 0 ? rq : reach[p]!) >= thr[k]!) {
              holes[count++] = q;
              break;
            }
          }
        }
    }
  return count;
}

/** tile t's least and greatest depth (0 read as 65535, as the tests read it), into zLo, zHi */
function depthRange(
  z: Uint16Array,
  w: number,
  h: number,
  t: number,
  tw: number,
  zLo: Int32Array,
  zHi: Int32Array,
  zSeen: Int32Array,
  frame: number,
): void {
  const x0 = (t % tw) * BLUR_TILE;
  const y0 = ((t - (t % tw)) / tw) * BLUR_TILE;
  const x1 = Math.min(w, x0 + BLUR_TILE);
  const y1 = Math.min(h, y0 + BLUR_TILE);
  let lo = 65535;
  let hi = 0;
  for (let y = y0; y < y1; y++)
    for (let x = x0; x < x1; x++) {
      const v = z[y * w + x]!;
      const d = v === 0 ? 65535 : v;
      if (d < lo) lo = d;
      if (d > hi) hi = d;
    }
  zLo[t] = lo;
  zHi[t] = hi;
  zSeen[t] = frame;
}

/**
 * The per-slot transforms Rasterizer.motionField takes, from the scene's poses at the start (a)
 * and end (b) of an exposure and at the rendered instant (the objects' `pose` now), and the
 * world ← camera transforms at the three instants; plus the tiles it fills. Slot i + 1 is
 * `objects[i]`, slot 0 the background (at infinity). No allocation after the first frame of a
 * size and object count.
 */
export class ExposureMotion {
  toA = new Float64Array(16);
  toB = new Float64Array(16);
  moving = new Uint8Array(1);
  dx = new Float32Array(0);
  dy = new Float32Array(0);
  /** per slot: 1 = untextured (see FrameMotion.smooth) */
  smooth = new Uint8Array(1);
  readonly tiles: MotionTiles = {
    size: BLUR_TILE,
    cols: 0,
    rows: 0,
    l2: new Float32Array(0),
    vx: new Float32Array(0),
    vy: new Float32Array(0),
    slot: new Int32Array(0),
    reach: new Uint16Array(0),
    least: new Int32Array(0),
    ready: new Uint8Array(0),
    fillReach: null,
    rect: [0, 0, 0, 0],
  };
  private readonly camFromWorld = new Float64Array(16);
  private readonly objInv = new Float64Array(16);
  private readonly objT = new Float64Array(16);
  private readonly t1 = new Float64Array(16);
  private readonly t2 = new Float64Array(16);

  private readonly frame: FrameMotion = {
    tiles: this.tiles,
    smooth: this.smooth,
    zMm: new Uint16Array(0),
    intervalMs: 0,
  };

  /** the FrameMotion of the last `set` and motionField (one object, reused), with the frame's clean depth */
  motion(zMm: Uint16Array, intervalMs: number): FrameMotion {
    const f = this.frame;
    f.smooth = this.smooth;
    f.zMm = zMm;
    f.intervalMs = intervalMs;
    return f;
  }

  /** size the displacement buffers (dx, dy: for a look at the field; the blur needs only `tiles`) */
  size(n: number): void {
    if (this.dx.length !== n) {
      this.dx = new Float32Array(n);
      this.dy = new Float32Array(n);
    }
  }

  /**
   * `posesA`, `posesB`: 16 numbers per object (world ← object at a, at b); returns whether
   * anything moves relative to the camera.
   */
  set(
    objects: readonly SceneObject[],
    posesA: Float64Array,
    posesB: Float64Array,
    camA: Mat4,
    camNow: Mat4,
    camB: Mat4,
  ): boolean {
    const slots = objects.length + 1;
    if (this.moving.length !== slots) {
      this.moving = new Uint8Array(slots);
      this.smooth = new Uint8Array(slots);
      this.toA = new Float64Array(16 * slots);
      this.toB = new Float64Array(16 * slots);
    }
    this.smooth[0] = 1;
    for (let s = 1; s < slots; s++) this.smooth[s] = objects[s - 1]!.shape.kind === "texturedPlane" ? 0 : 1;
    const camStillA = same(camA, 0, camNow);
    const camStillB = same(camB, 0, camNow);
    let any = false;
    for (let s = 0; s < slots; s++) {
      const o = s === 0 ? null : objects[s - 1]!;
      const stillA = camStillA && (o === null || same(posesA, 16 * (s - 1), o.pose));
      const stillB = camStillB && (o === null || same(posesB, 16 * (s - 1), o.pose));
      const moving = !(stillA && stillB) && o?.visible !== false;
      this.moving[s] = moving ? 1 : 0;
      if (!moving) continue;
      any = true;
      this.relative(o, posesA, s, camA, camNow, this.toA);
      this.relative(o, posesB, s, camB, camNow, this.toB);
    }
    return any;
  }

  /** camera at t ← world · world ← object at t · (world ← object now)⁻¹ · world ← camera now */
  private relative(
    o: SceneObject | null,
    poses: Float64Array,
    s: number,
    camT: Mat4,
    camNow: Mat4,
    out: Float64Array,
  ): void {
    mat4RigidInverse(camT, this.camFromWorld);
    if (o === null) mat4Mul(this.camFromWorld, camNow, this.t2);
    else {
      const w = this.objT;
      for (let k = 0; k < 16; k++) w[k] = poses[16 * (s - 1) + k]!;
      mat4Mul(this.camFromWorld, w, this.t1);
      mat4Mul(this.t1, mat4RigidInverse(o.pose, this.objInv), this.t2);
      mat4Mul(this.t2, camNow, this.t1);
      this.t2.set(this.t1);
    }
    out.set(this.t2, 16 * s);
  }
}

function same(a: Float64Array, offset: number, b: Mat4): boolean {
  for (let k = 0; k < 16; k++) if (a[offset + k] !== b[k]) return false;
  return true;
}
