/**
 * Action types of the Standard API and how each becomes joint rows. Registered by name; the
 * episode checks that the task's level opens a type before using it.
 */
import { type Pose, poseToMat4, mat4Mul, mat4ToPose, type Quat, type Vec3 } from "../../robots/math.ts";
import type { ActionType } from "../../tasks/types.ts";
import { GatewayError } from "../errors.ts";
import type { Steps } from "../../seam/steps.ts";
import type { JointReading } from "../../seam/types.ts";

export interface IkPort {
  /** solve for a tool pose (base frame); returns joint angles or a reason */
  solve(
    pose: Pose,
    seed: readonly number[],
  ):
    | { ok: true; q: number[]; positionResidualM: number; orientationResidualRad: number }
    | { ok: false; reason: string; positionResidualM: number; orientationResidualRad: number };
  /** tool pose of a joint configuration */
  fk(q: readonly number[]): Pose;
}

export interface ActionDef {
  type: ActionType;
  columns: readonly string[];
  units: readonly string[];
  /** jog only */
  commands?: readonly string[];
  stepSizes?: Readonly<Record<string, number>>;
  /** jog only: the frame the commands move in and the point rotations turn about (as applyJog does) */
  jogFrame?: { frame: string; pivot: string };
  /**
   * validated numeric rows → joint rows (7 joints + gripper), as steps (seam/steps.ts): the IK
   * of a tool-pose row is the unit of work, the planner may pause after any row
   */
  toJointRows(rows: number[][], start: JointReading): Steps<number[][]>;
}

export type ActionCatalog = ReadonlyMap<string, ActionDef>;

const JOINT_COLUMNS = ["q1", "q2", "q3", "q4", "q5", "q6", "q7", "gripper_width"];
const JOINT_UNITS = ["rad", "rad", "rad", "rad", "rad", "rad", "rad", "m"];

/** jog command words, each mapped to a column index of its numeric encoding */
export const JOG_COMMANDS = [
  "+x",
  "-x",
  "+y",
  "-y",
  "+z",
  "-z",
  "+roll",
  "-roll",
  "+pitch",
  "-pitch",
  "+yaw",
  "-yaw",
  "open",
  "close",
  "stay",
] as const;

export function actionCatalog(
  ik: IkPort,
  jogSteps = { linearM: 0.005, angularRad: 0.05, gripperM: 0.01 },
): ActionCatalog {
  function* eeToJoints(rows: number[][], start: JointReading): Steps<number[][]> {
    let seed: readonly number[] = start.q;
    const out: number[][] = new Array(rows.length);
    for (let r = 0; r < rows.length; r++) {
      if (r > 0) yield;
      const row = rows[r]!;
      if (Math.hypot(row[3]!, row[4]!, row[5]!, row[6]!) <= 1e-6) {
        throw new GatewayError("RB_ERR_ZERO_QUATERNION", { row: r });
      }
      const pose: Pose = {
        xyz: [row[0]!, row[1]!, row[2]!],
        quat_xyzw: [row[3]!, row[4]!, row[5]!, row[6]!],
      };
      const sol = ik.solve(pose, seed);
      if (!sol.ok)
        throw new GatewayError("RB_ERR_IK_UNREACHABLE", { reason: `row ${r}: ${sol.reason}`, row: r });
      seed = sol.q;
      out[r] = [...sol.q, row[7]!];
    }
    return out;
  }
  const defs: ActionDef[] = [
    {
      type: "joint_position",
      columns: JOINT_COLUMNS,
      units: JOINT_UNITS,
      // biome-ignore lint/correctness/useYield: joint rows are already joint rows: nothing to pause
      toJointRows: function* (rows) {
        return rows;
      },
    },
    {
      type: "ee_pose",
      columns: ["x", "y", "z", "qx", "qy", "qz", "qw", "gripper_width"],
      units: ["m", "m", "m", "1", "1", "1", "1", "m"],
      toJointRows: eeToJoints,
    },
    {
      type: "jog",
      columns: ["command"],
      units: ["index into commands"],
      commands: JOG_COMMANDS,
      stepSizes: {
        linear_m: jogSteps.linearM,
        angular_rad: jogSteps.angularRad,
        gripper_m: jogSteps.gripperM,
      },
      jogFrame: {
        frame:
          "robot base: ±x/±y/±z translate the tool point along the base axes; ±roll/±pitch/±yaw rotate about the base x/y/z axes",
        pivot: "the tool point (tool frame origin): rotations leave it where it is",
      },
      toJointRows: function* (rows, start) {
        // each row is one command (its index in JOG_COMMANDS) applied to the previous row's pose
        let pose = ik.fk(start.q);
        let grip = start.gripperWidthM;
        const eeRows = rows.map((row, r) => {
          const idx = row[0]!;
          const cmd = JOG_COMMANDS[idx];
          if (!Number.isInteger(idx) || cmd === undefined) {
            throw new GatewayError("RB_ERR_JOG_INDEX", { row: r, value: idx, max: JOG_COMMANDS.length - 1 });
          }
          ({ pose, grip } = applyJog(pose, grip, cmd, jogSteps));
          return [...pose.xyz, ...pose.quat_xyzw, grip];
        });
        return yield* eeToJoints(eeRows, start);
      },
    },
  ];
  return new Map(defs.map((d) => [d.type, d]));
}

function applyJog(
  pose: Pose,
  grip: number,
  cmd: (typeof JOG_COMMANDS)[number],
  s: { linearM: number; angularRad: number; gripperM: number },
): { pose: Pose; grip: number } {
  const xyz: Vec3 = [...pose.xyz];
  const axis = { x: 0, y: 1, z: 2, roll: 0, pitch: 1, yaw: 2 } as const;
  if (cmd === "open") return { pose, grip: grip + s.gripperM };
  if (cmd === "close") return { pose, grip: grip - s.gripperM };
  if (cmd === "stay") return { pose, grip };
  const sign = cmd[0] === "+" ? 1 : -1;
  const name = cmd.slice(1) as keyof typeof axis;
  if (name === "x" || name === "y" || name === "z") {
    xyz[axis[name]] += sign * s.linearM;
    return { pose: { xyz, quat_xyzw: pose.quat_xyzw }, grip };
  }
  // rotations about the base-frame axes, applied about the tool point
  const half = (sign * s.angularRad) / 2;
  const q: Quat = [0, 0, 0, Math.cos(half)];
  q[axis[name]] = Math.sin(half);
  const rot = poseToMat4({ xyz: [0, 0, 0], quat_xyzw: q });
  const cur = poseToMat4({ xyz: [0, 0, 0], quat_xyzw: pose.quat_xyzw });
  const next = mat4ToPose(mat4Mul(rot, cur));
  return { pose: { xyz, quat_xyzw: next.quat_xyzw }, grip };
}
