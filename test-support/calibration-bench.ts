/**
 * A sim bench for calibration tests and benchmarks: the sampled buzz-wire calibration with lens
 * distortion on the front camera and a ChArUco board carried on the flange, written to a
 * calibration file the gateway loads (the ground truth a procedure must recover), and the API
 * reached through fastify inject().
 */
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { BenchApi, type Transport } from "../calibration/api-client.ts";
import { type BoardSpec, boardSizeM, DEFAULT_BOARD } from "../calibration/board.ts";
import { detectBoard, type ImageU8 } from "../calibration/board-detect.ts";
import type { Calibration, PoseM } from "../calibration/schema.ts";
import { testGateway, type TestGateway } from "../compose/testing.ts";
import { FR3 } from "../robots/franka/models.ts";
import {
  mat4Identity,
  mat4Mul,
  mat4RigidInverse,
  mat4ToPose,
  poseToMat4,
  type Vec3,
  vadd,
  vcross,
  vnorm,
  vscale,
} from "../robots/math.ts";

const vnormalize = (a: readonly number[]): Vec3 => vscale(a, 1 / vnorm(a));
import { sampleBenchCalibration } from "../sim/buzzwire/bench.ts";

/** The front camera's lens in the calibration bench (k1 k2 p1 p2 k3). */
export const BENCH_DISTORTION = [-0.08, 0.02, 0, 0, 0];
/** Distance of the carried board's plane beyond the flange, m (past the fingers and the loop). */
export const CARRIED_BOARD_OFFSET_M = 0.24;

/** flange ← board: the board faces along the flange z axis, centred on it. */
export function carriedBoardPose(): PoseM {
  const [w, h] = boardSizeM(DEFAULT_BOARD);
  // board x = flange x, board y = −flange y, board z = −flange z (its face looks along flange +z)
  const m = mat4Identity();
  m[5] = -1;
  m[10] = -1;
  m[3] = -w / 2;
  m[7] = h / 2;
  m[11] = CARRIED_BOARD_OFFSET_M;
  return mat4ToPose(m);
}

export interface CalibrationBench {
  g: TestGateway;
  api: BenchApi;
  truth: Calibration;
  /** the calibration file the gateway loaded (the truth) */
  file: string;
  close(): Promise<void>;
}

/**
 * world ← board of the table board in the wrist-camera bench: lying face up on the table beside
 * the wire's board (its +y side), board x along world x, board y along world −y.
 */
export function tableBoardPose(): PoseM {
  const [w, h] = boardSizeM(DEFAULT_BOARD);
  const m = mat4Identity();
  m[5] = -1;
  m[10] = -1;
  m[3] = 0.45 - w / 2;
  m[7] = 0.45 + h / 2;
  m[11] = 0.002;
  return mat4ToPose(m);
}

/** The calibration bench's ground truth for `seed` (what its calibration file says and the sim renders). */
export function calibrationTruth(seed = 3, boards: "carried" | "table" = "carried"): Calibration {
  const base = sampleBenchCalibration(FR3, seed);
  return {
    ...base,
    cameras: base.cameras.map((c) =>
      c.name === "front" ? { ...c, intrinsics: { ...c.intrinsics, distortion: [...BENCH_DISTORTION] } } : c,
    ),
    calibrationBoards: [
      boards === "carried"
        ? {
            name: "carried",
            board: DEFAULT_BOARD,
            mount: { frame: "flange", poseFlange: carriedBoardPose() },
          }
        : { name: "table", board: DEFAULT_BOARD, mount: { frame: "world", poseWorld: tableBoardPose() } },
    ],
  };
}

/** The gateway API of a test gateway through fastify inject() (the same requests as over HTTP). */
export function injectApi(g: TestGateway): BenchApi {
  const transport: Transport = async (method, path, body, who) => {
    const res = await g.app.inject({
      method,
      url: path,
      headers: who === "agent" ? g.agent : g.operator,
      ...(body !== undefined ? { payload: body as object } : {}),
    });
    const json = res.headers["content-type"]?.toString().startsWith("application/json");
    return { status: res.statusCode, body: json ? res.json() : new Uint8Array(res.rawPayload) };
  };
  return new BenchApi(transport);
}

/**
 * The calibration bench for `seed`: `carried` (default) puts the board on the flange for the
 * fixed cameras; `table` lays it on the table for the wrist camera (a board in the hand would
 * fill the wrist camera's view).
 */
export async function calibrationBench(
  seed = 3,
  boards: "carried" | "table" = "carried",
): Promise<CalibrationBench> {
  const truth = calibrationTruth(seed, boards);
  const dir = mkdtempSync(join(tmpdir(), "rg-calib-"));
  const file = join(dir, "calibration.json");
  writeFileSync(file, JSON.stringify(truth, null, 2));
  // a calibration session: the board replaces the loop in the gripper, so a wire contact is no
  // stop (collisions of the arm still are)
  const g = await testGateway({
    backend: { type: "sim" },
    calibration: file,
    task: { id: "free-motion", seed },
    safety: { stopOnEvents: ["collision"] },
  });
  return { g, api: injectApi(g), truth, file, close: () => g.close() };
}

/**
 * The operator's presentation pose for a camera: joints that hold the carried board face-on to
 * the camera at `distanceM` from it, on the line to `target` (what an operator does by jogging;
 * here from the ground-truth camera pose, through the gateway's IK).
 */
export async function presentationPose(
  b: CalibrationBench,
  camera: string,
  target: [number, number, number],
  distanceM: number,
): Promise<number[]> {
  const cam = b.truth.cameras.find((c) => c.name === camera)!;
  if (cam.extrinsics.mount !== "world") throw new Error("world cameras only");
  const eye = cam.extrinsics.poseWorld.xyz;
  const dir = vnormalize([target[0] - eye[0], target[1] - eye[1], target[2] - eye[2]]);
  const centre: Vec3 = [
    eye[0] + dir[0] * distanceM,
    eye[1] + dir[1] * distanceM,
    eye[2] + dir[2] * distanceM,
  ];
  // flange z points back at the camera; try rolls about it until the gateway's IK answers
  const z: Vec3 = [-dir[0], -dir[1], -dir[2]];
  const x0 = vnormalize(vcross(vcross(z, [0, 0, -1]), z));
  const y0 = vcross(z, x0);
  let last: unknown;
  for (const roll of [
    0,
    Math.PI / 4,
    -Math.PI / 4,
    Math.PI / 2,
    -Math.PI / 2,
    (3 * Math.PI) / 4,
    (-3 * Math.PI) / 4,
    Math.PI,
  ]) {
    const x = vadd(vscale(x0, Math.cos(roll)), vscale(y0, Math.sin(roll)));
    const y = vcross(z, x);
    const m = mat4Identity();
    for (let r = 0; r < 3; r++) {
      m[r * 4] = x[r]!;
      m[r * 4 + 1] = y[r]!;
      m[r * 4 + 2] = z[r]!;
    }
    m[3] = centre[0] - z[0] * CARRIED_BOARD_OFFSET_M;
    m[7] = centre[1] - z[1] * CARRIED_BOARD_OFFSET_M;
    m[11] = centre[2] - z[2] * CARRIED_BOARD_OFFSET_M;
    // base = world here (the sampled bench puts the base at the world origin)
    const tool = mat4Mul(m, poseToMat4(b.truth.tool.loopPoseFlange));
    try {
      return (await b.api.ik(mat4ToPose(tool) as never, [0, -0.3, 0, -2.0, 0, 1.7, 0.785])).q;
    } catch (e) {
      last = e;
    }
  }
  throw new Error(
    `no presentation pose for ${camera} at ${distanceM} m (flange at ${centre}): ${String(last)}`,
  );
}

/**
 * The operator's start pose for the wrist camera: joints that put the wrist camera `distanceM`
 * above the table board's centre, looking straight down at it (what an operator does by
 * jogging; here from the ground truth, through the gateway's IK).
 */
export async function wristStartPose(
  b: CalibrationBench,
  camera = "wrist",
  distanceM = 0.4,
): Promise<number[]> {
  const cam = b.truth.cameras.find((c) => c.name === camera)!;
  if (cam.extrinsics.mount !== "tool") throw new Error("wrist cameras only");
  const board = b.truth.calibrationBoards!.find((x) => x.mount.frame === "world")!;
  if (board.mount.frame !== "world") throw new Error("table board");
  const [w, h] = boardSizeM(board.board);
  let last: unknown;
  for (const roll of [0, Math.PI / 2, -Math.PI / 2, Math.PI]) {
    // camera ← board: face-on, centred, `roll` about the optical axis
    const c = Math.cos(roll);
    const s = Math.sin(roll);
    const camFromBoard = mat4Identity();
    camFromBoard[0] = c;
    camFromBoard[1] = -s;
    camFromBoard[4] = s;
    camFromBoard[5] = c;
    camFromBoard[3] = -(c * w - s * h) / 2;
    camFromBoard[7] = -(s * w + c * h) / 2;
    camFromBoard[11] = distanceM;
    const worldFromBoard = poseToMat4(board.mount.poseWorld);
    const flange = mat4Mul(
      mat4Mul(worldFromBoard, mat4RigidInverse(camFromBoard)),
      mat4RigidInverse(poseToMat4(cam.extrinsics.poseFlange)),
    );
    const tool = mat4Mul(flange, poseToMat4(b.truth.tool.loopPoseFlange));
    try {
      return (await b.api.ik(mat4ToPose(tool) as never, [0, -0.3, 0, -2.0, 0, 1.7, 0.785])).q;
    } catch (e) {
      last = e;
    }
  }
  throw new Error(`no wrist start pose above the table board: ${String(last)}`);
}

/** A copy of an image with seeded Gaussian noise (Box–Muller over a xorshift generator), clamped to 0…255. */
export function withNoise(img: ImageU8, sigma: number, seed: number): ImageU8 {
  let s = seed >>> 0 || 1;
  const rnd = () => {
    s ^= s << 13;
    s ^= s >>> 17;
    s ^= s << 5;
    return ((s >>> 0) + 0.5) / 4294967296;
  };
  const d = img.data.slice();
  for (let i = 0; i < d.length; i++) {
    const g = Math.sqrt(-2 * Math.log(rnd())) * Math.cos(2 * Math.PI * rnd());
    d[i] = Math.max(0, Math.min(255, Math.round(d[i]! + sigma * g)));
  }
  return { ...img, data: d };
}

/**
 * Overlay error between two benches at their current joints: the board corners detected in one
 * camera's frame on each, RMS distance over the corner ids both see, px.
 */
export async function cornerAgreement(
  a: BenchApi,
  b: BenchApi,
  camera: string,
  board: BoardSpec = DEFAULT_BOARD,
): Promise<{ rmsPx: number; corners: number }> {
  const ra = await a.capture([camera]);
  const rb = await b.capture([camera]);
  const da = await detectBoard(board, ra.images.get(camera)!);
  const db = await detectBoard(board, rb.images.get(camera)!);
  let e2 = 0;
  let n = 0;
  da.ids.forEach((id, k) => {
    const j = db.ids.indexOf(id);
    if (j < 0) return;
    e2 += (da.pixels[k]![0] - db.pixels[j]![0]) ** 2 + (da.pixels[k]![1] - db.pixels[j]![1]) ** 2;
    n++;
  });
  return { rmsPx: n ? Math.sqrt(e2 / n) : Number.POSITIVE_INFINITY, corners: n };
}

/** Lift the loop straight up off the wire start (in small steps, so it never drags along the wire), then go to `q`. */
export async function liftThenGo(
  b: CalibrationBench,
  q: number[],
  liftM = 0.15,
  move: { maxJointSpeedRadS?: number } = {},
): Promise<void> {
  let r = await b.api.reading();
  for (let k = 1; k <= 3; k++) {
    const fk = await b.api.fk(r.q);
    const up = {
      ...fk.tool,
      xyz: [fk.tool.xyz[0], fk.tool.xyz[1], fk.tool.xyz[2] + liftM / 3] as [number, number, number],
    };
    r = await b.api.moveTo((await b.api.ik(up, r.q)).q, move);
  }
  await b.api.moveTo(q, move);
}

/** Distance of the presented board from the front camera, m: close enough for perspective (the board spans ~ 80 % of the image width face-on). */
export const FRONT_PRESENTATION_M = 0.3;

/** The operator's presentation pose for the front camera: the board face-on, FRONT_PRESENTATION_M from it, on the line to 0.2 m above the wire's middle. */
export function frontPresentationPose(b: CalibrationBench, distanceM = FRONT_PRESENTATION_M): Promise<number[]> {
  const wire = b.truth.wire.pointsBase;
  const mid = wire[Math.floor(wire.length / 2)]!;
  return presentationPose(b, "front", [mid[0], mid[1], mid[2] + 0.2], distanceM);
}

/**
 * What a lab starts from for the front camera: nominal intrinsics (fx = fy = 600 px, no
 * distortion) and a camera pose measured with a tape (2 cm and 1 cm off).
 */
export function tapeMeasured(truth: Calibration): Calibration {
  return {
    ...truth,
    cameras: truth.cameras.map((c) =>
      c.name === "front" && c.extrinsics.mount === "world"
        ? {
            ...c,
            intrinsics: { ...c.intrinsics, fxPx: 600, fyPx: 600, distortion: [0, 0, 0, 0, 0] },
            extrinsics: {
              mount: "world" as const,
              poseWorld: {
                ...c.extrinsics.poseWorld,
                xyz: [
                  c.extrinsics.poseWorld.xyz[0] + 0.02,
                  c.extrinsics.poseWorld.xyz[1] - 0.01,
                  c.extrinsics.poseWorld.xyz[2],
                ] as [number, number, number],
              },
            },
          }
        : c,
    ),
  };
}

/**
 * The calibration with the wrist camera's flange mount shifted by `dxyz` (m): what a lab starts
 * from (the mount measured with a ruler), or a camera that slipped.
 */
export function withWristMountOffset(truth: Calibration, dxyz: readonly [number, number, number]): Calibration {
  return {
    ...truth,
    cameras: truth.cameras.map((c) => {
      if (c.name !== "wrist" || c.extrinsics.mount !== "tool") return c;
      const p = c.extrinsics.poseFlange;
      return {
        ...c,
        extrinsics: {
          mount: "tool" as const,
          poseFlange: { ...p, xyz: [p.xyz[0] + dxyz[0], p.xyz[1] + dxyz[1], p.xyz[2] + dxyz[2]] },
        },
      };
    }),
  };
}
