#!/usr/bin/env python3
"""A baseline buzz-wire agent that sees the bench only through the Standard API.

    robot-gateway run --trials 10 --level ee_pose --agent ".venv-py/bin/python examples/agents/wire_follower.py"

What it does, using nothing but the Python client (no simulator state, records, bench or
calibration files):
1. Reads the spec (camera intrinsics, distortion and poses; jog commands and step sizes) and the
   task card (which action types are open).
2. Observes every camera with depth, segments the wire by colour (the orange wire against the
   blue board, grey table and white arm), back-projects the wire pixels with the published
   calibration into the robot base frame (the wrist camera through FK of the measured joints),
   and fits a smooth centreline (local weighted quadratic regression along the wire's principal
   axis; the loop starts near one end, the far end is the goal).
3. Moves the loop along the centreline — loop centre on the line, loop axis along its tangent,
   loop x axis pointing down as at the start — in short chunks: `ee_pose` rows where that level
   is open, joint rows from `/v1/kinematics/ik` at the `joint_position` level, greedy jog commands
   at the `jog` level.
4. After every chunk re-measures the wire ahead of the loop with the wrist camera, merges those
   close-range points (weighted higher) and refits before planning the next chunk.
5. Stops when the episode ends (success at the end mark), or a little before the far end of the
   seen wire, and calls finish.

Assumptions, stated: the wire's projection on its principal axis is monotonic (true of the
bench's wires, which run across the board); wire pixels are orange (R > G > B with G/B large).
The wire radius is read from the task card or spec when published there, else assumed nominal.
"""

from __future__ import annotations

import math
import os
import sys
import time

import numpy as np

try:
    import robot_gateway  # noqa: F401
except ImportError:  # run from a checkout without `pip install ./clients/python`
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "clients", "python"))
from robot_gateway import (  # noqa: E402
    Client,
    ConflictError,
    EpisodeEndedError,
    IkUnreachableError,
    Transform,
    UnsafeChunkError,
)

#: fallback wire radius when neither the task card nor the spec publishes it, m
NOMINAL_WIRE_RADIUS_M = 0.0015
#: waypoint spacing along the wire, m
SPACING_M = 0.005
#: loop speed along the wire, m/s
SPEED_MPS = 0.025
#: waypoints per chunk (re-measure after each)
ROWS_PER_CHUNK = 8
#: stop this far before the far end of the seen wire (its post stands there), m
END_MARGIN_M = 0.014


def log(*a) -> None:
    print(f"[{time.strftime('%H:%M:%S')}]", *a, flush=True)


# ---------------------------------------------------------------------- perception


def wire_mask(rgb: np.ndarray) -> np.ndarray:
    """Orange pixels: red dominant, green well above blue (the red lamp has G ≈ B)."""
    r = rgb[:, :, 0].astype(np.int32)
    g = rgb[:, :, 1].astype(np.int32)
    b = rgb[:, :, 2].astype(np.int32)
    return (r > 60) & (r * 10 > g * 13) & (g * 10 > r * 35 // 10) & (g > 2 * b + 8)


def wire_points(cam, frame, tool_pose, wire_r: float):
    """Base-frame points on the wire's centreline seen in one frame (surface → centre correction)."""
    if frame.depth is None:
        return np.zeros((0, 3))
    mask = wire_mask(frame.rgb)
    if mask.sum() < 5:
        return np.zeros((0, 3))
    pts, _px = cam.back_project_depth(frame.depth, mask, tool_pose=tool_pose)
    if len(pts) == 0:
        return pts
    # the camera sees the near side of the tube; its visible surface lies on average π/4·r in
    # front of the axis along the viewing ray: push each point back by that much
    origin = np.asarray(cam.base_from_camera(tool_pose).t)
    ray = pts - origin
    ray /= np.linalg.norm(ray, axis=1, keepdims=True)
    return pts + ray * (math.pi / 4) * wire_r


class Centreline:
    """A smooth wire centreline fitted to a weighted point cloud, sampled every 1 mm."""

    def __init__(self, pts: np.ndarray, w: np.ndarray, start_hint: np.ndarray, bandwidth_m: float = 0.012):
        mean = np.average(pts, axis=0, weights=w)
        X = pts - mean
        cov = (X * w[:, None]).T @ X / w.sum()
        d = np.linalg.eigh(cov)[1][:, -1]
        # orient from the loop's end (start) to the far end
        if (start_hint - mean) @ d > 0:
            d = -d
        t = X @ d
        lo, hi = dense_extent(t)
        grid = np.arange(lo, hi + 1e-9, 0.002)
        P, T, ok = [], [], []
        for tk in grid:
            dt = t - tk
            wk = w * np.exp(-0.5 * (dt / bandwidth_m) ** 2)
            sel = wk > 1e-4 * wk.max() if wk.max() > 0 else None
            if sel is None or wk[sel].sum() < 3:
                ok.append(False)
                P.append(np.zeros(3))
                T.append(d)
                continue
            A = np.stack([np.ones(sel.sum()), dt[sel], dt[sel] ** 2], axis=1)
            W = wk[sel]
            coef, *_ = np.linalg.lstsq(A * W[:, None] ** 0.5, pts[sel] * W[:, None] ** 0.5, rcond=None)
            P.append(coef[0])
            tan = coef[1]
            T.append(tan / np.linalg.norm(tan))
            ok.append(True)
        ok = np.array(ok)
        P = np.array(P)[ok]
        # resample by arc length every 1 mm
        seg = np.linalg.norm(np.diff(P, axis=0), axis=1)
        s = np.concatenate([[0], np.cumsum(seg)])
        self.s = np.arange(0, s[-1], 0.001)
        self.p = np.stack([np.interp(self.s, s, P[:, k]) for k in range(3)], axis=1)
        tan = np.gradient(self.p, self.s, axis=0)
        self.tangent = tan / np.linalg.norm(tan, axis=1, keepdims=True)
        self.length = float(self.s[-1])
        self.axis = d

    def nearest(self, p) -> tuple:
        """(arc position, distance) of the point of the line nearest to p."""
        dd = np.linalg.norm(self.p - np.asarray(p), axis=1)
        i = int(np.argmin(dd))
        return float(self.s[i]), float(dd[i])

    def at(self, s: float):
        i = int(np.clip(round(s / 0.001), 0, len(self.s) - 1))
        return self.p[i], self.tangent[i]

    def residuals(self, pts: np.ndarray) -> np.ndarray:
        """Distance of each point to the line (nearest sample)."""
        out = np.empty(len(pts))
        for a in range(0, len(pts), 2000):
            chunk = pts[a : a + 2000]
            d2 = ((chunk[:, None, :] - self.p[None, ::2, :]) ** 2).sum(axis=2)
            out[a : a + 2000] = np.sqrt(d2.min(axis=1))
        return out


def dense_extent(t: np.ndarray, window_m: float = 0.003, min_count: int = 3) -> tuple:
    """Smallest and largest t that have at least `min_count` points within `window_m` inward:
    the wire's ends, ignoring isolated specks."""
    ts = np.sort(t)
    n = len(ts)
    inward_hi = np.searchsorted(ts, ts - window_m, side="left")  # points in [t - w, t]
    inward_lo = np.searchsorted(ts, ts + window_m, side="right")  # points in [t, t + w]
    ok_lo = np.nonzero(inward_lo - np.arange(n) >= min_count)[0]
    ok_hi = np.nonzero(np.arange(n) + 1 - inward_hi >= min_count)[0]
    if len(ok_lo) == 0 or len(ok_hi) == 0:
        return float(ts[0]), float(ts[-1])
    return float(ts[ok_lo[0]]), float(ts[ok_hi[-1]])


def loop_pose(line: Centreline, s: float, down: np.ndarray) -> Transform:
    """Loop centre on the line at s, z along the tangent, x as close to `down` as possible."""
    p, z = line.at(s)
    x = down - z * (down @ z)
    x /= np.linalg.norm(x)
    y = np.cross(z, x)
    return Transform(np.stack([x, y, z], axis=1), p)


# ---------------------------------------------------------------------- the agent


class Agent:
    def __init__(self, c: Client):
        self.c = c
        self.spec = c.spec()
        self.card = c.task()
        self.cams = c.cameras()
        acts = self.card["actions"]
        self.mode = "ee_pose" if "ee_pose" in acts else "joint_position" if "joint_position" in acts else "jog"
        self.wire_r = published_wire_radius(self.card, self.spec)
        base_from_world = ~Transform.from_pose(self.spec["robot"]["base_pose"])
        self.down = np.asarray(base_from_world.rotate((0.0, 0.0, -1.0)))
        self.period = self.spec["control"]["control_period_s"]
        self.max_dt = self.spec["control"]["max_dt_s"]
        self.max_rows = self.card["budgets"]["max_rows_per_chunk"]
        self.cloud = np.zeros((0, 3))
        self.weight = np.zeros(0)
        self.line: Centreline | None = None
        self.ended = False
        log(f"level {self.card['level']}, acting with {self.mode}, wire radius {self.wire_r * 1000:.2f} mm")

    # --------------------------------------------------------------- sensing

    def measure(self, cameras=None):
        obs = self.c.observe(depth=True, cameras=cameras)
        self._note(obs)
        q = obs.reading["q"]
        tool = self.c.fk(q)["tool"]
        new = []
        for f in obs.images:
            cam = self.cams[f.camera]
            if not cam.has_depth:
                continue
            pts = wire_points(cam, f, tool if cam.moves_with_tool else None, self.wire_r)
            new.append((f.camera, pts))
        return obs, tool, new

    def add_points(self, pts: np.ndarray, w: float, gate_m: float | None):
        if len(pts) == 0:
            return 0
        if gate_m is not None and self.line is not None:
            pts = pts[self.line.residuals(pts) < gate_m]
        self.cloud = np.concatenate([self.cloud, pts])
        self.weight = np.concatenate([self.weight, np.full(len(pts), w)])
        return len(pts)

    def refit(self, start_hint, drop_outliers=False):
        self.line = Centreline(self.cloud, self.weight, np.asarray(start_hint))
        if not drop_outliers:
            return
        # drop outliers (specks of orange elsewhere) and refit once; only on the first fit, as
        # points beyond the fitted ends would be eroded a little more at every refit
        res = self.line.residuals(self.cloud)
        keep = res < max(0.004, 4 * np.median(res))
        if not keep.all():
            self.cloud, self.weight = self.cloud[keep], self.weight[keep]
            self.line = Centreline(self.cloud, self.weight, np.asarray(start_hint))

    def _note(self, res):
        ep = res.get("episode", {})
        if ep.get("status") == "ended":
            self.ended = True
            log(f"episode ended: {ep.get('reason')} {ep.get('detail', '')}")

    # --------------------------------------------------------------- acting

    def dt_for(self, step_m: float) -> float:
        dt = max(step_m / SPEED_MPS, 0.05)
        return min(self.max_dt, math.ceil(dt / self.period - 1e-9) * self.period)

    def send_poses(self, poses, q, grip, dt):
        """One chunk through the level's action type; returns the act response."""
        if self.mode == "ee_pose":
            return self.c.act_ee_pose(poses, dt, gripper_width_m=grip)
        rows, seed = [], q
        for p in poses:
            sol = self.c.ik(p, q_seed=seed)
            jump = max(abs(a - b) for a, b in zip(sol["q"], seed))
            if jump > 0.3:  # another IK branch: the arm would swing through the workspace
                raise IkUnreachableError("AGENT_IK_JUMP", 422, f"IK jumped {jump:.2f} rad between waypoints")
            rows.append(list(sol["q"]) + [grip])
            seed = sol["q"]
        return self.c.act_joint_position(rows, dt)

    def run(self):
        obs, tool, new = self.measure()
        start = np.asarray(tool["xyz"])
        for name, pts in new:
            self.add_points(pts, 3.0 if self.cams[name].moves_with_tool else 1.0, None)
            log(f"camera {name}: {len(pts)} wire points")
        self.refit(start, drop_outliers=True)
        line = self.line
        s0, d0 = line.nearest(start)
        log(f"centreline {line.length * 100:.1f} cm; loop at s={s0 * 100:.1f} cm, {d0 * 1000:.1f} mm off the line")
        grip = obs.reading["gripper_width_m"]
        q = obs.reading["q"]
        if self.mode == "jog":
            return self.run_jog(q)
        s = s0
        slow = 1.0
        while not self.ended:
            line = self.line
            s_end = line.length - END_MARGIN_M
            s_here, off = line.nearest(self.c.fk(q)["tool"]["xyz"])
            s = max(s_here, min(s, s_here + SPACING_M))
            if s >= s_end - 1e-4:
                break
            targets = []
            for _ in range(ROWS_PER_CHUNK):
                s = min(s + SPACING_M, s_end)
                targets.append(loop_pose(line, s, self.down))
                if s >= s_end:
                    break
            # first row: also absorbs any offset of the measured pose from the line
            dt = self.dt_for(SPACING_M) * slow
            dt = min(self.max_dt, math.ceil(dt / self.period - 1e-9) * self.period)
            try:
                res = self.send_poses(targets, q, grip, dt)
            except UnsafeChunkError as e:
                slow *= 1.5
                log(f"chunk refused ({e.details}); slowing to ×{slow:.2f}")
                s = s_here
                if slow > 8:
                    raise
                continue
            except IkUnreachableError as e:
                log(f"no IK solution along the line ({e.message}); stopping here")
                break
            except (EpisodeEndedError, ConflictError) as e:
                log(f"episode over: {e.message}")
                self.ended = True
                break
            self._note(res)
            q = res.readings[-1]["q"] if res.readings else q
            log(f"s={s * 100:.1f}/{s_end * 100:.1f} cm, offset {off * 1000:.1f} mm, t={res.t:.1f}")
            if self.ended:
                break
            self.remeasure()
        return self.finish()

    def remeasure(self):
        """Wrist camera close-up of the wire ahead; merged with a higher weight, then refit."""
        try:
            obs, tool, new = self.measure(cameras=["wrist"] if "wrist" in self.cams else None)
        except (EpisodeEndedError, ConflictError):
            self.ended = True
            return
        if self.ended:
            return
        T = Transform.from_pose(tool)
        for name, pts in new:
            if len(pts) == 0:
                continue
            # only the stretch ahead of the loop and within 8 cm: close, and not hidden by the loop
            local = np.asarray([(~T).apply(p) for p in pts])
            sel = (local[:, 2] > 0.005) & (local[:, 2] < 0.08)
            self.add_points(pts[sel], 3.0, gate_m=0.006)
        self.refit(np.asarray(self.line.p[0]))

    def run_jog(self, q):
        spec = self.c.action_spec("jog")
        words = spec["commands"]
        lin = spec["step_sizes"]["linear_m"]
        ang = spec["step_sizes"]["angular_rad"]
        moves = []
        for k, axis in enumerate("xyz"):
            for sign in (1, -1):
                dv = np.zeros(3)
                dv[k] = sign * lin
                moves.append((f"{'+' if sign > 0 else '-'}{axis}", dv, None))
        for k, axis in enumerate(("roll", "pitch", "yaw")):
            for sign in (1, -1):
                moves.append((f"{'+' if sign > 0 else '-'}{axis}", None, rot_axis(k, sign * ang)))
        moves = [m for m in moves if m[0] in words]
        dt = self.dt_for(lin)
        while not self.ended:
            line = self.line
            s_end = line.length - END_MARGIN_M
            T = Transform.from_pose(self.c.fk(q)["tool"])
            p, R = np.asarray(T.t), np.asarray(T.R)
            s_here, off = line.nearest(p)
            if s_here >= s_end - 0.002:
                break
            cmds = []
            s_cur = s_here
            for _ in range(ROWS_PER_CHUNK * 2):
                goal = loop_pose(line, min(s_cur + lin, s_end), self.down)
                gp, gR = np.asarray(goal.t), np.asarray(goal.R)
                best = None
                for name, dv, rot in moves:
                    cp = p + dv if dv is not None else p
                    cR = rot @ R if rot is not None else R
                    e_pos = np.linalg.norm(cp - gp) / lin
                    e_rot = rot_angle(cR.T @ gR) / ang
                    cost = e_pos**2 + e_rot**2
                    if best is None or cost < best[0]:
                        best = (cost, name, cp, cR)
                _, name, p, R = best
                cmds.append(name)
                s_cur = max(s_cur, line.nearest(p)[0])
                if s_cur >= s_end:
                    break
            try:
                res = self.c.jog(cmds, dt)
            except UnsafeChunkError as e:
                dt = min(self.max_dt, math.ceil(dt * 1.5 / self.period) * self.period)
                log(f"jog chunk refused ({e.details}); dt now {dt:.3f} s")
                continue
            except (EpisodeEndedError, ConflictError) as e:
                log(f"episode over: {e.message}")
                self.ended = True
                break
            self._note(res)
            q = res.readings[-1]["q"] if res.readings else q
            log(f"jog {' '.join(cmds)} → s={s_cur * 100:.1f}/{s_end * 100:.1f} cm, offset {off * 1000:.1f} mm")
            if self.ended:
                break
            self.remeasure()
        return self.finish()

    def finish(self):
        if not self.ended:
            try:
                res = self.c.finish()
                log(f"finished: {res['episode']}")
            except ConflictError as e:
                log(f"finish: {e.message}")
        return 0


def rot_axis(k: int, a: float) -> np.ndarray:
    c, s = math.cos(a), math.sin(a)
    i, j = [(1, 2), (2, 0), (0, 1)][k]
    R = np.eye(3)
    R[i, i] = c
    R[j, j] = c
    R[i, j] = -s
    R[j, i] = s
    return R


def rot_angle(R: np.ndarray) -> float:
    return math.acos(max(-1.0, min(1.0, (np.trace(R) - 1) / 2)))


def published_wire_radius(card, spec) -> float:
    """A wire radius published anywhere in the task card or spec (key containing 'wire_radius')."""

    def walk(o):
        if isinstance(o, dict):
            for k, v in o.items():
                if k.startswith("wire_radius") and isinstance(v, (int, float)) and 0 < v < 0.05:
                    return float(v)
                r = walk(v)
                if r is not None:
                    return r
        elif isinstance(o, list):
            for v in o:
                r = walk(v)
                if r is not None:
                    return r
        return None

    return walk(dict(card)) or walk(dict(spec)) or NOMINAL_WIRE_RADIUS_M


def main() -> int:
    c = Client()
    try:
        return Agent(c).run()
    finally:
        c.close()


if __name__ == "__main__":
    sys.exit(main())
