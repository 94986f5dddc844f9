/**
 * Calibration procedures over the gateway API (calibration/api-client.ts): the robot carries a
 * ChArUco board through K joint poses chosen around a presentation pose; at each the cameras
 * are captured and the board detected. The gateway's safety supervisor judges every move; a
 * refused pose is skipped and reported (nothing moved). Nothing here reads simulator state.
 */
import { CodedError } from "../seam/errors.ts";
import type { BoardSpec } from "./board.ts";
import { detectBoard } from "./board-detect.ts";
import { ApiError, type BenchApi, type Pose } from "./api-client.ts";
import type { BoardView, RejectedView } from "./intrinsics.ts";

/** Largest joint offsets from the presentation pose, rad (joints 1…7). */
export const POSE_SPREAD_RAD = [0.15, 0.1, 0.12, 0.15, 0.5, 0.45, 0.4] as const;

/**
 * K joint targets around `around`: a deterministic low-discrepancy spread (Halton sequence per
 * joint), so the board visits every part of the view and tilts both ways about both axes.
 */
export function posesAround(
  around: readonly number[],
  k: number,
  spread: readonly number[] = POSE_SPREAD_RAD,
): number[][] {
  const primes = [2, 3, 5, 7, 11, 13, 17];
  const halton = (i: number, b: number) => {
    let f = 1;
    let r = 0;
    for (let n = i; n > 0; n = Math.floor(n / b)) {
      f /= b;
      r += f * (n % b);
    }
    return r;
  };
  const out: number[][] = [];
  for (let i = 1; i <= k; i++)
    out.push(around.map((q, j) => q + (2 * halton(i, primes[j % 7]!) - 1) * (spread[j] ?? 0)));
  return out;
}

/** One stop of the carried board: the robot's measured joints and flange pose, and what each camera saw. */
export interface CarriedView {
  id: string;
  q: number[];
  /** base ← flange at the capture, from the gateway's FK of the measured joints */
  flangeBase: Pose;
  /** per camera: detected corners (empty when the board was not seen) */
  detections: Map<string, BoardView>;
}

export interface CarriedSession {
  views: CarriedView[];
  /** poses the gateway refused or could not reach, with its answer */
  refused: RejectedView[];
  imageSize: Map<string, { width: number; height: number }>;
}

/** Move the carried board through `targets` and capture `cameras` at each stop. */
export async function collectCarriedViews(
  api: BenchApi,
  board: BoardSpec,
  cameras: readonly string[],
  targets: readonly (readonly number[])[],
  onView?: (v: CarriedView, images: Map<string, import("./board-detect.ts").ImageU8>) => void | Promise<void>,
  move: { maxJointSpeedRadS?: number } = {},
): Promise<CarriedSession> {
  const views: CarriedView[] = [];
  const refused: RejectedView[] = [];
  const imageSize = new Map<string, { width: number; height: number }>();
  for (let i = 0; i < targets.length; i++) {
    const id = `pose-${String(i + 1).padStart(2, "0")}`;
    try {
      await api.moveTo(targets[i]!, move);
    } catch (e) {
      if (!(e instanceof ApiError)) throw e;
      if (e.code === "RB_ERR_EPISODE_ENDED")
        throw new CodedError("RB_ERR_CALIB_BAD_INPUT", {
          what: "episode",
          reason: `the episode ended before ${id} (${e.message}); start a free-motion episode and bring the board to its presentation pose clear of the wire`,
        });
      refused.push({ id, reason: `move refused: ${e.message}` });
      continue;
    }
    const { reading, images } = await api.capture([...cameras]);
    const fk = await api.fk(reading.q);
    const detections = new Map<string, BoardView>();
    for (const [cam, img] of images) {
      imageSize.set(cam, { width: img.width, height: img.height });
      const d = await detectBoard(board, img);
      detections.set(cam, { id, ids: d.ids, pixels: d.pixels });
    }
    const v: CarriedView = { id, q: reading.q, flangeBase: fk.flange, detections };
    views.push(v);
    await onView?.(v, images);
  }
  return { views, refused, imageSize };
}
