"""act's video and the /v1/stream WebSocket through the Python client, against a live gateway."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys

import pytest

from robot_gateway import (
    ConflictError,
    DtError,
    StreamDependencyError,
    UnauthorizedError,
)
from robot_gateway.stream import Stream


@pytest.fixture
def joints(gateway):
    gateway.new_episode("joint_position")
    with gateway.agent() as c:
        yield c


def test_act_video_returns_an_mp4_that_saves_to_a_file(joints, tmp_path):
    assert joints.spec()["video"]["available"] is True
    r = joints.observe(cameras=[]).reading
    hold = [list(r["q"]) + [r["gripper_width_m"]]] * 5
    # 0.25 s at 20 fps: a frame at the start and every 50 control periods → 6
    res = joints.act_joint_position(hold, dt=0.05, frames={"fps": 20, "cameras": ["front"], "video": True})
    assert len(res.images) == 6
    v = res.video("front")
    assert (v.camera, v.frames, v.fps, v.codec, v.pix_fmt, v.width, v.height) == (
        "front", 6, 20, "h264", "yuv420p", 640, 480,
    )
    assert v.duration_s == pytest.approx(0.3)
    path = v.save(tmp_path / "act.mp4")
    data = (tmp_path / "act.mp4").read_bytes()
    assert data == v.data and len(data) == v.size
    assert data[4:8] == b"ftyp"
    probe = shutil.which("ffprobe")
    assert probe, "ffprobe (Debian's ffmpeg package, installed by scripts/setup.sh) is needed"
    out = subprocess.run(
        [probe, "-v", "error", "-count_frames", "-select_streams", "v:0", "-show_entries",
         "stream=codec_name,pix_fmt,width,height,nb_read_frames", "-of", "json", path],
        check=True, capture_output=True, text=True,
    )
    s = json.loads(out.stdout)["streams"][0]
    assert (s["codec_name"], s["pix_fmt"], s["width"], s["height"], s["nb_read_frames"]) == (
        "h264", "yuv420p", 640, 480, "6",
    )
    # without video: no video files, and asking for one says so
    plain = joints.act_joint_position(hold[:1], dt=0.05, frames={"fps": 20, "cameras": ["front"]})
    assert plain.video_files == []
    with pytest.raises(KeyError):
        plain.video("front")


@pytest.fixture
def realtime(gateway):
    with gateway.operator() as op:
        op.start_episode(task="free-motion", seed=1, setting="realtime")
    with gateway.agent() as c:
        yield c
        try:
            c.finish()
        except ConflictError:
            pass


def test_stream_pushes_readings_and_takes_chunks_with_typed_errors(realtime):
    card = realtime.task()
    assert card.setting == "realtime"
    with realtime.stream(rate_hz=50) as s:
        r = s.next_reading()
        assert len(r.reading.q) == 7 and r.episode.realtime.slowdown == card.realtime.slowdown
        assert s.latest is not None
        q, grip = list(r.reading.q), r.reading.gripper_width_m
        ahead = r.episode.realtime.committed_step + 500
        ok = s.act("joint_position", [q + [grip]] * 3, dt=0.01, start_step=ahead)
        assert ok.start_step == ahead and ok.executed_rows == 0
        # step 0 is past once a reading says it is committed (the sim's margin is 0: before
        # that, step 0 could still take a chunk)
        while s.next_reading().episode.realtime.committed_step < 1:
            pass
        with pytest.raises(ConflictError) as past:
            s.act("joint_position", [q + [grip]], dt=0.01, start_step=0)
        assert past.value.code in ("RB_ERR_SPLICE_PAST", "RB_ERR_SPLICE_MARGIN")
        assert past.value.status == 409
        with pytest.raises(DtError) as dt:
            s.act("joint_position", [q + [grip]], dt=0.0105)
        assert dt.value.code == "RB_ERR_DT" and dt.value.details["dt"] == 0.0105
        # readings keep coming, the queue runs
        later = s.next_reading()
        assert later.episode.realtime.committed_step >= r.episode.realtime.committed_step


def test_stream_pushes_events_as_they_happen(realtime, gateway):
    with realtime.stream() as s:
        sub = s.subscribe(0, events=True)
        assert sub.events is True
        with gateway.operator() as op:
            op.estop("stream events test")
            try:
                m = s.next_event()
            finally:
                op.release()
        assert m.type == "safety"
        assert "estop" in json.dumps(m.safety)
        assert isinstance(m.episode_id, str)


def test_stream_refuses_a_wrong_token_with_its_code(gateway):
    with pytest.raises(UnauthorizedError) as e:
        Stream(gateway.url, "not-the-token")
    assert (e.value.code, e.value.status) == ("RB_ERR_UNAUTHORIZED", 401)


def test_without_websockets_the_core_works_and_the_stream_says_what_to_install(gateway):
    # a fresh interpreter in which the websockets package cannot be imported
    code = (
        "import sys; sys.modules['websockets'] = None\n"
        "import robot_gateway as rg\n"
        f"c = rg.Client({gateway.url!r}, {gateway.agent_token!r})\n"
        "assert c.spec()['protocol'] == 'robot-gateway/1'\n"
        "try:\n"
        "    c.stream(rate_hz=10)\n"
        "except rg.StreamDependencyError as e:\n"
        "    print('refused:', e)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], check=True, capture_output=True, text=True)
    assert "refused: the /v1/stream client needs the websockets package" in out.stdout
    assert "clients/python[stream]" in out.stdout
    assert issubclass(StreamDependencyError, ImportError)


def test_the_stream_statuses_are_the_registrys():
    """A stream error carries no HTTP status: the client takes the registry's (docs/errors.md)."""
    import re
    from pathlib import Path

    from robot_gateway.stream import _STATUS

    doc = (Path(__file__).resolve().parents[3] / "docs" / "errors.md").read_text()
    registry = {m[0]: int(m[1]) for m in re.findall(r"^\| `(RB_ERR_[A-Z_]+)` \| (\d+) \|", doc, re.M)}
    for code, status in _STATUS.items():
        assert registry.get(code) == status, code
