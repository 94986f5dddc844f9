"""Python client of the robot-gateway Standard API.

Stdlib only at its core; numpy arrays when numpy is installed (``pip install './clients/python[numpy]'``).
See ``Client`` for the calls, ``Camera`` for projection and back-projection, ``errors`` for the
typed exceptions.
"""

from .astream import AsyncStream
from .camera import Camera
from .client import Client, DepthImage, Frame, FramedResponse, Operator, Response, Video
from .errors import (
    ActionTypeError,
    BadRequestError,
    BusyError,
    ConflictError,
    DtError,
    EpisodeEndedError,
    EstopError,
    ForbiddenError,
    GatewayError,
    IkUnreachableError,
    MotionDisabledError,
    NotFoundError,
    ServerError,
    TransportError,
    UnauthorizedError,
    UnprocessableError,
    UnsafeChunkError,
)
from .geometry import Transform, matrix_to_quat, quat_to_matrix
from .png import Image, PngError, decode_png
from .stream import Stream, StreamDependencyError

__all__ = [
    "ActionTypeError", "AsyncStream", "BadRequestError", "BusyError", "Camera", "Client", "ConflictError", "DepthImage",
    "DtError", "EpisodeEndedError", "EstopError", "ForbiddenError", "Frame", "FramedResponse", "GatewayError",
    "IkUnreachableError", "Image", "MotionDisabledError", "NotFoundError", "Operator", "PngError", "Response",
    "ServerError", "Stream", "StreamDependencyError", "Transform", "TransportError", "UnauthorizedError",
    "UnprocessableError", "UnsafeChunkError", "Video",
    "decode_png", "matrix_to_quat", "quat_to_matrix",
]
__version__ = "0.1.0"
