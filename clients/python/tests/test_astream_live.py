"""The asyncio stream (``AsyncStream``) against a live gateway: readings, chunks with typed
errors, events pushed as they happen, a refused token."""

from __future__ import annotations

import asyncio
import json

import pytest

from robot_gateway import AsyncStream, ConflictError, DtError, UnauthorizedError


@pytest.fixture
def realtime(gateway):
    with gateway.operator() as op:
        op.start_episode(task="free-motion", seed=4, setting="realtime")
    with gateway.agent() as c:
        yield c
        try:
            c.finish()
        except ConflictError:
            pass


def test_async_stream_reads_acts_and_refuses_like_the_threaded_one(realtime):
    async def main():
        async with await AsyncStream.open(realtime.url, realtime.token) as s:
            sub = await s.subscribe(50)
            assert sub.rate_hz == 50 and sub.events is False
            r = await s.next_reading()
            assert len(r.reading.q) == 7 and s.latest is not None
            q, grip = list(r.reading.q), r.reading.gripper_width_m
            ahead = r.episode.realtime.committed_step + 500
            ok = await s.act("joint_position", [q + [grip]] * 3, dt=0.01, start_step=ahead)
            assert ok.start_step == ahead
            with pytest.raises(ConflictError) as past:
                await s.act("joint_position", [q + [grip]], dt=0.01, start_step=0)
            assert past.value.code in ("RB_ERR_SPLICE_PAST", "RB_ERR_SPLICE_MARGIN")
            with pytest.raises(DtError):
                await s.act("joint_position", [q + [grip]], dt=0.0105)
            later = await s.next_reading()
            assert later.episode.realtime.committed_step >= r.episode.realtime.committed_step

    asyncio.run(main())


def test_async_stream_pushes_events(realtime, gateway):
    async def main():
        async with await AsyncStream.open(realtime.url, realtime.token) as s:
            await s.subscribe(0, events=True)
            with gateway.operator() as op:
                # the e-stop is a blocking HTTP call: run it off the loop so the stream keeps receiving
                await asyncio.get_running_loop().run_in_executor(None, op.estop, "async stream test")
                try:
                    m = await s.next_event()
                finally:
                    op.release()
            assert m.type == "safety" and "estop" in json.dumps(m.safety)

    asyncio.run(main())


def test_async_stream_refuses_a_wrong_token_with_its_code(gateway):
    async def main():
        with pytest.raises(UnauthorizedError) as e:
            await AsyncStream.open(gateway.url, "not-the-token")
        assert (e.value.code, e.value.status) == ("RB_ERR_UNAUTHORIZED", 401)

    asyncio.run(main())
