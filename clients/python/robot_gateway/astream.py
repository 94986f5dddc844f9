"""The ``/v1/stream`` WebSocket for asyncio agents: the same messages, calls and typed errors as
``robot_gateway.stream.Stream``, without a thread.

    import asyncio
    from robot_gateway import AsyncStream, Client

    async def main():
        c = Client()
        async with await AsyncStream.open(c.url, c.token) as s:
            await s.subscribe(50, events=True)
            r = await s.next_reading()
            res = await s.act("joint_position", rows, dt=0.01, start_step=r.episode.realtime.committed_step + 60)
            e = await s.next_event()          # a contact, or a safety event

    asyncio.run(main())

Uses the ``websockets`` package (the ``stream`` extra, as the threaded stream); imported when a
stream is opened, never before.
"""

from __future__ import annotations

import asyncio
import itertools
import json
from typing import Any, Callable, Dict, List, Mapping, Optional, Sequence

from .errors import GatewayError, TransportError
from .stream import PATH, STREAM_EXTRA, StreamDependencyError, _act_body, _auth, _error, _Msg, _refused, _ws_url

#: messages kept when nobody takes them (the oldest dropped), per kind
_KEEP = 1000


def _websockets_asyncio():
    try:
        from websockets.asyncio.client import connect
        from websockets.exceptions import InvalidStatus
    except ImportError as e:
        raise StreamDependencyError(f"the /v1/stream client needs the websockets package: {STREAM_EXTRA}") from e
    return connect, InvalidStatus


class AsyncStream:
    """An open ``/v1/stream`` on the running event loop. A receiving task routes messages:
    answers resolve the call that asked, readings and events queue for ``next_reading`` /
    ``next_event`` and go to listeners. Close it (or use ``async with``)."""

    def __init__(self, ws: Any, timeout_s: float) -> None:
        self._ws = ws
        self.timeout_s = timeout_s
        self._ids = itertools.count(1)
        self._waiting: Dict[str, "asyncio.Future[Mapping[str, Any]]"] = {}
        self._readings: "asyncio.Queue[_Msg]" = asyncio.Queue(maxsize=_KEEP)
        self._events: "asyncio.Queue[_Msg]" = asyncio.Queue(maxsize=_KEEP)
        self._listeners: List[Callable[[Mapping[str, Any]], None]] = []
        self.latest: Optional[_Msg] = None
        self.errors: List[GatewayError] = []
        self._closed = asyncio.Event()
        self._task = asyncio.get_running_loop().create_task(self._receive())

    @classmethod
    async def open(cls, url: str, token: Optional[str], *, timeout_s: float = 30.0) -> "AsyncStream":
        """Connect; a refused token raises its typed error (401/403), an unreachable gateway
        ``TransportError``."""
        connect, InvalidStatus = _websockets_asyncio()
        try:
            ws = await connect(_ws_url(url), additional_headers=_auth(token), open_timeout=timeout_s, max_size=2**22)
        except InvalidStatus as e:
            raise _refused(e) from None
        except OSError as e:
            raise TransportError("RB_CLIENT_TRANSPORT", 0, f"{type(e).__name__}: {e}", {}, "WS", PATH) from e
        return cls(ws, timeout_s)

    # ------------------------------------------------------------------ calls

    async def subscribe(self, rate_hz: float, *, events: bool = False) -> _Msg:
        """Readings pushed at ``rate_hz`` (0 stops them); ``events``: sensor and safety events
        pushed as they happen."""
        return await self._call({"type": "subscribe", "rate_hz": rate_hz, "events": bool(events)})

    async def act(
        self,
        type: str,
        rows: Sequence[Sequence[Any]],
        dt: float,
        *,
        start_step: Optional[int] = None,
    ) -> _Msg:
        """One chunk, as ``POST /v1/act`` (realtime: answered at once with ``start_step``)."""
        out = await self._call(_act_body(type, rows, dt, start_step))
        out.pop("type", None)
        out.pop("id", None)
        return out

    async def next_reading(self, timeout_s: Optional[float] = None) -> _Msg:
        """The next reading pushed (kept until taken, the oldest dropped past 1000)."""
        return await self._next(self._readings, "reading", timeout_s)

    async def next_event(self, timeout_s: Optional[float] = None) -> _Msg:
        """The next ``event`` or ``safety`` message pushed (``subscribe(..., events=True)``)."""
        return await self._next(self._events, "event", timeout_s)

    def on(self, listener: Callable[[Mapping[str, Any]], None]) -> Callable[[], None]:
        """Call ``listener`` with every message (on the event loop); returns unsubscribe."""
        self._listeners.append(listener)
        return lambda: self._listeners.remove(listener)

    async def close(self) -> None:
        await self._ws.close()
        await self._task

    async def __aenter__(self) -> "AsyncStream":
        return self

    async def __aexit__(self, *exc) -> None:
        await self.close()

    # ------------------------------------------------------------------ internals

    def _raise_if_closed(self) -> None:
        if self._closed.is_set():
            raise TransportError("RB_CLIENT_TRANSPORT", 0, "the stream is closed", {}, "WS", PATH)

    async def _next(self, q: "asyncio.Queue[_Msg]", what: str, timeout_s: Optional[float]) -> _Msg:
        if q.empty():
            self._raise_if_closed()
        getter = asyncio.ensure_future(q.get())
        closed = asyncio.ensure_future(self._closed.wait())
        try:
            done, _ = await asyncio.wait(
                {getter, closed},
                timeout=timeout_s if timeout_s is not None else self.timeout_s,
                return_when=asyncio.FIRST_COMPLETED,
            )
        finally:
            closed.cancel()
        if getter in done:
            return getter.result()
        getter.cancel()
        self._raise_if_closed()
        raise TransportError("RB_CLIENT_TIMEOUT", 0, f"no {what} arrived in time", {}, "WS", PATH)

    async def _call(self, msg: Dict[str, Any]) -> _Msg:
        self._raise_if_closed()
        id_ = f"p{next(self._ids)}"
        fut: "asyncio.Future[Mapping[str, Any]]" = asyncio.get_running_loop().create_future()
        self._waiting[id_] = fut
        try:
            await self._ws.send(json.dumps({**msg, "id": id_}, allow_nan=False))
            try:
                m = await asyncio.wait_for(fut, self.timeout_s)
            except asyncio.TimeoutError:
                raise TransportError("RB_CLIENT_TIMEOUT", 0, f"no answer to {msg['type']}", {}, "WS", PATH) from None
        finally:
            self._waiting.pop(id_, None)
        if m.get("type") == "closed":
            self._raise_if_closed()
        if m.get("type") == "error":
            raise _error(m)
        return _Msg(m)

    @staticmethod
    def _keep(q: "asyncio.Queue[_Msg]", m: _Msg) -> None:
        if q.full():
            q.get_nowait()
        q.put_nowait(m)

    async def _receive(self) -> None:
        try:
            async for text in self._ws:
                try:
                    m = json.loads(text, object_hook=_Msg)
                except ValueError:
                    continue
                kind = m.get("type")
                if kind == "reading":
                    self.latest = m
                    self._keep(self._readings, m)
                elif kind in ("event", "safety"):
                    self._keep(self._events, m)
                id_ = m.get("id")
                fut = self._waiting.get(id_) if isinstance(id_, str) else None
                if fut is not None and not fut.done():
                    fut.set_result(m)
                elif kind == "error":
                    self.errors.append(_error(m))
                for listener in list(self._listeners):
                    listener(m)
        except Exception:  # the connection closed under us: pending calls are told below
            pass
        finally:
            self._closed.set()
            for fut in self._waiting.values():
                if not fut.done():
                    fut.set_result({"type": "closed"})
