"""Rigid transforms in plain Python (no numpy needed).

Poses travel in the API's shape, ``{"xyz": [x, y, z], "quat_xyzw": [x, y, z, w]}``. A
``Transform`` is the same pose as a rotation matrix and a translation; ``a @ b`` composes
(``a·b``: first ``b``, then ``a``), ``~a`` inverts, ``a.apply(p)`` maps a point. Naming follows
the frames: ``base_from_camera`` maps camera-frame coordinates to base-frame coordinates.
"""

from __future__ import annotations

import math
from typing import Mapping, Sequence, Tuple

Vec3 = Tuple[float, float, float]
Mat3 = Tuple[Vec3, Vec3, Vec3]


def quat_to_matrix(q: Sequence[float]) -> Mat3:
    """Rotation matrix (row-major) of a quaternion x y z w; normalised first."""
    x, y, z, w = (float(v) for v in q)
    n = math.sqrt(x * x + y * y + z * z + w * w)
    if not n > 0 or not math.isfinite(n):
        raise ValueError(f"quaternion {list(q)} has no direction")
    x, y, z, w = x / n, y / n, z / n, w / n
    return (
        (1 - 2 * (y * y + z * z), 2 * (x * y - z * w), 2 * (x * z + y * w)),
        (2 * (x * y + z * w), 1 - 2 * (x * x + z * z), 2 * (y * z - x * w)),
        (2 * (x * z - y * w), 2 * (y * z + x * w), 1 - 2 * (x * x + y * y)),
    )


def matrix_to_quat(m: Sequence[Sequence[float]]) -> Tuple[float, float, float, float]:
    """Quaternion x y z w (w ≥ 0) of a rotation matrix."""
    tr = m[0][0] + m[1][1] + m[2][2]
    if tr > 0:
        s = math.sqrt(tr + 1.0) * 2
        w, x, y, z = 0.25 * s, (m[2][1] - m[1][2]) / s, (m[0][2] - m[2][0]) / s, (m[1][0] - m[0][1]) / s
    elif m[0][0] > m[1][1] and m[0][0] > m[2][2]:
        s = math.sqrt(1.0 + m[0][0] - m[1][1] - m[2][2]) * 2
        w, x, y, z = (m[2][1] - m[1][2]) / s, 0.25 * s, (m[0][1] + m[1][0]) / s, (m[0][2] + m[2][0]) / s
    elif m[1][1] > m[2][2]:
        s = math.sqrt(1.0 + m[1][1] - m[0][0] - m[2][2]) * 2
        w, x, y, z = (m[0][2] - m[2][0]) / s, (m[0][1] + m[1][0]) / s, 0.25 * s, (m[1][2] + m[2][1]) / s
    else:
        s = math.sqrt(1.0 + m[2][2] - m[0][0] - m[1][1]) * 2
        w, x, y, z = (m[1][0] - m[0][1]) / s, (m[0][2] + m[2][0]) / s, (m[1][2] + m[2][1]) / s, 0.25 * s
    if w < 0:
        x, y, z, w = -x, -y, -z, -w
    return (x, y, z, w)


class Transform:
    """A rigid transform: ``p' = R p + t``."""

    __slots__ = ("R", "t")

    def __init__(self, R: Sequence[Sequence[float]], t: Sequence[float]) -> None:
        self.R: Mat3 = tuple(tuple(float(v) for v in row) for row in R)  # type: ignore[assignment]
        self.t: Vec3 = (float(t[0]), float(t[1]), float(t[2]))

    @staticmethod
    def identity() -> "Transform":
        return Transform(((1, 0, 0), (0, 1, 0), (0, 0, 1)), (0, 0, 0))

    @staticmethod
    def from_pose(pose: Mapping[str, Sequence[float]]) -> "Transform":
        """From an API pose ``{"xyz", "quat_xyzw"}``."""
        return Transform(quat_to_matrix(pose["quat_xyzw"]), pose["xyz"])

    def to_pose(self) -> dict:
        return {"xyz": list(self.t), "quat_xyzw": list(matrix_to_quat(self.R))}

    def apply(self, p: Sequence[float]) -> Vec3:
        R, t = self.R, self.t
        return (
            R[0][0] * p[0] + R[0][1] * p[1] + R[0][2] * p[2] + t[0],
            R[1][0] * p[0] + R[1][1] * p[1] + R[1][2] * p[2] + t[1],
            R[2][0] * p[0] + R[2][1] * p[1] + R[2][2] * p[2] + t[2],
        )

    def rotate(self, v: Sequence[float]) -> Vec3:
        R = self.R
        return (
            R[0][0] * v[0] + R[0][1] * v[1] + R[0][2] * v[2],
            R[1][0] * v[0] + R[1][1] * v[1] + R[1][2] * v[2],
            R[2][0] * v[0] + R[2][1] * v[1] + R[2][2] * v[2],
        )

    def __matmul__(self, other: "Transform") -> "Transform":
        A, B = self.R, other.R
        R = tuple(tuple(sum(A[i][k] * B[k][j] for k in range(3)) for j in range(3)) for i in range(3))
        return Transform(R, self.apply(other.t))

    def __invert__(self) -> "Transform":
        Rt = tuple(tuple(self.R[j][i] for j in range(3)) for i in range(3))
        t = self.t
        return Transform(Rt, tuple(-sum(Rt[i][k] * t[k] for k in range(3)) for i in range(3)))

    def __repr__(self) -> str:
        return f"Transform(R={self.R}, t={self.t})"


def as_transform(pose) -> Transform:
    """Accept a Transform or an API pose dict."""
    return pose if isinstance(pose, Transform) else Transform.from_pose(pose)
