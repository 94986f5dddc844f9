import { existsSync, readFileSync } from "node:fs";
import { defineConfig } from "vitest/config";

/**
 * Two projects:
 * - "main": every test but hil-tests/ros2/;
 * - "ros2": hil-tests/ros2/ (native ROS 2 over DDS), in workers started with the environment
 *   that scripts/ros2-setup.sh writes to .venv-ros2/env.json (rclnodejs needs LD_LIBRARY_PATH
 *   & co. at process start). In CI it always runs (.ci/run runs the setup script first; a
 *   missing env fails its files with "ROS 2 env missing"). Outside CI it runs when the env
 *   exists, and is left out with a note otherwise.
 */
const ROS2_ENV_FILE = ".venv-ros2/env.json";

function ros2Env(): Record<string, string> | undefined {
  if (!existsSync(ROS2_ENV_FILE)) return undefined;
  const {
    PATH_PREPEND,
    PYTHON: _python,
    ...vars
  } = JSON.parse(readFileSync(ROS2_ENV_FILE, "utf8")) as Record<string, string>;
  return { ...vars, PATH: `${PATH_PREPEND}:${process.env.PATH ?? ""}` };
}

const ros2 = ros2Env();
const runRos2 = ros2 !== undefined || Boolean(process.env.CI);
if (!runRos2) {
  console.warn("vitest: hil-tests/ros2 left out: ROS 2 env missing (run scripts/ros2-setup.sh)");
}

export default defineConfig({
  test: {
    exclude: ["node_modules/**", ".git/**", ".venv*/**", ".tmp/**"],
    testTimeout: 30_000,
    hookTimeout: 60_000,
    pool: "forks",
    projects: [
      {
        extends: true as const,
        test: {
          name: "main",
          include: ["**/*.test.ts"],
          exclude: ["node_modules/**", ".git/**", ".venv*/**", ".tmp/**", "hil-tests/ros2/**"],
          sequence: { groupOrder: 0 },
        },
      },
      ...(runRos2
        ? [
            {
              extends: true as const,
              test: {
                name: "ros2",
                include: ["hil-tests/ros2/**/*.test.ts"],
                env: ros2 ?? {},
                // after "main": the DDS graph (a Python node at 500 Hz) and the timing-sensitive rig
                // suites of main do not compete for the CPU
                sequence: { groupOrder: 1 },
              },
            },
          ]
        : []),
    ],
  },
});
