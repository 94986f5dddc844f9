/**
 * The real backend's end-to-end suite (real-backend.suite.ts, the one the rosbridge rig runs)
 * over native ROS 2: the rig's simulator is served on a real DDS graph by the franka_ros2
 * stand-in node (rclpy, a child process), and the backend's `ros` resource is
 * `{ type: "rclnodejs" }`. Needs scripts/ros2-setup.sh (CI runs it); without it this file
 * fails with "ROS 2 env missing".
 */
import { describeRealBackend } from "../real-backend.suite.ts";
import { Ros2LinkServer, ros2ForThisProcess } from "../rigs/ros2/link-server.ts";

const env = ros2ForThisProcess();

describeRealBackend({
  name: "rclnodejs",
  startServer: () => Ros2LinkServer.start({ env }),
  resource: () => ({ type: "rclnodejs", nodeName: "robot_gateway_test" }),
  // the stand-in node restarts (about 1–2 s) and DDS discovery finds it again
  reconnectTimeoutMs: 15_000,
  // DDS discovery takes a few seconds on a loaded machine before the first message flows
  franka: { firstJointStateTimeoutS: 20, gripperStateWaitS: 10 },
  cameraReadyTimeoutS: 20,
});
