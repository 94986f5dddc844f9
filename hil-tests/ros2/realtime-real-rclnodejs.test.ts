/**
 * The realtime suite on the real backend (realtime-real.suite.ts, the one the rosbridge rig runs)
 * over native ROS 2: the rig's simulator is served on a real DDS graph by the franka_ros2
 * stand-in node (rclpy), whose FollowJointTrajectory server answers goal replacement as
 * joint_trajectory_controller does (stand-in-replace.test.ts), and the bench's `ros` resource is
 * `{ type: "rclnodejs" }`. Needs scripts/ros2-setup.sh (CI runs it); without it this file fails
 * with "ROS 2 env missing".
 */
import { describeRealtimeReal } from "../realtime-real.suite.ts";
import { ros2ForThisProcess } from "../rigs/ros2/link-server.ts";

// the ROS 2 environment and this file's DDS domain, for rclnodejs here and inherited by the rig child
ros2ForThisProcess();

// DDS discovery takes a few seconds on a loaded machine before the first message flows
describeRealtimeReal("rclnodejs", "ros2", { firstJointStateTimeoutS: 20, gripperStateWaitS: 10 });
