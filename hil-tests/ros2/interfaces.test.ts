/**
 * The interface packages scripts/ros2-setup.sh builds from hil-tests/rigs/ros2/interfaces/ must
 * be the published ones on the wire: DDS peers (a real franka_ros2, ros2_controllers) refuse a
 * type whose RIHS01 hash differs. The hashes below are the ones rosidl generates for
 * control_msgs 5.8.0 (jazzy), as found in a published build of that package
 * (rosidl_generator_c's follow_joint_trajectory__description.c); ours must equal them.
 */
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { ros2ForThisProcess } from "../rigs/ros2/link-server.ts";

const env = ros2ForThisProcess();
const prefix = env.vars.AMENT_PREFIX_PATH!;

function hashes(pkg: string, kind: string, name: string): Record<string, string> {
  const d = JSON.parse(readFileSync(join(prefix, "share", pkg, kind, `${name}.json`), "utf8")) as {
    type_hashes: { type_name: string; hash_string: string }[];
  };
  return Object.fromEntries(d.type_hashes.map((h) => [h.type_name, h.hash_string]));
}

describe("interface packages built for the test graph", () => {
  it("control_msgs/action/FollowJointTrajectory hashes as upstream's jazzy build", () => {
    const h = hashes("control_msgs", "action", "FollowJointTrajectory");
    expect(h["control_msgs/action/FollowJointTrajectory"]).toBe(
      "RIHS01_738ebcb7a2d7cfa42f9f1001cc99ce3a4383d1cfe508015d9be8485e4b1c66f6",
    );
    expect(h["control_msgs/action/FollowJointTrajectory_Goal"]).toBe(
      "RIHS01_8a9060704b269608f5a340934cc26e66869dd14bdac29e2e7fd9ec8b9882d205",
    );
    expect(h["control_msgs/action/FollowJointTrajectory_Result"]).toBe(
      "RIHS01_8002e99ed2c14c6faa522f2a93c26d744c5982f254f9e98ff9c6f19789bdb220",
    );
  });

  it("franka_msgs actions the driver uses exist with their goal fields", () => {
    for (const [name, goalFields] of [
      ["Move", ["width", "speed"]],
      ["Grasp", ["width", "epsilon", "speed", "force"]],
      ["Homing", ["structure_needs_at_least_one_member"]],
      ["ErrorRecovery", ["structure_needs_at_least_one_member"]],
    ] as const) {
      const d = JSON.parse(
        readFileSync(join(prefix, "share", "franka_msgs", "action", `${name}.json`), "utf8"),
      ) as {
        type_description_msg: {
          referenced_type_descriptions: { type_name: string; fields: { name: string }[] }[];
        };
      };
      const goal = d.type_description_msg.referenced_type_descriptions.find(
        (t) => t.type_name === `franka_msgs/action/${name}_Goal`,
      );
      expect(
        goal?.fields.map((f) => f.name),
        name,
      ).toEqual(goalFields);
    }
  });
});
