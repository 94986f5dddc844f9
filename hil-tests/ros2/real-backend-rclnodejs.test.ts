/**
 * The real backend's end-to-end suite (real-backend.suite.ts, the one the rosbridge rig runs)
 * over native ROS 2: the rig's simulator (in real-bench.ts's child process) is served on a real
 * DDS graph by the franka_ros2 stand-in node (rclpy, a child process of that child), and the
 * backend's `ros` resource is `{ type: "rclnodejs" }`. Needs scripts/ros2-setup.sh (CI runs it); without it this file
 * fails with "ROS 2 env missing".
 */
import { describeRealBackend } from "../real-backend.suite.ts";
import { ros2ForThisProcess } from "../rigs/ros2/link-server.ts";

// the ROS 2 environment and this file's DDS domain, for rclnodejs here and inherited by the rig child
ros2ForThisProcess();

describeRealBackend({
  name: "rclnodejs",
  rigRos: "ros2",
  resource: () => ({ type: "rclnodejs", nodeName: "robot_gateway_test" }),
  // the stand-in node restarts (about 1–2 s) and DDS discovery finds it again
  reconnectTimeoutMs: 15_000,
  // DDS discovery takes a few seconds on a loaded machine before the first message flows
  franka: { firstJointStateTimeoutS: 20, gripperStateWaitS: 10 },
  cameraReadyTimeoutS: 20,
});
