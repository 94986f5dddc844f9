"""Every client call against a live gateway (sim buzz-wire bench)."""

from __future__ import annotations

import math

import pytest

from robot_gateway import DepthImage, Image, Transform, decode_png

np = pytest.importorskip("numpy")


@pytest.fixture
def ee(gateway):
    """A fresh ee_pose-level episode and an agent client."""
    gateway.new_episode("ee_pose")
    with gateway.agent() as c:
        yield c


def test_spec_and_task(gateway, ee):
    spec = ee.spec()
    assert spec["protocol"] == "robot-gateway/1"
    assert {c["name"] for c in spec["cameras"]} >= {"front", "wrist"}
    assert ee.spec() is spec  # cached
    assert ee.action_spec("jog")["commands"][0] == "+x"
    card = ee.task()
    assert card.task_id == "buzz-wire" and card.level == "ee_pose"
    assert card.actions == ["joint_position", "ee_pose"]
    assert card.episode["status"] == "running"


def test_observe_decodes_rgb_and_depth_in_metres(gateway, ee):
    obs = ee.observe(depth=True, cameras=["front", "wrist"])
    assert obs.observation_id.startswith("obs-") and obs.t == pytest.approx(obs.reading["t"])
    front = obs.image("front")
    assert front.rgb.shape == (480, 640, 3) and front.rgb.dtype == np.uint8
    assert front.depth.shape == (480, 640) and front.depth.dtype == np.float32
    # the depth PNG holds millimetres: the metres are those integers / 1000, NaN where 0
    plain = gateway.agent(use_numpy=False)._depth_array(decode_png(front.depth_bytes))
    assert isinstance(plain, DepthImage)
    finite = np.isfinite(front.depth)
    assert finite.any()
    mm = front.depth[finite] * 1000
    assert np.abs(mm - np.round(mm)).max() < 1e-3
    assert plain.at(320, 240) == pytest.approx(float(front.depth[240, 320]), nan_ok=True)
    with pytest.raises(KeyError):
        obs.image("side")


def test_observe_without_numpy_gives_plain_images(gateway, ee):
    plain = gateway.agent(use_numpy=False)
    a = plain.observe(depth=True, cameras=["front"]).image("front")
    b = ee.observe(depth=True, cameras=["front"]).image("front")
    assert isinstance(a.rgb, Image) and isinstance(a.depth, DepthImage)
    assert a.rgb.pixel(100, 200) == tuple(int(x) for x in b.rgb[200, 100])  # the robot has not moved
    assert a.depth.at(100, 200) == pytest.approx(float(b.depth[200, 100]), nan_ok=True)


def test_jpeg_frames_are_served_but_not_decoded(ee):
    f = ee.observe(cameras=["front"], encoding="jpeg", decode=False).image("front")
    assert f.rgb_bytes[:3] == b"\xff\xd8\xff" and f.depth is None
    with pytest.raises(ValueError, match="JPEG"):
        _ = f.rgb


def test_act_joint_position_holds_and_returns_frames(ee):
    r0 = ee.observe().reading
    row = r0["q"] + [r0["gripper_width_m"]]
    res = ee.act_joint_position([row, row], dt=0.1, frames={"fps": 10, "cameras": ["front"]})
    assert res.executed_rows == 2 and len(res.readings) == 2
    assert res.t == pytest.approx(r0["t"] + 0.2)
    assert res.images and all(f.camera == "front" for f in res.images)
    assert res.images[0].rgb.shape == (480, 640, 3)


def test_act_ee_pose_moves_the_tool_where_asked(ee):
    r0 = ee.observe().reading
    tool = Transform.from_pose(ee.fk(r0["q"])["tool"])
    up = Transform(tool.R, (tool.t[0], tool.t[1], tool.t[2] + 0.004))
    res = ee.act_ee_pose([up], dt=0.5, gripper_width_m=r0["gripper_width_m"])
    ee.observe(advance_s=0.3)
    reached = ee.fk(ee.observe().reading["q"])["tool"]["xyz"]
    assert res.executed_rows == 1
    assert reached == pytest.approx(up.t, abs=5e-4)
    # the list form of a row is the same call
    row = [*tool.t, *tool.to_pose()["quat_xyzw"], r0["gripper_width_m"]]
    assert ee.act_ee_pose([row], dt=0.5).executed_rows == 1


def test_jog_by_word(gateway):
    gateway.new_episode("jog")
    with gateway.agent() as c:
        q0 = c.observe().reading["q"]
        z0 = c.fk(q0)["tool"]["xyz"][2]
        step = c.action_spec("jog")["step_sizes"]["linear_m"]
        c.jog(["+z"], dt=0.5)
        c.observe(advance_s=0.3)
        z1 = c.fk(c.observe().reading["q"])["tool"]["xyz"][2]
        assert z1 - z0 == pytest.approx(step, abs=5e-4)
        with pytest.raises(ValueError, match="unknown jog command"):
            c.jog(["+w"], dt=0.5)


def test_readings_and_frames_carry_the_tool_pose_and_effort(ee):
    obs = ee.observe(cameras=["wrist"], decode=False)
    r = obs.reading
    fk = ee.fk(r["q"])["tool"]
    assert r["tool"]["xyz"] == pytest.approx(fk["xyz"], abs=1e-6)
    assert r["tool"]["quat_xyzw"] == pytest.approx(fk["quat_xyzw"], abs=1e-6)
    # the sim measures no joint torque: the effort says so instead of inventing one
    assert r["effort"] == {"source": "none", "tau": None} and "tau" not in r
    f = obs.image("wrist")
    assert f.reading == r and f.tool_pose == r["tool"]
    row = r["q"] + [r["gripper_width_m"]]
    res = ee.act_joint_position([row] * 4, dt=0.1, frames={"fps": 5, "cameras": ["front"]})
    assert all("tool" in x and x["effort"]["source"] == "none" for x in res.readings)
    assert res.images and all(abs(im.reading["t"] - im.t) < 1e-3 for im in res.images)


def test_spec_and_task_publish_the_enforced_limits_and_bench_facts(ee):
    spec = ee.spec()
    card = ee.task()
    lim = spec["safety"]
    published = {j["name"]: j for j in spec["robot"]["joints"]}
    for j in lim["joints"]:
        assert 0 < j["max_acceleration"] < published[j["name"]]["max_acceleration"]
    names = {v["name"] for v in card["safety"]["keep_out"]}
    assert {"table", "board"} <= names
    assert card["bench"]["loop"]["inner_radius_m"] > card["bench"]["wire"]["radius_m"] > 0


def test_fk_ik_round_trip(ee):
    q = ee.observe().reading["q"]
    fk = ee.fk(q)
    assert set(fk) >= {"tool", "flange", "t", "time_left_s"}
    target = Transform.from_pose(fk["tool"])
    moved = Transform(target.R, (target.t[0] + 0.01, target.t[1], target.t[2]))
    sol = ee.ik(moved, q_seed=q)
    assert sol.position_residual_m < 1e-4
    assert ee.fk(sol.q)["tool"]["xyz"] == pytest.approx(moved.t, abs=2e-4)
    assert ee.ik(fk["tool"]).position_residual_m < 1e-4  # dict pose, no seed


def test_finish_ends_the_episode(ee):
    res = ee.finish()
    assert res.episode["status"] == "ended" and res.episode["reason"] == "finished"
    assert ee.task().episode["status"] == "ended"


def test_records_go_to_the_temp_dir(gateway, ee):
    ee.finish()
    assert gateway.records_dir.is_dir() and any(gateway.records_dir.iterdir())


def test_frame_urls_resolve_and_instrument_is_typed(ee):
    obs = ee.observe(cameras=["front"], decode=False)
    png = ee.frame_bytes(obs.frames[0]["rgb"])
    assert png[:8] == b"\x89PNG\r\n\x1a\n"
    assert math.isfinite(obs.time_left_s)
