"""Camera maths without a gateway: the plumb-bob model, its inverse and the frame chain."""

from __future__ import annotations

import math

import pytest

from robot_gateway import Camera, Transform

np = pytest.importorskip("numpy")

SPEC = {
    "name": "c", "width": 640, "height": 480, "fx": 600.0, "fy": 590.0, "cx": 320.2, "cy": 239.7,
    "distortion": [-0.21, 0.05, 0.001, -0.0015, -0.004], "frame": "world",
    "pose": {"xyz": [1.0, 0.2, 0.6], "quat_xyzw": [-0.6, -0.55, 0.4, 0.42]}, "depth": True,
}
BASE = {"xyz": [0.1, -0.05, 0.02], "quat_xyzw": [0, 0, math.sin(0.1), math.cos(0.1)]}


def test_distortion_is_the_opencv_radial_tangential_model():
    cam = Camera(SPEC, BASE)
    x, y = 0.21, -0.13
    r2 = x * x + y * y
    radial = 1 - 0.21 * r2 + 0.05 * r2**2 - 0.004 * r2**3
    xd = x * radial + 2 * 0.001 * x * y + -0.0015 * (r2 + 2 * x * x)
    yd = y * radial + 0.001 * (r2 + 2 * y * y) + 2 * -0.0015 * x * y
    assert cam.distort(x, y) == pytest.approx((xd, yd), abs=1e-15)
    assert cam.undistort(xd, yd) == pytest.approx((x, y), abs=1e-9)


def test_project_back_project_round_trip_through_base_and_world():
    cam = Camera(SPEC, BASE)
    rng = np.random.default_rng(3)
    for _ in range(50):
        u, v, z = rng.uniform(0, 639), rng.uniform(0, 479), rng.uniform(0.3, 2.0)
        p = cam.back_project(u, v, z)
        assert p is not None
        uu, vv, zz = cam.project(p)
        assert (uu, vv, zz) == pytest.approx((u, v, z), abs=1e-6)
    # the point really is at depth z along the camera's optical axis (world←camera, base in world)
    world_from_cam = Transform.from_pose(SPEC["pose"])
    base_from_world = ~Transform.from_pose(BASE)
    p = cam.back_project(SPEC["cx"], SPEC["cy"], 1.5)
    expect = base_from_world.apply(world_from_cam.apply((0, 0, 1.5)))
    assert p == pytest.approx(expect, abs=1e-12)


def test_vectorised_helpers_match_the_scalar_ones():
    cam = Camera(SPEC, BASE)
    us = np.array([10.0, 320.0, 600.5])
    vs = np.array([20.0, 240.0, 470.0])
    zs = np.array([0.5, 1.0, np.nan])
    pts = cam.back_project_pixels(us, vs, zs)
    for i in range(2):
        assert pts[i] == pytest.approx(cam.back_project(us[i], vs[i], zs[i]), abs=1e-9)
    assert np.isnan(pts[2]).all() and cam.back_project(600.5, 470.0, float("nan")) is None
    uvz = cam.project_points(pts[:2])
    assert uvz[:, :2] == pytest.approx(np.stack([us[:2], vs[:2]], axis=1), abs=1e-6)


def test_tool_camera_needs_the_tool_pose():
    spec = dict(SPEC, frame="tool", pose={"xyz": [0.0, 0.0, 0.1], "quat_xyzw": [0, 0, 0, 1]})
    cam = Camera(spec, BASE)
    with pytest.raises(ValueError, match="tool_pose"):
        cam.project((0.5, 0, 0.2))
    tool = {"xyz": [0.4, 0.1, 0.3], "quat_xyzw": [0, 0, 0, 1]}
    # base←camera = base←tool · tool←camera: the optical centre sits 0.1 m along the tool z
    assert cam.base_from_camera(tool).t == pytest.approx((0.4, 0.1, 0.4))


def test_lens_model_matches_the_renderers(tmp_path):
    """The same numbers from calibration/distortion.ts, the model the simulator renders with."""
    import json
    import subprocess
    from pathlib import Path

    repo = Path(__file__).resolve().parents[3]
    pts = [[0.21, -0.13], [-0.4, 0.3], [0.05, 0.6]]
    script = tmp_path / "lens.ts"
    script.write_text(
        f"import {{ distortPoint, parseDistortion, undistortPoint }} from {json.dumps(str(repo / 'calibration' / 'distortion.ts'))};\n"
        f"const c = parseDistortion({json.dumps(SPEC['distortion'])})!;\n"
        f"const pts = {json.dumps(pts)};\n"
        "console.log(JSON.stringify(pts.map(([x, y]) => { const d = distortPoint(c, x, y); return [d, undistortPoint(c, d[0], d[1])]; })));\n"
    )
    out = subprocess.run([str(repo / "node_modules" / ".bin" / "tsx"), str(script)], cwd=repo, check=True, capture_output=True, text=True)
    cam = Camera(SPEC, BASE)
    for (x, y), (d, u) in zip(pts, json.loads(out.stdout)):
        assert cam.distort(x, y) == pytest.approx(tuple(d), abs=1e-15)
        assert cam.undistort(*d) == pytest.approx(tuple(u), abs=1e-12)
