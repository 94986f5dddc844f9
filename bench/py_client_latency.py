"""Per-call latency of the Python client beside the same call made with bare http.client.

Run by bench/py-client.ts (which serves the sim bench); usage: py_client_latency.py URL TOKEN [N]
"""

import http.client
import json
import statistics
import sys
import time
import urllib.parse

from robot_gateway import Client

url, token = sys.argv[1], sys.argv[2]
N = int(sys.argv[3]) if len(sys.argv) > 3 else 100
u = urllib.parse.urlsplit(url)
conn = http.client.HTTPConnection(u.hostname, u.port, timeout=60)
H = {"authorization": f"Bearer {token}", "content-type": "application/json"}


def raw(method, path, body=None):
    conn.request(method, path, body=None if body is None else json.dumps(body), headers=H)
    r = conn.getresponse()
    data = r.read()
    if r.status >= 400:
        raise RuntimeError(f"{path}: {r.status} {data[:200]!r}")
    return data


c = Client(url, token)
obs = c.observe()
q = obs.reading["q"]
row = q + [obs.reading["gripper_width_m"]]
tool = c.fk(q)["tool"]


def raw_observe_frames():
    o = json.loads(raw("POST", "/v1/observe", {"cameras": ["front"], "depth": True, "encoding": "png"}))
    for f in o["frames"]:
        raw("GET", f["rgb"])
        raw("GET", f["depth"])


CALLS = [
    ("GET /v1/task", lambda: raw("GET", "/v1/task"), lambda: c.task()),
    ("POST /v1/kinematics/fk", lambda: raw("POST", "/v1/kinematics/fk", {"q": q}), lambda: c.fk(q)),
    ("POST /v1/kinematics/ik", lambda: raw("POST", "/v1/kinematics/ik", {"pose": tool, "q_seed": q}), lambda: c.ik(tool, q)),
    ("POST /v1/observe (no image)", lambda: raw("POST", "/v1/observe", {"cameras": ["front"]}), lambda: c.observe(cameras=["front"], decode=False)),
    ("observe front rgb+depth, fetched", raw_observe_frames, lambda: [f.rgb_bytes and f.depth_bytes for f in c.observe(cameras=["front"], depth=True, decode=False).images]),
    ("observe front rgb+depth, decoded", None, lambda: c.observe(cameras=["front"], depth=True)),
    ("POST /v1/act (1 row, 10 ms)", lambda: raw("POST", "/v1/act", {"type": "joint_position", "dt": 0.01, "rows": [row]}), lambda: c.act_joint_position([row], dt=0.01)),
]


def timed(fn):
    fn()  # warm
    xs = []
    for _ in range(N):
        t0 = time.perf_counter()
        fn()
        xs.append((time.perf_counter() - t0) * 1000)
    xs.sort()
    return statistics.median(xs), xs[min(len(xs) - 1, int(0.95 * len(xs)))]


print(f"{N} calls each, loopback, ms (median / p95); reference = bare http.client on one keep-alive connection")
print(f"{'call':36} {'raw HTTP':>16} {'Python client':>16} {'overhead':>9}")
for name, r, cl in CALLS:
    rm = timed(r) if r else None
    cm = timed(cl)
    rs = f"{rm[0]:7.2f} / {rm[1]:6.2f}" if rm else f"{'–':>16}"
    over = f"{cm[0] - rm[0]:+8.2f}" if rm else f"{'–':>9}"
    print(f"{name:36} {rs:>16} {cm[0]:7.2f} / {cm[1]:6.2f} {over}")
