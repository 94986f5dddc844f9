"""The baseline agent (examples/agents/wire_follower.py) plays a trial to success at every level
on the live gateway, as a separate process given only the agent URL and token."""

from __future__ import annotations

import os
import subprocess
import sys
import time

import pytest

from conftest import REPO

pytest.importorskip("numpy")
AGENT = REPO / "examples" / "agents" / "wire_follower.py"


@pytest.mark.parametrize("level", ["joint_position", "ee_pose", "jog"])
def test_agent_reaches_the_end(gateway, level):
    ep = gateway.new_episode(level, seed=0)
    env = {k: v for k, v in os.environ.items() if not k.startswith("ROBOT_GATEWAY_")}
    env.update(ROBOT_GATEWAY_URL=gateway.url, ROBOT_GATEWAY_TOKEN=gateway.agent_token)
    run = subprocess.run([sys.executable, str(AGENT)], env=env, capture_output=True, text=True, timeout=900)
    assert run.returncode == 0, run.stdout + run.stderr
    with gateway.operator() as op:
        summary = op.episode(ep["id"])
        for _ in range(50):  # the result is written as the episode ends
            if summary.get("result"):
                break
            time.sleep(0.1)
            summary = op.episode(ep["id"])
    result = summary["result"]
    assert result["end_reason"] == "success", run.stdout
    assert result["progress"] == 1 and result["counters"]["safety_stops"] == 0
