"""Error answers become typed exceptions carrying the RB_ERR code, the status and the details."""

from __future__ import annotations

import pytest

import robot_gateway as rg


@pytest.fixture
def ee(gateway):
    gateway.new_episode("ee_pose")
    with gateway.agent() as c:
        yield c


def _hold_row(c):
    r = c.observe().reading
    return r["q"] + [r["gripper_width_m"]]


def test_wrong_token(gateway):
    with pytest.raises(rg.UnauthorizedError) as e:
        rg.Client(gateway.url, "not-the-token").task()
    assert e.value.code == "RB_ERR_UNAUTHORIZED" and e.value.status == 401
    assert e.value.path == "/v1/task" and e.value.method == "GET"


def test_dt_not_a_multiple_of_the_period(ee):
    with pytest.raises(rg.DtError) as e:
        ee.act_joint_position([_hold_row(ee)], dt=0.0005)
    assert e.value.code == "RB_ERR_DT" and e.value.status == 422
    assert isinstance(e.value, rg.UnprocessableError) and e.value.details


def test_row_width(ee):
    with pytest.raises(rg.BadRequestError) as e:
        ee.act_joint_position([_hold_row(ee)[:5]], dt=0.1)
    assert e.value.code == "RB_ERR_ROW_WIDTH" and e.value.status == 400


def test_unsafe_chunk_names_the_limit(ee):
    row = _hold_row(ee)
    row[0] += 1.0  # one radian in 10 ms
    with pytest.raises(rg.UnsafeChunkError) as e:
        ee.act_joint_position([row], dt=0.01)
    assert e.value.code == "RB_ERR_UNSAFE_CHUNK" and e.value.details


def test_ik_unreachable(ee):
    with pytest.raises(rg.IkUnreachableError) as e:
        ee.ik({"xyz": [3.0, 0.0, 0.5], "quat_xyzw": [0, 0, 0, 1]})
    assert e.value.code == "RB_ERR_IK_UNREACHABLE" and e.value.status == 422


def test_action_type_closed_at_this_level(ee):
    with pytest.raises(rg.ActionTypeError) as e:
        ee.jog(["+z"], dt=0.1)
    assert e.value.code == "RB_ERR_ACTION_TYPE"


def test_unknown_camera(ee):
    with pytest.raises(rg.BadRequestError) as e:
        ee.observe(cameras=["nope"])
    assert e.value.code == "RB_ERR_UNKNOWN_CAMERA"


def test_no_resets_and_no_submission(ee):
    with pytest.raises(rg.ForbiddenError) as e:
        ee.reset()
    assert e.value.code == "RB_ERR_NO_RESETS" and e.value.status == 403
    with pytest.raises(rg.UnprocessableError) as e2:
        ee.submit(1.0, [])
    assert e2.value.code == "RB_ERR_NO_SUBMISSION"


def test_unknown_route(ee):
    with pytest.raises(rg.NotFoundError) as e:
        ee.request("GET", "/v1/nothing-here")
    assert e.value.code == "RB_ERR_NOT_FOUND" and e.value.status == 404


def test_motion_after_the_end(ee):
    row = _hold_row(ee)
    ee.finish()
    with pytest.raises(rg.EpisodeEndedError) as e:
        ee.act_joint_position([row], dt=0.1)
    assert e.value.code == "RB_ERR_EPISODE_ENDED" and e.value.status == 409
    assert isinstance(e.value, rg.ConflictError)


def test_transport_error_when_nobody_listens():
    with pytest.raises(rg.TransportError) as e:
        rg.Client("http://127.0.0.1:9", "t").task()
    assert e.value.status == 0
