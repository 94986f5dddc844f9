/**
 * The realtime setting on the real backend wired to the rigs over rosbridge (the suite:
 * realtime-real.suite.ts; over native ROS 2: ros2/realtime-real-rclnodejs.test.ts).
 * Needs socat, gcc-avr, avr-libc, libsimavr-dev, libelf-dev (the bench's buzz box).
 */
import { describeRealtimeReal } from "./realtime-real.suite.ts";

describeRealtimeReal("rosbridge");
