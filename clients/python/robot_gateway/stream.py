"""The ``/v1/stream`` WebSocket of a closed-loop agent (realtime setting).

    from robot_gateway import Client
    c = Client()
    with c.stream(rate_hz=50) as s:          # readings pushed at 50 Hz
        r = s.latest                          # the newest reading message (``reading``, ``episode``)
        res = s.act("joint_position", rows, dt=0.01, start_step=r.episode.realtime.committed_step + 60)

Wire format (JSON text messages; gateway/api/stream.ts): ``subscribe`` (``rate_hz``, ``events``)
answered by ``subscribed``; ``reading`` messages at that rate; with ``events``, ``event`` (a sensor
event: a contact) and ``safety`` messages the moment the episode sees them (copies: the next
response still carries them); ``act`` (the body of ``POST /v1/act`` with its
action type as ``action_type``) answered by ``act_result`` or ``error`` with the same id. Errors
raise the same typed exceptions as HTTP (``robot_gateway.errors``), with the RB_ERR code; a refused
token on the upgrade is its 401/403.

The client core is stdlib only; the stream uses the ``websockets`` package, an optional extra:
``pip install './clients/python[stream]'``. It is imported when a stream is opened, never before.
"""

from __future__ import annotations

import contextlib
import itertools
import json
import queue
import threading
from typing import Any, Callable, Dict, List, Mapping, Optional, Sequence

from .errors import GatewayError, TransportError, make_error

#: what to install when the optional dependency is missing
STREAM_EXTRA = "pip install './clients/python[stream]'   (the websockets package)"

#: the registry's HTTP status of the codes a stream error can carry without one (0 = unknown);
#: the class is then chosen by code or by this status, as over HTTP
_STATUS = {
    "RB_ERR_BAD_JSON": 400,
    "RB_ERR_BAD_REQUEST": 400,
    "RB_ERR_DT": 422,
    "RB_ERR_ROWS": 400,
    "RB_ERR_ACTION_TYPE": 422,
    "RB_ERR_UNSAFE_CHUNK": 422,
    "RB_ERR_SPLICE_PAST": 409,
    "RB_ERR_SPLICE_MARGIN": 409,
    "RB_ERR_SPLICE_AHEAD": 422,
    "RB_ERR_REALTIME_NO_CAPTURE": 422,
    "RB_ERR_REALTIME_ONLY": 422,
    "RB_ERR_EPISODE_ENDED": 409,
    "RB_ERR_NO_EPISODE": 409,
    "RB_ERR_BUSY": 409,
    "RB_ERR_ESTOP": 409,
    "RB_ERR_MOTION_DISABLED": 403,
}

PATH = "/v1/stream"


class StreamDependencyError(ImportError):
    """The optional ``websockets`` package is not installed."""


def _websockets():
    try:
        from websockets.exceptions import InvalidStatus
        from websockets.sync.client import connect
    except ImportError as e:
        raise StreamDependencyError(f"the /v1/stream client needs the websockets package: {STREAM_EXTRA}") from e
    return connect, InvalidStatus


class _Msg(dict):
    """A message: a dict whose keys are also attributes (nested dicts too)."""

    def __getattr__(self, name: str) -> Any:
        try:
            return self[name]
        except KeyError:
            raise AttributeError(name) from None


def _error(m: Mapping[str, Any], status: Optional[int] = None) -> GatewayError:
    err = m.get("error") or {}
    code = str(err.get("code", "RB_CLIENT_STREAM"))
    st = status if status is not None else _STATUS.get(code, 0)
    return make_error(code, st, str(err.get("message", "")), err.get("details") or {}, "WS", PATH)


def _ws_url(url: str) -> str:
    base = url.rstrip("/")
    return ("ws" + base[4:] if base.startswith("http") else base) + PATH


def _auth(token: Optional[str]) -> Dict[str, str]:
    return {"Authorization": f"Bearer {token}"} if token else {}


def _refused(e: Any) -> GatewayError:
    """The typed error of a refused upgrade (websockets' ``InvalidStatus``): its 401/403 body."""
    res = e.response
    try:
        body = json.loads(bytes(res.body or b"").decode("utf-8"))
    except ValueError:
        body = {"error": {"code": f"HTTP_{res.status_code}", "message": "refused upgrade"}}
    return _error(body, res.status_code)


def _act_body(type: str, rows: Sequence[Sequence[Any]], dt: float, start_step: Optional[int]) -> Dict[str, Any]:
    """The ``act`` message: the body of ``POST /v1/act`` with its action type as ``action_type``."""
    body: Dict[str, Any] = {"type": "act", "action_type": type, "dt": dt, "rows": [list(r) for r in rows]}
    if start_step is not None:
        body["start_step"] = start_step
    return body


class Stream:
    """An open ``/v1/stream``. A background thread receives messages: readings update ``latest``
    and go to listeners, answers resolve the call that asked. Close it (or use ``with``)."""

    def __init__(self, url: str, token: Optional[str], *, timeout_s: float = 30.0) -> None:
        connect, InvalidStatus = _websockets()
        self.timeout_s = timeout_s
        # the connection is a context manager (websockets ≥ 17.1 says so): entered here, left in close()
        self._stack = contextlib.ExitStack()
        try:
            self._ws = self._stack.enter_context(
                connect(_ws_url(url), additional_headers=_auth(token), open_timeout=timeout_s, max_size=2**22)
            )
        except InvalidStatus as e:
            raise _refused(e) from None
        except OSError as e:
            raise TransportError("RB_CLIENT_TRANSPORT", 0, f"{type(e).__name__}: {e}", {}, "WS", PATH) from e
        self._ids = itertools.count(1)
        self._lock = threading.Lock()
        self._waiting: Dict[str, "queue.Queue[Mapping[str, Any]]"] = {}
        self._listeners: List[Callable[[Mapping[str, Any]], None]] = []
        self._readings: "queue.Queue[_Msg]" = queue.Queue(maxsize=1000)
        self._events: "queue.Queue[_Msg]" = queue.Queue(maxsize=1000)
        self.latest: Optional[_Msg] = None
        self.errors: List[GatewayError] = []
        self._closed = threading.Event()
        self._thread = threading.Thread(target=self._receive, name="robot-gateway-stream", daemon=True)
        self._thread.start()

    # ------------------------------------------------------------------ calls

    def subscribe(self, rate_hz: float, *, events: bool = False) -> _Msg:
        """Readings pushed at ``rate_hz`` (0 stops them); ``events``: sensor and safety events
        pushed as they happen (``next_event``)."""
        return self._call({"type": "subscribe", "rate_hz": rate_hz, "events": bool(events)})

    def act(
        self,
        type: str,
        rows: Sequence[Sequence[Any]],
        dt: float,
        *,
        start_step: Optional[int] = None,
    ) -> _Msg:
        """One chunk, as ``POST /v1/act`` (realtime: answered at once with ``start_step``)."""
        out = self._call(_act_body(type, rows, dt, start_step))
        out.pop("type", None)
        out.pop("id", None)
        return out

    def next_reading(self, timeout_s: Optional[float] = None) -> _Msg:
        """The next reading pushed (readings not taken are kept, the oldest dropped past 1000)."""
        try:
            return self._readings.get(timeout=timeout_s if timeout_s is not None else self.timeout_s)
        except queue.Empty:
            self._raise_if_closed()
            raise TransportError("RB_CLIENT_TIMEOUT", 0, "no reading arrived in time", {}, "WS", PATH) from None

    def next_event(self, timeout_s: Optional[float] = None) -> _Msg:
        """The next ``event`` or ``safety`` message pushed (``subscribe(..., events=True)``); kept
        until taken, the oldest dropped past 1000."""
        try:
            return self._events.get(timeout=timeout_s if timeout_s is not None else self.timeout_s)
        except queue.Empty:
            self._raise_if_closed()
            raise TransportError("RB_CLIENT_TIMEOUT", 0, "no event arrived in time", {}, "WS", PATH) from None

    def on(self, listener: Callable[[Mapping[str, Any]], None]) -> Callable[[], None]:
        """Call ``listener`` with every message (from the receiving thread); returns unsubscribe."""
        self._listeners.append(listener)
        return lambda: self._listeners.remove(listener)

    def close(self) -> None:
        self._stack.close()
        self._thread.join(timeout=self.timeout_s)

    def __enter__(self) -> "Stream":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    # ------------------------------------------------------------------ internals

    def _raise_if_closed(self) -> None:
        if self._closed.is_set():
            raise TransportError("RB_CLIENT_TRANSPORT", 0, "the stream is closed", {}, "WS", PATH)

    def _call(self, msg: Dict[str, Any]) -> _Msg:
        self._raise_if_closed()
        id_ = f"p{next(self._ids)}"
        box: "queue.Queue[Mapping[str, Any]]" = queue.Queue(maxsize=1)
        with self._lock:
            self._waiting[id_] = box
        try:
            self._ws.send(json.dumps({**msg, "id": id_}, allow_nan=False))
            try:
                m = box.get(timeout=self.timeout_s)
            except queue.Empty:
                raise TransportError("RB_CLIENT_TIMEOUT", 0, f"no answer to {msg['type']}", {}, "WS", PATH) from None
        finally:
            with self._lock:
                self._waiting.pop(id_, None)
        if m.get("type") == "closed":
            self._raise_if_closed()
        if m.get("type") == "error":
            raise _error(m)
        return _Msg(m)

    def _receive(self) -> None:
        try:
            for text in self._ws:
                try:
                    m = json.loads(text, object_hook=_Msg)
                except ValueError:
                    continue
                if m.get("type") == "reading":
                    self.latest = m
                    if self._readings.full():
                        self._readings.get_nowait()
                    self._readings.put_nowait(m)
                elif m.get("type") in ("event", "safety"):
                    if self._events.full():
                        self._events.get_nowait()
                    self._events.put_nowait(m)
                id_ = m.get("id")
                with self._lock:
                    box = self._waiting.get(id_) if isinstance(id_, str) else None
                if box is not None:
                    box.put(m)
                elif m.get("type") == "error":
                    self.errors.append(_error(m))
                for listener in list(self._listeners):
                    listener(m)
        except Exception:  # the connection closed under us: pending calls are told below
            pass
        finally:
            self._closed.set()
            with self._lock:
                for box in self._waiting.values():
                    box.put({"type": "closed"})
