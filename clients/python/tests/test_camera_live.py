"""Camera helpers against the live simulator: the published intrinsics, poses and depth agree
with FK and with the bench's geometry (read here from the calibration file; agents never do).

Tolerances: a depth pixel at the image of a tube's axis sees the tube's near surface, so its
back-projection lies one tube radius r from the axis; depth is whole millimetres (±0.5 mm) and
the tube is tessellated (its flats sit at r·cos(π/n) ≥ 0.9 r from the axis), so every visible
hit lies within [0.9 r − 0.6 mm, r + 0.6 mm] of the axis. Pixels where something else is in
front (the arm, the loop's handle) are told apart by being > 5 mm off; enough must be visible.
"""

from __future__ import annotations

import math

import pytest

from robot_gateway import Transform

np = pytest.importorskip("numpy")


@pytest.fixture
def start(gateway):
    """A fresh episode on the calibration's wire, and one observation of every camera with depth."""
    gateway.new_episode("ee_pose", seed=0)
    c = gateway.agent()
    obs = c.observe(depth=True)
    tool = c.fk(obs.reading["q"])["tool"]
    yield c, obs, tool
    c.close()


def _dist_to_polyline(pts, poly):
    a, b = poly[:-1], poly[1:]
    ab = b - a
    out = []
    for p in pts:
        t = np.clip(((p - a) * ab).sum(1) / (ab * ab).sum(1), 0, 1)
        out.append(np.linalg.norm(a + ab * t[:, None] - p, axis=1).min())
    return np.array(out)


def _sample_depth(frame, uvz):
    u = np.round(uvz[:, 0]).astype(int)
    v = np.round(uvz[:, 1]).astype(int)
    inside = (u >= 0) & (u < frame.depth.shape[1]) & (v >= 0) & (v < frame.depth.shape[0])
    d = np.full(len(u), np.nan)
    d[inside] = frame.depth[v[inside], u[inside]]
    return u, v, d


def test_project_back_project_round_trip_on_live_frames(start):
    c, obs, tool = start
    for f in obs.images:
        cam = c.camera(f.camera)
        pose = tool if cam.moves_with_tool else None
        vs, us = np.nonzero(np.isfinite(f.depth))
        pick = np.linspace(0, len(us) - 1, 40).astype(int)
        for u, v in zip(us[pick], vs[pick]):
            z = float(f.depth[v, u])
            p = cam.back_project(float(u), float(v), z, tool_pose=pose)
            uu, vv, zz = cam.project(p, tool_pose=pose)
            assert (uu, vv, zz) == pytest.approx((u, v, z), abs=1e-6), f.camera


def test_tool_origin_projects_onto_the_wire_in_every_camera_that_sees_it(start, calibration):
    # at the start the wire runs through the loop: the loop centre (tool origin, from FK) is on it
    c, obs, tool = start
    r = calibration["wire"]["wireRadiusM"]
    hits = 0
    for f in obs.images:
        cam = c.camera(f.camera)
        pose = tool if cam.moves_with_tool else None
        u, v, z = cam.project(tool["xyz"], tool_pose=pose)
        if not cam.in_image(u, v):
            continue
        d = float(f.depth[round(v), round(u)])
        p = np.asarray(cam.back_project(round(u), round(v), d, tool_pose=pose))
        if np.linalg.norm(p - tool["xyz"]) > 0.005:
            continue  # something in front of the loop from this viewpoint (the arm)
        hits += 1
        assert z - d == pytest.approx(r, abs=0.0015), f.camera  # the near surface, ~r closer
    assert hits >= 2


def test_depth_of_the_wire_lies_on_the_calibrated_tube(start, calibration):
    c, obs, _tool = start
    wire = np.asarray(calibration["wire"]["pointsBase"])
    r = calibration["wire"]["wireRadiusM"]
    dense = np.concatenate([np.linspace(a, b, 20, endpoint=False) for a, b in zip(wire[:-1], wire[1:])])
    dense = dense[10:-10]  # ~1 mm apart: keep 1 cm off the ends, where the tube's end caps face the camera
    for name in ("front", "side"):
        cam = c.camera(name)
        f = obs.image(name)
        uvz = cam.project_points(dense)
        u, v, d = _sample_depth(f, uvz)
        ok = np.isfinite(d)
        pts = cam.back_project_pixels(u[ok], v[ok], d[ok])
        dist = _dist_to_polyline(pts, wire)
        visible = dist < 0.005
        assert visible.sum() >= 30, name  # the arm hides part of the wire from the side camera
        assert dist[visible].max() <= r + 0.0006, name
        assert dist[visible].min() >= 0.9 * r - 0.0006, name


def test_wrist_depth_lies_on_the_loop_ring_from_fk(start, calibration):
    c, obs, tool = start
    t = calibration["tool"]
    tube = t["loopWireRadiusM"]
    major = t["loopInnerRadiusM"] + tube
    cam = c.camera("wrist")
    a = np.linspace(0, 2 * math.pi, 48, endpoint=False)
    ring_tool = np.stack([major * np.cos(a), major * np.sin(a), np.zeros_like(a)], axis=1)
    T = Transform.from_pose(tool)
    ring_base = ring_tool @ np.asarray(T.R).T + np.asarray(T.t)
    f = obs.image("wrist")
    u, v, d = _sample_depth(f, cam.project_points(ring_base, tool_pose=tool))
    ok = np.isfinite(d)
    pts = cam.back_project_pixels(u[ok], v[ok], d[ok], tool_pose=tool)
    local = (pts - np.asarray(T.t)) @ np.asarray(T.R)  # base → tool frame
    # distance from the ring's centre circle
    radial = np.hypot(local[:, 0], local[:, 1])
    dist = np.hypot(radial - major, local[:, 2])
    visible = dist < 0.005
    assert visible.mean() > 0.6
    assert dist[visible].max() <= tube + 0.0006
    assert dist[visible].min() >= 0.9 * tube - 0.0006
