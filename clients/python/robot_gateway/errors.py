"""Typed errors of the Standard API.

Every error response of the gateway is ``{"error": {"code": "RB_ERR_…", "message", "details"}}``
(codes: docs/errors.md). The client raises one exception per response: the class is chosen by
the code (a few codes an agent handles on purpose have their own class) and otherwise by the
HTTP status, so ``except UnprocessableError`` catches every 422 whatever its code.
"""

from __future__ import annotations

from typing import Any, Dict, Optional, Type


class GatewayError(Exception):
    """An error answered by the gateway (or a transport failure, status 0)."""

    def __init__(
        self,
        code: str,
        status: int,
        message: str,
        details: Optional[Dict[str, Any]] = None,
        method: str = "",
        path: str = "",
    ) -> None:
        super().__init__(f"{method} {path}: {status} {code}: {message}".strip())
        self.code = code
        self.status = status
        self.message = message
        self.details: Dict[str, Any] = dict(details or {})
        self.method = method
        self.path = path


class TransportError(GatewayError):
    """No HTTP answer (connection refused, reset, timeout) or an answer that is not the API's."""


# ------------------------------------------------------------------ by HTTP status


class BadRequestError(GatewayError):
    """400: the request is malformed (schema, row width, non-finite number, unknown camera…)."""


class UnauthorizedError(GatewayError):
    """401: missing or wrong bearer token."""


class ForbiddenError(GatewayError):
    """403: the token or the task does not allow this call."""


class NotFoundError(GatewayError):
    """404: unknown route, frame or instrument."""


class ConflictError(GatewayError):
    """409: the episode's state forbids the call (ended, busy, e-stop…)."""


class UnprocessableError(GatewayError):
    """422: well formed but refused (dt, unsafe chunk, IK…)."""


class ServerError(GatewayError):
    """5xx: the gateway or its backend failed."""


# ------------------------------------------------------------------ codes an agent handles on purpose


class DtError(UnprocessableError):
    """RB_ERR_DT: dt is not a whole multiple of the control period or exceeds max_dt_s."""


class UnsafeChunkError(UnprocessableError):
    """RB_ERR_UNSAFE_CHUNK: the safety supervisor refused the chunk; nothing moved."""


class IkUnreachableError(UnprocessableError):
    """RB_ERR_IK_UNREACHABLE: no joint solution for the pose."""


class ActionTypeError(UnprocessableError):
    """RB_ERR_ACTION_TYPE: the action type is unknown or not open at this level."""


class EpisodeEndedError(ConflictError):
    """RB_ERR_EPISODE_ENDED: the episode is over; ``details`` carries the end reason."""


class BusyError(ConflictError):
    """RB_ERR_BUSY: another motion call is running."""


class EstopError(ConflictError):
    """RB_ERR_ESTOP: the e-stop is engaged."""


class MotionDisabledError(ForbiddenError):
    """RB_ERR_MOTION_DISABLED: a real bench served without --allow-motion."""


_BY_CODE: Dict[str, Type[GatewayError]] = {
    "RB_ERR_DT": DtError,
    "RB_ERR_UNSAFE_CHUNK": UnsafeChunkError,
    "RB_ERR_IK_UNREACHABLE": IkUnreachableError,
    "RB_ERR_ACTION_TYPE": ActionTypeError,
    "RB_ERR_EPISODE_ENDED": EpisodeEndedError,
    "RB_ERR_BUSY": BusyError,
    "RB_ERR_ESTOP": EstopError,
    "RB_ERR_MOTION_DISABLED": MotionDisabledError,
}

_BY_STATUS: Dict[int, Type[GatewayError]] = {
    400: BadRequestError,
    401: UnauthorizedError,
    403: ForbiddenError,
    404: NotFoundError,
    409: ConflictError,
    422: UnprocessableError,
}


def error_class(code: str, status: int) -> Type[GatewayError]:
    """The exception class for a code and status."""
    if code in _BY_CODE:
        return _BY_CODE[code]
    if status in _BY_STATUS:
        return _BY_STATUS[status]
    if status >= 500:
        return ServerError
    return GatewayError


def make_error(
    code: str, status: int, message: str, details: Optional[Dict[str, Any]], method: str, path: str
) -> GatewayError:
    return error_class(code, status)(code, status, message, details, method, path)
