"""A live gateway for the client tests: `robot-gateway serve --port 0` on loopback, serving the
simulated buzz-wire bench of examples/benches/sim-buzzwire.yaml with its records in a temp folder.

The bench is served from a temp copy whose calibration differs from calibration-example.yaml in
one camera: the example's wrist camera (on the flange at [0.07, 0, 0.02]) looks into an arm link
and never sees the loop, so the copy mounts it where the built-in sim bench has it (14 cm back
and 10 cm out along the loop axis, aimed at the loop centre). Everything else is the example's.
"""

from __future__ import annotations

import json
import os
import queue
import signal
import subprocess
import threading
from pathlib import Path

import pytest

from robot_gateway import Client, Operator, Transform

REPO = Path(__file__).resolve().parents[3]
BENCH = REPO / "examples" / "benches" / "sim-buzzwire.yaml"
#: guard against a gateway that never comes up (not a timing assertion)
START_TIMEOUT_S = 300


class Gateway:
    def __init__(self, url: str, agent_token: str, operator_token: str, proc: subprocess.Popen, log: list):
        self.url = url
        self.agent_token = agent_token
        self.operator_token = operator_token
        self.proc = proc
        self.log = log

    def agent(self, **kw) -> Client:
        return Client(self.url, self.agent_token, **kw)

    def operator(self) -> Operator:
        return Operator(self.url, self.operator_token)

    def new_episode(self, level: str = "ee_pose", seed: int = 0) -> dict:
        """A fresh episode (a running one is aborted by the gateway)."""
        with self.operator() as op:
            return op.start_episode(task="buzz-wire", seed=seed, level=level)


def _yaml(path: Path):
    """A YAML file as data, parsed by the repo's own YAML package (no PyYAML needed)."""
    out = subprocess.run(
        ["node", "-e", "process.stdout.write(JSON.stringify(require('yaml').parse(require('fs').readFileSync(process.argv[1],'utf8'))))", str(path)],
        cwd=REPO, check=True, capture_output=True, text=True,
    )
    return json.loads(out.stdout)


def _wrist_seeing_the_loop(cal: dict) -> dict:
    """flange←camera for a camera at (-0.14, 0, 0.10) in the loop frame, looking at the loop centre."""
    eye = (-0.14, 0.0, 0.10)
    n = sum(v * v for v in eye) ** 0.5
    z = tuple(-v / n for v in eye)
    a = (0.0, 1.0, 0.0)
    x = (z[1] * a[2] - z[2] * a[1], z[2] * a[0] - z[0] * a[2], z[0] * a[1] - z[1] * a[0])
    nx = sum(v * v for v in x) ** 0.5
    x = tuple(v / nx for v in x)
    y = (z[1] * x[2] - z[2] * x[1], z[2] * x[0] - z[0] * x[2], z[0] * x[1] - z[1] * x[0])
    tool_from_cam = Transform(tuple(zip(x, y, z)), eye)
    flange_from_tool = Transform.from_pose(cal["tool"]["loopPoseFlange"])
    return (flange_from_tool @ tool_from_cam).to_pose()


def _bench_copy(work: Path) -> Path:
    bench = _yaml(BENCH)
    cal = _yaml(BENCH.parent / bench["calibration"])
    for cam in cal["cameras"]:
        if cam["name"] == "wrist":
            cam["extrinsics"] = {"mount": "tool", "poseFlange": _wrist_seeing_the_loop(cal)}
    (work / "calibration.json").write_text(json.dumps(cal))
    bench["calibration"] = "calibration.json"
    bench["recordsDir"] = str(work / "records")
    (work / "bench.json").write_text(json.dumps(bench))
    return work / "bench.json"


@pytest.fixture(scope="session")
def gateway(tmp_path_factory):
    work = tmp_path_factory.mktemp("gateway")
    bench = _bench_copy(work)
    tsx = REPO / "node_modules" / ".bin" / "tsx"
    proc = subprocess.Popen(
        [str(tsx), str(REPO / "cli" / "main.ts"), "serve", "--bench", str(bench), "--port", "0", "--host", "127.0.0.1"],
        cwd=work,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,
    )
    lines: "queue.Queue[str | None]" = queue.Queue()
    log: list = []

    def pump():
        assert proc.stdout is not None
        for line in proc.stdout:
            log.append(line)
            lines.put(line)
        lines.put(None)

    threading.Thread(target=pump, daemon=True).start()
    found = {}
    try:
        while not {"ROBOT_GATEWAY_URL", "ROBOT_GATEWAY_TOKEN", "ROBOT_GATEWAY_OPERATOR_TOKEN"} <= found.keys():
            try:
                line = lines.get(timeout=START_TIMEOUT_S)
            except queue.Empty:
                raise RuntimeError("gateway did not print its URL and tokens:\n" + "".join(log)) from None
            if line is None:
                raise RuntimeError("gateway exited before serving:\n" + "".join(log))
            if "=" in line and line.startswith("ROBOT_GATEWAY_"):
                k, v = line.strip().split("=", 1)
                found[k] = v
        gw = Gateway(found["ROBOT_GATEWAY_URL"], found["ROBOT_GATEWAY_TOKEN"], found["ROBOT_GATEWAY_OPERATOR_TOKEN"], proc, log)
        gw.records_dir = work / "records"
        yield gw
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGTERM)
            try:
                proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()


@pytest.fixture(scope="session")
def calibration(gateway):
    """The served bench's calibration as data (the tests may read it; an agent never does)."""
    return json.loads((gateway.records_dir.parent / "calibration.json").read_text())
