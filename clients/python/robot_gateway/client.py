"""HTTP client of the Standard API (stdlib only: http.client + json).

    from robot_gateway import Client
    c = Client()                       # ROBOT_GATEWAY_URL and ROBOT_GATEWAY_TOKEN from the environment
    obs = c.observe(depth=True)        # frames fetched and decoded
    front = obs.image("front")         # .rgb: H×W×3 uint8, .depth: H×W metres (NaN = no return)
    q = obs.reading["q"]
    c.act_joint_position([q + [0.008]], dt=0.5)

Every call returns the response JSON as a ``Response`` (a dict whose keys are also attributes).
Errors raise the typed exceptions of ``robot_gateway.errors`` carrying the RB_ERR code, the HTTP
status and the details. With numpy installed images are numpy arrays, else ``png.Image`` /
``DepthImage`` objects (``use_numpy=False`` forces the plain form).
"""

from __future__ import annotations

import http.client
import json
import math
import os
import time
import urllib.parse
from array import array
from typing import Any, Dict, Iterable, List, Mapping, Optional, Sequence, Union

from .camera import Camera
from .errors import GatewayError, TransportError, make_error
from .png import Image, decode_png

try:
    import numpy as _np
except ImportError:  # pragma: no cover - exercised when numpy is absent
    _np = None

#: an idle keep-alive connection older than this is replaced before use (Node closes idle
#: sockets after 5 s by default; a POST must never be retried, so never race that close)
_IDLE_REUSE_S = 2.0


class Response(dict):
    """A response body: a dict whose keys are also attributes."""

    def __getattr__(self, name: str) -> Any:
        try:
            return self[name]
        except KeyError:
            raise AttributeError(name) from None


class DepthImage:
    """A depth frame in metres without numpy: ``data`` is ``array('f')`` row-major, NaN = no return."""

    __slots__ = ("width", "height", "data")

    def __init__(self, width: int, height: int, data: array) -> None:
        self.width, self.height, self.data = width, height, data

    @property
    def shape(self):
        return (self.height, self.width)

    def at(self, u: int, v: int) -> float:
        return self.data[v * self.width + u]


class Frame:
    """One captured frame: camera name, capture time ``t`` and lazily fetched images.

    ``rgb``: H×W×3 uint8 array (numpy) or ``png.Image``. ``depth``: H×W float32 metres with NaN
    where there was no return (numpy) or ``DepthImage``; None when no depth was asked for.
    ``rgb_bytes`` / ``depth_bytes`` are the encoded files as served. ``reading``: the robot
    reading nearest the exposure (None from a gateway that sends none); ``tool_pose``: its tool
    pose (base←tool), what a wrist camera's ``back_project``/``project`` take.
    """

    def __init__(self, client: "Client", ref: Mapping[str, Any]) -> None:
        self._client = client
        self.camera: str = ref["camera"]
        self.t: float = ref["t"]
        self.rgb_url: str = ref["rgb"]
        self.depth_url: Optional[str] = ref.get("depth")
        self.reading: Optional[Dict[str, Any]] = ref.get("reading")
        self._rgb = None
        self._depth = None
        self._rgb_bytes: Optional[bytes] = None
        self._depth_bytes: Optional[bytes] = None

    @property
    def rgb_bytes(self) -> bytes:
        if self._rgb_bytes is None:
            self._rgb_bytes = self._client.frame_bytes(self.rgb_url)
        return self._rgb_bytes

    @property
    def depth_bytes(self) -> Optional[bytes]:
        if self.depth_url is None:
            return None
        if self._depth_bytes is None:
            self._depth_bytes = self._client.frame_bytes(self.depth_url)
        return self._depth_bytes

    @property
    def rgb(self):
        if self._rgb is None:
            data = self.rgb_bytes
            if data[:3] == b"\xff\xd8\xff":
                raise ValueError(
                    "this frame is JPEG, which the stdlib cannot decode: observe/act with encoding='png'"
                )
            self._rgb = self._client._rgb_array(decode_png(data))
        return self._rgb

    @property
    def depth(self):
        if self.depth_url is None:
            return None
        if self._depth is None:
            self._depth = self._client._depth_array(decode_png(self.depth_bytes))
        return self._depth

    @property
    def tool_pose(self) -> Optional[Dict[str, Any]]:
        """The tool pose (base frame) at the exposure, from the frame's reading."""
        return (self.reading or {}).get("tool")

    def load(self) -> "Frame":
        """Fetch and decode now (frames are kept by the gateway for a limited time)."""
        _ = self.rgb
        _ = self.depth
        return self

    def __repr__(self) -> str:
        return f"Frame({self.camera!r}, t={self.t})"


class Video:
    """The MP4 of an act call's execution for one camera (``act(..., frames={"fps": 25, "video": True})``).

    ``camera``, ``fps`` (episode time), ``frames`` (count), ``duration_s``, ``t_start``, ``width``,
    ``height``, ``codec`` ("h264"), ``pix_fmt`` ("yuv420p"), ``bytes`` as the gateway names them;
    ``data`` fetches the file (kept), ``save(path)`` writes it. The gateway keeps it for a limited
    time, like the frames.
    """

    def __init__(self, client: "Client", ref: Mapping[str, Any]) -> None:
        self._client = client
        self.ref: Dict[str, Any] = dict(ref)
        self.url: str = ref["url"]
        self.camera: str = ref["camera"]
        self.fps: float = ref["fps"]
        self.frames: int = ref["frames"]
        self.duration_s: float = ref["duration_s"]
        self.t_start: float = ref["t_start"]
        self.width: int = ref["width"]
        self.height: int = ref["height"]
        self.codec: str = ref["codec"]
        self.pix_fmt: str = ref["pix_fmt"]
        self.content_type: str = ref["content_type"]
        self.size: int = ref["bytes"]
        self._data: Optional[bytes] = None

    @property
    def data(self) -> bytes:
        """The MP4 file's bytes."""
        if self._data is None:
            self._data = self._client.frame_bytes(self.url)
        return self._data

    def save(self, path: Union[str, "os.PathLike[str]"]) -> str:
        """Write the MP4 to ``path``; returns the path."""
        with open(path, "wb") as f:
            f.write(self.data)
        return str(path)

    def __repr__(self) -> str:
        return f"Video({self.camera!r}, {self.frames} frames at {self.fps} fps)"


class FramedResponse(Response):
    """An observe/act response with its frames as ``Frame`` objects in ``images`` and, when act
    asked for video, ``Video`` objects in ``video_files`` (``video_error`` says why one is missing)."""

    images: List[Frame]
    video_files: List[Video]

    def video(self, camera: Optional[str] = None) -> Video:
        """The video of ``camera`` (or the only one)."""
        for v in self.video_files:
            if camera is None or v.camera == camera:
                return v
        err = self.get("video_error")
        why = f": {err['code']} {err['message']}" if err else ""
        raise KeyError(f"no video{'' if camera is None else ' of ' + repr(camera)} in this response{why}")

    def image(self, camera: str) -> Frame:
        """The latest frame of a camera."""
        hits = [f for f in self.images if f.camera == camera]
        if not hits:
            raise KeyError(f"no frame of camera {camera!r} (have {sorted({f.camera for f in self.images})})")
        return max(hits, key=lambda f: f.t)

    @property
    def reading(self) -> Dict[str, Any]:
        """The latest reading."""
        return self["readings"][-1]


class Client:
    """An agent's connection to a gateway."""

    def __init__(
        self,
        url: Optional[str] = None,
        token: Optional[str] = None,
        *,
        timeout_s: float = 300.0,
        use_numpy: Optional[bool] = None,
    ) -> None:
        url = url or os.environ.get("ROBOT_GATEWAY_URL")
        token = token if token is not None else os.environ.get("ROBOT_GATEWAY_TOKEN")
        if not url:
            raise ValueError("no gateway URL: pass url= or set ROBOT_GATEWAY_URL")
        u = urllib.parse.urlsplit(url)
        if u.scheme not in ("http", "https") or not u.hostname:
            raise ValueError(f"gateway URL must be http(s)://host:port, got {url!r}")
        self.url = url.rstrip("/")
        self._scheme = u.scheme
        self._host = u.hostname
        self._port = u.port
        self._prefix = u.path.rstrip("/")
        self.token = token
        self.timeout_s = timeout_s
        if use_numpy and _np is None:
            raise ImportError("use_numpy=True but numpy is not installed")
        self.use_numpy = (_np is not None) if use_numpy is None else bool(use_numpy)
        self._conn: Optional[http.client.HTTPConnection] = None
        self._last_used = 0.0
        self._spec: Optional[Response] = None

    # ------------------------------------------------------------------ transport

    def close(self) -> None:
        if self._conn is not None:
            self._conn.close()
            self._conn = None

    def __enter__(self) -> "Client":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def _connection(self) -> http.client.HTTPConnection:
        if self._conn is not None and time.monotonic() - self._last_used > _IDLE_REUSE_S:
            self.close()
        if self._conn is None:
            cls = http.client.HTTPSConnection if self._scheme == "https" else http.client.HTTPConnection
            self._conn = cls(self._host, self._port, timeout=self.timeout_s)
        return self._conn

    def _send(self, method: str, path: str, body: Optional[bytes], headers: Dict[str, str]):
        conn = self._connection()
        try:
            conn.request(method, self._prefix + path, body=body, headers=headers)
            res = conn.getresponse()
            data = res.read()
        except (OSError, http.client.HTTPException) as e:
            self.close()
            raise TransportError("RB_CLIENT_TRANSPORT", 0, f"{type(e).__name__}: {e}", {}, method, path) from e
        self._last_used = time.monotonic()
        if res.getheader("connection", "").lower() == "close":
            self.close()
        return res.status, res.getheader("content-type", ""), data

    def request(self, method: str, path: str, body: Any = None, *, raw: bool = False):
        """One API call. Returns the JSON body as a ``Response`` (or the bytes with ``raw``);
        raises a ``GatewayError`` subclass for an error answer."""
        headers = {"accept": "application/json" if not raw else "*/*"}
        if self.token:
            headers["authorization"] = f"Bearer {self.token}"
        payload = None
        if body is not None:
            payload = json.dumps(body, allow_nan=False).encode()
            headers["content-type"] = "application/json"
        status, ctype, data = self._send(method, path, payload, headers)
        if status >= 400:
            raise _error_from(status, ctype, data, method, path)
        if raw:
            return data
        try:
            return json.loads(data, object_hook=Response)
        except ValueError:
            raise TransportError(
                "RB_CLIENT_NOT_JSON", status, f"answer is not JSON ({ctype})", {"body": data[:200].decode("latin-1")},
                method, path,
            ) from None

    # ------------------------------------------------------------------ discovery

    def spec(self, refresh: bool = False) -> Response:
        """``GET /v1/spec`` (cached: the spec of a gateway does not change)."""
        if self._spec is None or refresh:
            self._spec = self.request("GET", "/v1/spec")
        return self._spec

    def task(self) -> Response:
        """``GET /v1/task``: the task card of the current episode."""
        return self.request("GET", "/v1/task")

    def openapi(self) -> Response:
        return self.request("GET", "/v1/openapi.json")

    def camera(self, name: str) -> Camera:
        """The model of one camera (intrinsics, distortion, pose) from the spec."""
        for c in self.spec()["cameras"]:
            if c["name"] == name:
                return Camera(c, self.spec()["robot"]["base_pose"])
        raise KeyError(f"no camera {name!r} (have {[c['name'] for c in self.spec()['cameras']]})")

    def cameras(self) -> Dict[str, Camera]:
        base = self.spec()["robot"]["base_pose"]
        return {c["name"]: Camera(c, base) for c in self.spec()["cameras"]}

    def action_spec(self, type: str) -> Response:
        for a in self.spec()["control"]["actions"]:
            if a["type"] == type:
                return a
        raise KeyError(f"the gateway has no action type {type!r}")

    # ------------------------------------------------------------------ episode calls

    def observe(
        self,
        advance_s: float = 0.0,
        cameras: Optional[Sequence[str]] = None,
        depth: bool = False,
        *,
        encoding: str = "png",
        decode: bool = True,
    ) -> FramedResponse:
        """``POST /v1/observe``. With ``decode`` every frame is fetched and decoded now."""
        body: Dict[str, Any] = {"advance_s": advance_s, "depth": depth, "encoding": encoding}
        if cameras is not None:
            body["cameras"] = list(cameras)
        return self._framed(self.request("POST", "/v1/observe", body), decode)

    def act(
        self,
        type: str,
        rows: Sequence[Sequence[Any]],
        dt: float,
        *,
        frames: Optional[Mapping[str, Any]] = None,
        start_step: Optional[int] = None,
        decode: bool = False,
    ) -> FramedResponse:
        """``POST /v1/act`` with any action type. ``frames`` e.g. ``{"fps": 10, "cameras": ["wrist"],
        "depth": True}`` (PNG unless it names an encoding); the frames come back lazily fetched
        unless ``decode``. ``"video": True`` in ``frames`` also returns the execution as one MP4 per
        camera (``res.video("front").save("act.mp4")``; ``spec()["video"]["available"]`` says
        whether the gateway can)."""
        body: Dict[str, Any] = {"type": type, "dt": dt, "rows": [list(r) for r in rows]}
        if frames is not None:
            body["frames"] = {"encoding": "png", **dict(frames)}
        if start_step is not None:
            body["start_step"] = start_step
        return self._framed(self.request("POST", "/v1/act", body), decode)

    def act_joint_position(self, rows: Sequence[Sequence[float]], dt: float, **kw) -> FramedResponse:
        """Rows of 7 joint angles (rad) and the gripper opening (m)."""
        return self.act("joint_position", rows, dt, **kw)

    def act_ee_pose(self, rows: Sequence[Any], dt: float, gripper_width_m: Optional[float] = None, **kw) -> FramedResponse:
        """Rows of tool poses in the base frame. A row is ``[x, y, z, qx, qy, qz, qw, gripper]``, or a
        pose dict ``{"xyz", "quat_xyzw"}`` (or ``Transform``) with ``gripper_width_m`` for every row."""
        out = []
        for r in rows:
            if isinstance(r, Mapping) or hasattr(r, "to_pose"):
                p = r.to_pose() if hasattr(r, "to_pose") else r
                if gripper_width_m is None:
                    raise ValueError("pose rows need gripper_width_m")
                out.append([*p["xyz"], *p["quat_xyzw"], gripper_width_m])
            else:
                out.append(list(r))
        return self.act("ee_pose", out, dt, **kw)

    def jog(self, commands: Iterable[Union[str, int]], dt: float, **kw) -> FramedResponse:
        """Jog commands by word (``"+x"``, ``"-yaw"``, ``"open"``…, see the spec) or index."""
        words = self.action_spec("jog")["commands"]
        rows = []
        for c in commands:
            if isinstance(c, str):
                if c not in words:
                    raise ValueError(f"unknown jog command {c!r} (have {words})")
                rows.append([words.index(c)])
            else:
                rows.append([c])
        return self.act("jog", rows, dt, **kw)

    def fk(self, q: Sequence[float]) -> Response:
        """``POST /v1/kinematics/fk``: tool and flange pose (base frame); never advances time."""
        return self.request("POST", "/v1/kinematics/fk", {"q": list(q)})

    def ik(self, pose, q_seed: Optional[Sequence[float]] = None) -> Response:
        """``POST /v1/kinematics/ik`` for a tool pose (dict or ``Transform``, base frame)."""
        p = pose.to_pose() if hasattr(pose, "to_pose") else {"xyz": list(pose["xyz"]), "quat_xyzw": list(pose["quat_xyzw"])}
        body: Dict[str, Any] = {"pose": p}
        if q_seed is not None:
            body["q_seed"] = list(q_seed)
        return self.request("POST", "/v1/kinematics/ik", body)

    def finish(self) -> Response:
        """``POST /v1/finish``: end the episode."""
        return self.request("POST", "/v1/finish", {})

    def submit(self, answer: Any, evidence: Sequence[str]) -> Response:
        """``POST /v1/submit``: the answer and the observation ids supporting it; ends the episode."""
        return self.request("POST", "/v1/submit", {"answer": answer, "evidence": list(evidence)})

    def reset(self) -> Response:
        return self.request("POST", "/v1/reset", {})

    def instrument(self, name: str) -> Response:
        return self.request("GET", f"/v1/instruments/{urllib.parse.quote(name, safe='')}")

    def stream(self, rate_hz: Optional[float] = None, *, timeout_s: float = 30.0):
        """Open the ``/v1/stream`` WebSocket (``robot_gateway.stream.Stream``), subscribed at
        ``rate_hz`` when given. Needs the optional ``websockets`` package
        (``pip install './clients/python[stream]'``); without it raises ``StreamDependencyError``."""
        from .stream import Stream

        s = Stream(self.url, self.token, timeout_s=timeout_s)
        if rate_hz is not None:
            try:
                s.subscribe(rate_hz)
            except BaseException:
                s.close()
                raise
        return s

    def frame_bytes(self, url: str) -> bytes:
        """The encoded bytes of a frame URL (as given in ``frames[].rgb`` / ``.depth``)."""
        path = urllib.parse.urlsplit(url).path if "://" in url else url
        if self._prefix and path.startswith(self._prefix + "/"):
            path = path[len(self._prefix):]
        return self.request("GET", path, raw=True)

    # ------------------------------------------------------------------ decoding

    def _framed(self, res: Response, decode: bool) -> FramedResponse:
        out = FramedResponse(res)
        out.images = [Frame(self, f) for f in res.get("frames", [])]
        out.video_files = [Video(self, v) for v in res.get("videos", [])]
        if decode:
            for f in out.images:
                f.load()
        return out

    def _rgb_array(self, img: Image):
        if img.bit_depth != 8 or img.channels not in (3, 4):
            raise ValueError(f"expected an 8-bit RGB image, got {img.channels} channel(s) of {img.bit_depth} bit")
        if not self.use_numpy:
            return img
        a = _np.frombuffer(img.samples, dtype=_np.uint8).reshape(img.height, img.width, img.channels)
        return a[:, :, :3]

    def _depth_array(self, img: Image):
        if img.bit_depth != 16 or img.channels != 1:
            raise ValueError(f"expected a 16-bit grey depth image, got {img.channels} channel(s) of {img.bit_depth} bit")
        if self.use_numpy:
            mm = _np.frombuffer(img.samples.tobytes(), dtype=_np.uint16).reshape(img.height, img.width)
            m = mm.astype(_np.float32) / 1000.0
            m[mm == 0] = _np.nan
            return m
        nan = math.nan
        return DepthImage(img.width, img.height, array("f", (s / 1000.0 if s else nan for s in img.samples)))


class Operator(Client):
    """Operator calls (the operator token): episodes and the e-stop. Never give it to an agent."""

    def start_episode(self, **body: Any) -> Response:
        """``POST /v1/admin/episodes`` (task, seed, setting, level, privileged)."""
        return self.request("POST", "/v1/admin/episodes", body)

    def episodes(self) -> Response:
        return self.request("GET", "/v1/admin/episodes")

    def episode(self, episode_id: str) -> Response:
        return self.request("GET", f"/v1/admin/episodes/{urllib.parse.quote(episode_id, safe='')}")

    def estop(self, reason: str = "operator") -> Response:
        return self.request("POST", "/v1/admin/estop", {"reason": reason})

    def release(self) -> Response:
        return self.request("POST", "/v1/admin/release", {})


def _error_from(status: int, ctype: str, data: bytes, method: str, path: str) -> GatewayError:
    try:
        body = json.loads(data)
        err = body["error"]
        return make_error(str(err["code"]), status, str(err.get("message", "")), err.get("details") or {}, method, path)
    except (ValueError, KeyError, TypeError):
        text = data[:200].decode("utf-8", "replace")
        return make_error(f"HTTP_{status}", status, text or f"HTTP {status}", {"content_type": ctype}, method, path)
