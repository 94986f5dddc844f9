/**
 * The tool-side calibration procedures (calibration/tool-procedures.ts) on the real backend wired
 * to the test rigs (hil-tests/real-bench.ts: the rosbridge rig in a child process serving the
 * simulator under franka_ros2's names and ROS camera topics, the buzz box in simavr), chained as a
 * lab runs them — the tool frame from a nominal 4 mm / 3° off, then wire teaching and board
 * registration with the tool frame just measured. Shared by hil-tests/calibration-tool-real.test.ts
 * and `bench/calibration-tool.ts --rig`.
 *
 * Everything goes through the gateway's HTTP API on a real port, the same procedures and the same
 * scripted operators (test-support/tool-calibration-bench.ts) as on the sim; the gateway runs its
 * real backend, so:
 * - depth comes from the rig's `/<camera>/aligned_depth_to_color/image_raw` (16UC1 mm, as
 *   realsense2_camera publishes it), named in the bench file as a real bench names its RGB-D
 *   cameras' topics;
 * - the wire teacher's contacts are the buzz box's (sim contact → simavr pin → firmware → UART →
 *   pty → BuzzboxDriver), time-stamped by the gateway on arrival.
 * Ground truth: the calibration the rig's simulator builds its scene from (`sampleBenchCalibration`
 * for the seed: cameras, loop on the flange, wire, board). The gateway's bench file names it as the
 * bench's calibration (its IK tool frame is what the scripted operators aim with, as a person
 * aims with their eyes); each procedure is handed a nominal file to correct and reads only flange
 * poses of measured joints, depth images and contact events.
 */
import type { AddressInfo } from "node:net";
import { BenchApi, fetchTransport } from "../calibration/api-client.ts";
import { rigid, rotationAngle, rotvecToMat3 } from "../calibration/linalg.ts";
import type { Calibration } from "../calibration/schema.ts";
import {
  type BoardRegistrationReport,
  calibrateToolFrame,
  defaultBoardMarks,
  registerBoard,
  type ToolFrameReport,
  teachWire,
  type WireTeachReport,
} from "../calibration/tool-procedures.ts";
import { centrelineDistance } from "../calibration/wire-teach.ts";
import { AGENT_TOKEN, OPERATOR_TOKEN, type TestGateway, testGateway } from "../compose/testing.ts";
import { FR3 } from "../robots/franka/models.ts";
import { mat4Mul, mat4Point, mat4ToPose, poseToMat4, type Vec3, vdot } from "../robots/math.ts";
import { sampleBenchCalibration } from "../sim/buzzwire/bench.ts";
import {
  liftLoop,
  PointingToucher,
  ProbingTeacher,
  perturbPose,
} from "../test-support/tool-calibration-bench.ts";
import { type RealBench, startRealBench } from "./real-bench.ts";
import { rigDepthTopics } from "./rigs/rosbridge/franka-rig.ts";

/** the fixed RGB-D cameras the tool frame is measured with */
export const TOOL_FRAME_CAMERAS = ["front", "side", "top"] as const;

/**
 * A calibration session on the rig: wire contacts are no stop (the teacher touches the wire on
 * purpose, the loop is lifted off it) and the board is no keep-out (its marks are touched), as on
 * the sim bench. The stale-reading limit is 5 s and the tracking bound 0.4 rad: the rig renders
 * its camera frames (here three cameras with depth, then JPEG) in the thread that publishes joint
 * states, which on the shared 2-core machine under load 10 paused that stream for over 2 s (a
 * real franka_ros2 publishes from its own process; hil-tests/calibration-real.test.ts, one camera
 * without depth, does with 2 s).
 */
const SAFETY = { stopOnEvents: [], staleReadingTimeoutMs: 5000, trackingErrorBoundRad: 0.4 };
/**
 * Peak joint speed of every move on the rig, rad/s (BenchApi.moveTo's default is 0.4): the
 * monitor judges velocity from readings 20 ms apart, and the rig, catching up after a stall,
 * delivers its joint states bunched (1.6 rad/s "seen" for 0.32 rad/s reported under load 16, a
 * safety stop; hil-tests/calibration-real.test.ts slows down for the same reason).
 */
const SPEED = { maxJointSpeedRadS: 0.15 };

/**
 * How the teacher probes on the rig: a quick push (0.8 s, the sim's) to 8 mm inside the
 * clearance, then a creep at 4 mm/s over the last 12 mm. The rig's simulator falls behind the wall
 * clock when the loaded machine starves it, and a contact then reaches the gateway late against
 * the readings' stamps (the stamp clock maps stamps with the least delay seen): at the sim's
 * one-push speed (~35 mm/s at contact) that put single contact points 1–6 mm out under load 7;
 * creeping, the same delay moves a point 4 mm per second of delay, and the teacher probes again
 * when the four contacts do not lie on one circle. Under load 12–16 (other benches at nice −15)
 * delays of ~0.5 s still put 3 of 8 centrings 1.3–2.8 mm off: the rig, not the procedure.
 */
const CREEP_MPS = 0.004;

export interface ToolRig {
  rb: RealBench;
  seed: number;
  /** what the rig's simulator was built from */
  truth: Calibration;
  close(): Promise<void>;
}

export async function startToolRig(seed = 3, cameraRateHz = 5): Promise<ToolRig> {
  const truth = sampleBenchCalibration(FR3, seed);
  const rb = await startRealBench({
    seed,
    calibration: truth,
    cameraRateHz,
    // the rig child starts a simulator and simavr; a loaded shared machine stretches that
    startTimeoutS: 120,
  });
  return { rb, seed, truth, close: () => rb.close() };
}

export interface RigGateway {
  g: TestGateway;
  api: BenchApi;
  close(): Promise<void>;
}

/**
 * A gateway on the rig: the rig's real bench file, the named cameras with their colour, CameraInfo
 * and aligned depth topics (none: no camera is subscribed, so the rig renders nothing), a
 * free-motion task, on a real port.
 */
export async function rigGateway(rig: ToolRig, cameras: readonly string[]): Promise<RigGateway> {
  const backend = rig.rb.bench.backend as Record<string, unknown>;
  const g = await testGateway(
    {
      ...rig.rb.bench,
      backend: {
        ...backend,
        cameras: cameras.map((name) => ({
          name,
          imageTopic: `/${name}/image_raw/compressed`,
          cameraInfoTopic: `/${name}/camera_info`,
          depthTopic: rigDepthTopics(name).image,
        })),
        // the rig builds its lens remaps on the first render, slow on a loaded machine
        cameraReadyTimeoutS: 60,
      },
      task: { id: "free-motion", seed: rig.seed },
      safety: SAFETY,
      keepOutsFromCalibration: false,
    },
    { recorder: false },
  );
  await g.app.listen({ host: "127.0.0.1", port: 0 });
  const url = `http://127.0.0.1:${(g.app.server.address() as AddressInfo).port}`;
  const api = new BenchApi(fetchTransport(url, { agent: AGENT_TOKEN, operator: OPERATOR_TOKEN }));
  return { g, api, close: () => g.close() };
}

export interface ToolRigOptions {
  /** tool-frame wrist poses (default 12, as on the sim) */
  toolPoses?: number;
  /** how much of the wire to teach from its start, m (default: start to end mark) */
  teachLengthM?: number;
  /** the toucher's pointing error σ per axis, m (default 0.5 mm) */
  pointingErrorM?: number;
}

export interface ToolRigFigures {
  toolFrame: { report: ToolFrameReport; centreErrMm: number; axisErrDeg: number; seconds: number };
  wire: {
    report: WireTeachReport;
    rmsToTruthMm: number;
    maxToTruthMm: number;
    misses: number;
    reprobes: number;
    lateOpens: number;
    seconds: number;
  };
  board: { report: BoardRegistrationReport; worstCornerErrMm: number; rotErrDeg: number; seconds: number };
}

/** centre distance (mm) and axis angle (°) between two flange ← loop poses */
export function loopFrameError(got: Calibration["tool"], want: Calibration["tool"]) {
  const g = poseToMat4(got.loopPoseFlange);
  const w = poseToMat4(want.loopPoseFlange);
  const centreErrMm = Math.hypot(g[3]! - w[3]!, g[7]! - w[7]!, g[11]! - w[11]!) * 1000;
  const axisErrDeg =
    (Math.acos(Math.min(1, vdot([g[2]!, g[6]!, g[10]!], [w[2]!, w[6]!, w[10]!]))) * 180) / Math.PI;
  return { centreErrMm, axisErrDeg };
}

/** the largest displacement of a top-face corner (mm) and the rotation (°) between two board poses */
export function boardError(got: Calibration["board"], want: Calibration["board"]) {
  const g = poseToMat4(got.poseWorld);
  const w = poseToMat4(want.poseWorld);
  const [sx, sy] = want.sizeM;
  let worst = 0;
  for (const [x, y] of [
    [-1, -1],
    [1, -1],
    [1, 1],
    [-1, 1],
  ] as const) {
    const p: Vec3 = [(x * sx) / 2, (y * sy) / 2, 0];
    const a = mat4Point(g, p);
    const b = mat4Point(w, p);
    worst = Math.max(worst, Math.hypot(a[0] - b[0], a[1] - b[1], a[2] - b[2]) * 1000);
  }
  return { worstCornerErrMm: worst, rotErrDeg: (rotationAngle(g, w) * 180) / Math.PI };
}

/**
 * 1. Tool frame: from the rig's start pose (the loop threaded on the wire at its start), lift the
 *    loop 15 cm; measure the loop frame from the fixed cameras' depth (a gateway with the three
 *    RGB-D cameras), the file's loop 4 mm and 3° off; then back down the way it went up.
 */
export async function toolFrameOnRig(
  rig: ToolRig,
  opts: ToolRigOptions = {},
): Promise<{ figures: ToolRigFigures["toolFrame"]; tool: Calibration["tool"] }> {
  const truth = rig.truth;
  const nominalTool = { ...truth.tool, loopPoseFlange: perturbPose(truth.tool.loopPoseFlange, 4, 3) };
  const gw = await rigGateway(rig, TOOL_FRAME_CAMERAS);
  try {
    const down: number[][] = [(await gw.api.reading()).q];
    for (let k = 0; k < 3; k++) down.push(await liftLoop(gw.api, 0.05, SPEED));
    const t0 = performance.now();
    const r = await calibrateToolFrame(
      gw.api,
      { ...truth, tool: nominalTool },
      { poses: opts.toolPoses ?? 12, maxJointSpeedRadS: SPEED.maxJointSpeedRadS },
    );
    const figures = {
      report: r.report,
      ...loopFrameError(r.calibration.tool, truth.tool),
      seconds: (performance.now() - t0) / 1000,
    };
    for (const q of down.reverse()) await gw.api.moveTo(q, { maxJointSpeedRadS: SPEED.maxJointSpeedRadS });
    return { figures, tool: r.calibration.tool };
  } finally {
    await gw.close();
  }
}

/**
 * 2. Wire teaching from where the loop is (threaded at the wire's start) with the tool frame
 *    `tool`, the file's wire a straight line (a gateway without cameras: nothing for the rig to
 *    render while contacts are timed); then 3. lift 8 cm and register the board by four touched
 *    marks, the file's board 6 mm and 2° off.
 */
export async function teachAndRegisterOnRig(
  rig: ToolRig,
  tool: Calibration["tool"],
  opts: ToolRigOptions = {},
): Promise<{ wire: ToolRigFigures["wire"]; board: ToolRigFigures["board"] }> {
  const truth = rig.truth;
  const gw = await rigGateway(rig, []);
  try {
    const cal: Calibration = {
      ...truth,
      tool,
      wire: { ...truth.wire, pointsBase: [truth.wire.pointsBase[0]!, truth.wire.pointsBase.at(-1)!] },
    };
    const teacher = new ProbingTeacher(gw.api, {
      teachLengthM: opts.teachLengthM ?? truth.wire.endMarkM - truth.wire.startMarkM,
      clearanceM: truth.tool.loopInnerRadiusM - truth.wire.wireRadiusM,
      creepMps: CREEP_MPS,
      ...SPEED,
    });
    const t0 = performance.now();
    let wire: ToolRigFigures["wire"];
    try {
      const r = await teachWire(gw.api, cal, teacher);
      const d = centrelineDistance(r.fit.points, truth.wire.pointsBase);
      wire = {
        report: r.report,
        rmsToTruthMm: d.rmsM * 1000,
        maxToTruthMm: d.maxM * 1000,
        misses: teacher.misses,
        reprobes: teacher.reprobes,
        lateOpens: teacher.lateOpens,
        seconds: (performance.now() - t0) / 1000,
      };
    } catch (e) {
      // what the teacher centred, against the truth (for the failure's reader)
      const off = teacher.centres.map(
        (c) => +(centrelineDistance([c], truth.wire.pointsBase).maxM * 1000).toFixed(3),
      );
      throw new Error(
        `${(e as Error).message}; centred loop centres from the true centreline, mm: ${off.join(", ")}`,
        {
          cause: e,
        },
      );
    }
    await liftLoop(gw.api, 0.08, SPEED);
    const bp = poseToMat4(truth.board.poseWorld);
    const off = mat4Mul(rigid(rotvecToMat3([0, 0, (2 * Math.PI) / 180]), [0.004, -0.0045, 0]), bp);
    const nominal: Calibration = { ...truth, tool, board: { ...truth.board, poseWorld: mat4ToPose(off) } };
    const toucher = new PointingToucher(
      gw.api,
      truth,
      opts.pointingErrorM ?? 0.0005,
      11,
      SPEED.maxJointSpeedRadS,
    );
    const t1 = performance.now();
    const b = await registerBoard(gw.api, nominal, defaultBoardMarks(nominal), toucher);
    const board = {
      report: b.report,
      ...boardError(b.calibration.board, truth.board),
      seconds: (performance.now() - t1) / 1000,
    };
    return { wire, board };
  } finally {
    await gw.close();
  }
}
