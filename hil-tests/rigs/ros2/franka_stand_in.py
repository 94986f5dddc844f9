"""franka_ros2 stand-in: the ROS 2 face of the test rig, over real DDS (rclpy).

The rig (hil-tests/rigs/rosbridge/franka-rig.ts) owns the robot: a Backend (the simulator)
paced to the wall clock, goal densification, reflexes, cameras. This node gives it franka_ros2's
ROS 2 graph: whatever the rig advertises becomes a real action server, service or publisher
under the same name and type, and every goal, cancel and service call travels to the rig and
back over a small local link: JSON lines, rig → node on stdin, node → rig on stdout (logs go
to stderr).

rig → node:
  {"op":"action","name","type","decides"} serve an action (e.g. control_msgs/action/FollowJointTrajectory);
                                         decides: the rig accepts or rejects each goal (below)
  {"op":"service","name","type"}         serve a service (e.g. std_srvs/srv/Trigger)
  {"op":"topic","name","type"}           create a publisher; its subscriber count is reported
  {"op":"pub","topic","msg"}             publish (uint8[] fields may be base64 strings)
  {"op":"feedback","id","msg"}           feedback of goal `id`
  {"op":"accepted","id"}                 the rig took goal `id` (actions that decide)
  {"op":"rejected","id","reason"}        the rig refused goal `id` (actions that decide)
  {"op":"result","id","status","msg"}    terminal answer of goal `id` (4 succeeded, 5 canceled, 6 aborted)
  {"op":"response","id","msg"}           response of service call `id`
node → rig:
  {"op":"ready"}
  {"op":"goal","id","name","goal"}       a goal: accepted already, or (an action that decides) one
                                         whose goal response waits for the rig's accepted/rejected
  {"op":"cancel","id"}                   a client asked to cancel goal `id`
  {"op":"call","id","name","request"}    a service request
  {"op":"subs","counts":{topic: n}}      subscriber counts, when they change

Goal ends as joint_trajectory_controller's over rclpy/rclcpp_action (rcl's goal state machine):
an action that decides acceptance answers the goal request only once the rig decided, so a goal
the controller refuses (e.g. a trajectory ending in the past) is REJECTED, never accepted; a goal
the rig ends with status 5 without a client's cancel request (preempted by a newer goal) ends
ABORTED with the rig's result (error_code INVALID_GOAL): rcl has no EXECUTING -> CANCELED
transition without a cancel request, and joint_trajectory_controller aborts a preempted goal
with INVALID_GOAL "Current goal preempted by new incoming action." since ros2_controllers
4.41 (jazzy; PR #2422; before, its setCanceled() hit that invalid transition and the result was
never delivered).

Run with the environment of scripts/ros2-setup.sh (.venv-ros2/env.sh).
"""

import array
import base64
import importlib
import json
import os
import sys
import threading
import time

import rclpy
from rclpy.action import ActionServer, CancelResponse, GoalResponse
from rclpy.callback_groups import ReentrantCallbackGroup
from rclpy.executors import MultiThreadedExecutor
from rclpy.node import Node

_out_lock = threading.Lock()


def send(m):
    line = json.dumps(m, separators=(",", ":"))
    with _out_lock:
        sys.stdout.write(line + "\n")
        sys.stdout.flush()


def log(*a):
    print("[franka_stand_in]", *a, file=sys.stderr, flush=True)


def interface(type_name):
    """'pkg/action/Name' -> the Python class."""
    pkg, kind, name = type_name.split("/")
    return getattr(importlib.import_module(f"{pkg}.{kind}"), name)


# ───────────── dict <-> message ─────────────

_ARRAY_CODES = {
    "double": "d", "float": "f", "int8": "b", "uint8": "B", "int16": "h", "uint16": "H",
    "int32": "i", "uint32": "I", "int64": "q", "uint64": "Q", "octet": "B",
}


def _sequence_code(field_type):
    if field_type.startswith("sequence<") and field_type.endswith(">"):
        inner = field_type[len("sequence<"):-1].split(",")[0]
        return _ARRAY_CODES.get(inner)
    return None


_plans = {}


def _plan(cls):
    """Per message class, once: field name -> (how to set it, helper)."""
    plan = _plans.get(cls)
    if plan is not None:
        return plan
    plan = {}
    probe = cls()
    for (key, ft), slot in zip(cls.get_fields_and_field_types().items(), cls.SLOT_TYPES):
        cur = getattr(probe, key)
        code = _sequence_code(ft)
        value_type = getattr(slot, "value_type", None)
        if hasattr(cur, "get_fields_and_field_types"):
            plan[key] = ("msg", type(cur))
        elif code is not None:
            plan[key] = ("array", code)
        elif value_type is not None and hasattr(value_type, "namespaces"):
            mod = importlib.import_module(".".join(value_type.namespaces))
            plan[key] = ("msgs", getattr(mod, value_type.name))
        else:
            plan[key] = ("plain", None)
    _plans[cls] = plan
    return plan


def fill(msg, d):
    """Set the fields of message `msg` from dict `d` (unknown keys are an error)."""
    if not isinstance(d, dict):
        raise TypeError(f"{type(msg).__name__}: expected an object, got {type(d).__name__}")
    plan = _plan(type(msg))
    for key, value in d.items():
        how = plan.get(key)
        if how is None:
            raise KeyError(f"{type(msg).__name__} has no field {key!r}")
        kind, helper = how
        if kind == "msg":
            fill(getattr(msg, key), value)
        elif kind == "array":
            if isinstance(value, str):  # rosbridge-style base64 for uint8[]
                value = base64.b64decode(value)
            setattr(msg, key, array.array(helper, value))
        elif kind == "msgs":
            setattr(msg, key, [fill(helper(), v) for v in value])
        else:
            setattr(msg, key, value)
    return msg


def plain(msg):
    """Message -> JSON-able dict (arrays as lists)."""
    if hasattr(msg, "get_fields_and_field_types"):
        return {k: plain(getattr(msg, k)) for k in msg.get_fields_and_field_types()}
    if isinstance(msg, (list, tuple)):
        return [plain(v) for v in msg]
    if isinstance(msg, array.array):
        return msg.tolist()
    if hasattr(msg, "tolist"):  # numpy arrays of fixed-size fields
        return msg.tolist()
    if isinstance(msg, (bytes, bytearray)):
        return list(msg)
    return msg


# ───────────── the node ─────────────


class Pending:
    def __init__(self):
        self.done = threading.Event()
        self.answer = None
        # actions that decide acceptance: the rig's "accepted" / "rejected"
        self.decided = threading.Event()
        self.accepted = False


# how long a goal request waits for the rig's decision before it is rejected, s
DECISION_TIMEOUT_S = 30.0


class StandIn(Node):
    def __init__(self):
        super().__init__("franka_stand_in")
        self.group = ReentrantCallbackGroup()
        self.servers = {}
        self.publishers_by_topic = {}
        self.pending = {}
        self.goal_handles = {}
        # goal request object (the goal handle's .request, one object per goal) -> link id
        self.link_ids = {}
        self.next_id = 0
        self.id_lock = threading.Lock()
        self.counts = {}
        self.create_timer(0.02, self.report_counts, callback_group=self.group)

    def new_id(self, prefix):
        # unique across restarts of this node (the rig outlives it): the process id in every id
        with self.id_lock:
            self.next_id += 1
            return f"{prefix}{os.getpid()}-{self.next_id}"

    # rig → node
    def on_rig(self, m):
        op = m["op"]
        if op == "pub":
            pub = self.publishers_by_topic[m["topic"]]
            pub.publish(fill(pub.msg_type(), m["msg"]))
        elif op == "feedback":
            entry = self.goal_handles.get(m["id"])
            if entry is not None and entry[0].is_active:
                entry[0].publish_feedback(fill(entry[1].Feedback(), m["msg"]))
        elif op in ("result", "response"):
            p = self.pending.get(m["id"])
            if p is not None:
                p.answer = m
                p.done.set()
        elif op in ("accepted", "rejected"):
            p = self.pending.get(m["id"])
            if p is not None:
                p.accepted = op == "accepted"
                p.decided.set()
        elif op == "topic":
            if m["name"] not in self.publishers_by_topic:
                self.publishers_by_topic[m["name"]] = self.create_publisher(
                    interface(m["type"]), m["name"], 10
                )
        elif op == "action":
            self.serve_action(m["name"], m["type"], m.get("decides", False))
        elif op == "service":
            self.serve_service(m["name"], m["type"])
        else:
            log("unknown op", op)

    def serve_action(self, name, type_name, decides=False):
        action_type = interface(type_name)

        def submit(request):
            """send a goal to the rig; its link id"""
            gid = self.new_id("g")
            self.pending[gid] = Pending()
            self.link_ids[id(request)] = gid
            send({"op": "goal", "id": gid, "name": name, "goal": plain(request)})
            return gid

        def on_goal(request):
            if not decides:
                return GoalResponse.ACCEPT
            gid = submit(request)
            p = self.pending[gid]
            if p.decided.wait(DECISION_TIMEOUT_S) and p.accepted:
                return GoalResponse.ACCEPT
            del self.pending[gid]
            self.link_ids.pop(id(request), None)
            return GoalResponse.REJECT

        def execute(goal_handle):
            request = goal_handle.request
            gid = self.link_ids.get(id(request))
            if gid is None:
                gid = submit(request)
            p = self.pending[gid]
            self.goal_handles[gid] = (goal_handle, action_type)
            p.done.wait()
            del self.pending[gid]
            del self.goal_handles[gid]
            self.link_ids.pop(id(request), None)
            a = p.answer
            status = a.get("status", 6)
            if status == 4:
                goal_handle.succeed()
            elif status == 5 and goal_handle.is_cancel_requested:
                goal_handle.canceled()
            else:
                # aborted, or ended by the rig itself (preempted by a newer goal: see the top)
                goal_handle.abort()
            return fill(action_type.Result(), a.get("msg") or {})

        def on_cancel(goal_handle):
            gid = self.link_ids.get(id(goal_handle.request))
            if gid is not None:
                send({"op": "cancel", "id": gid})
            return CancelResponse.ACCEPT

        self.servers[name] = ActionServer(
            self,
            action_type,
            name,
            execute_callback=execute,
            goal_callback=on_goal,
            cancel_callback=on_cancel,
            callback_group=self.group,
        )

    def serve_service(self, name, type_name):
        srv_type = interface(type_name)

        def call(request, response):
            cid = self.new_id("s")
            p = Pending()
            self.pending[cid] = p
            send({"op": "call", "id": cid, "name": name, "request": plain(request)})
            p.done.wait()
            del self.pending[cid]
            return fill(response, p.answer.get("msg") or {})

        self.servers[name] = self.create_service(srv_type, name, call, callback_group=self.group)

    def report_counts(self):
        counts = {t: p.get_subscription_count() for t, p in list(self.publishers_by_topic.items())}
        if counts != self.counts:
            self.counts = counts
            send({"op": "subs", "counts": counts})


def main():
    rclpy.init()
    node = StandIn()
    executor = MultiThreadedExecutor(num_threads=16)
    executor.add_node(node)
    spinner = threading.Thread(target=executor.spin, daemon=True)
    spinner.start()
    send({"op": "ready"})
    try:
        for line in sys.stdin:
            line = line.strip()
            if not line:
                continue
            try:
                node.on_rig(json.loads(line))
            except Exception as e:  # a bad message from the rig must not take the graph down
                log("error handling", line[:200], "->", repr(e))
    finally:
        # stdin closed: the rig is gone
        for p in list(node.pending.values()):
            p.answer = {"status": 6, "msg": {}}
            p.decided.set()
            p.done.set()
        time.sleep(0.05)
        executor.shutdown(timeout_sec=1)
        node.destroy_node()
        rclpy.try_shutdown()


if __name__ == "__main__":
    main()
