"""Camera models from ``GET /v1/spec``: project base-frame points to pixels and back.

Conventions (those of the spec's ``world.camera_convention`` and the simulator's renderer):

- OpenCV pinhole: camera frame x right, y down, z forward (optical axis); pixel centres are at
  integer coordinates, ``u = fx·x_d + cx``, ``v = fy·y_d + cy``.
- ``distortion`` is OpenCV's plumb-bob / radial-tangential model ``k1 k2 p1 p2 k3`` applied to
  the normalised coordinates ``(x, y) = (X/Z, Y/Z)``:
  ``r² = x²+y²``, ``radial = 1 + k1 r² + k2 r⁴ + k3 r⁶``,
  ``x_d = x·radial + 2 p1 x y + p2 (r² + 2x²)``, ``y_d = y·radial + p1 (r² + 2y²) + 2 p2 x y``.
  Back-projection inverts it by fixed-point iteration.
- ``pose`` is the camera optical frame in ``frame``: ``world←camera`` for ``frame: "world"``,
  ``tool←camera`` for ``frame: "tool"`` (a wrist camera; it moves with the tool, so its
  base-frame pose needs the tool pose ``base←tool``, e.g. ``client.fk(q)["tool"]`` at the
  frame's capture time). The robot base is ``robot.base_pose`` (``world←base``); FK, IK and
  ``ee_pose`` use base-frame coordinates, and so do these helpers.
- Depth images hold z-depth (the camera-frame Z of the surface, not the ray length);
  the client converts them to metres with NaN where there was no return.
"""

from __future__ import annotations

import math
from typing import Any, Mapping, Optional, Sequence, Tuple

from .geometry import Transform, Vec3, as_transform

try:  # optional: vectorised variants
    import numpy as _np
except ImportError:  # pragma: no cover - exercised when numpy is absent
    _np = None


class Camera:
    """One camera of the spec, with the robot base pose needed to reach the base frame."""

    def __init__(self, spec_camera: Mapping[str, Any], base_pose: Mapping[str, Any]) -> None:
        self.name: str = spec_camera["name"]
        self.width: int = int(spec_camera["width"])
        self.height: int = int(spec_camera["height"])
        self.fx = float(spec_camera["fx"])
        self.fy = float(spec_camera["fy"])
        self.cx = float(spec_camera["cx"])
        self.cy = float(spec_camera["cy"])
        d = [float(v) for v in spec_camera.get("distortion", [])]
        if any(v != 0 for v in d[5:]):
            raise ValueError(f"camera {self.name}: only the k1 k2 p1 p2 k3 distortion model is supported")
        d = (d + [0.0] * 5)[:5]
        self.k1, self.k2, self.p1, self.p2, self.k3 = d
        self.frame: str = spec_camera["frame"]
        self.pose = as_transform(spec_camera["pose"])
        self.has_depth = bool(spec_camera.get("depth", False))
        self._base_from_world = ~as_transform(base_pose)

    # -------------------------------------------------------------- extrinsics

    @property
    def moves_with_tool(self) -> bool:
        return self.frame == "tool"

    def base_from_camera(self, tool_pose=None) -> Transform:
        """``base←camera``. ``tool_pose`` (``base←tool``) is required for a tool-mounted camera."""
        if self.frame == "world":
            return self._base_from_world @ self.pose
        if tool_pose is None:
            raise ValueError(f"camera {self.name} rides on the tool: pass tool_pose (base←tool, from fk)")
        return as_transform(tool_pose) @ self.pose

    # -------------------------------------------------------------- lens model

    def distort(self, x: float, y: float) -> Tuple[float, float]:
        """Normalised ideal → normalised distorted coordinates."""
        r2 = x * x + y * y
        radial = 1 + r2 * (self.k1 + r2 * (self.k2 + r2 * self.k3))
        return (
            x * radial + 2 * self.p1 * x * y + self.p2 * (r2 + 2 * x * x),
            y * radial + self.p1 * (r2 + 2 * y * y) + 2 * self.p2 * x * y,
        )

    def undistort(self, xd: float, yd: float, tol: float = 1e-9) -> Optional[Tuple[float, float]]:
        """Invert ``distort``; None when the iteration does not reproduce the input within ``tol``."""
        x, y = xd, yd
        for _ in range(50):
            r2 = x * x + y * y
            radial = 1 + r2 * (self.k1 + r2 * (self.k2 + r2 * self.k3))
            if not radial > 0:
                return None
            dx = 2 * self.p1 * x * y + self.p2 * (r2 + 2 * x * x)
            dy = self.p1 * (r2 + 2 * y * y) + 2 * self.p2 * x * y
            x, y = (xd - dx) / radial, (yd - dy) / radial
        ex, ey = self.distort(x, y)
        if math.hypot(ex - xd, ey - yd) > tol or not math.isfinite(x + y):
            return None
        return (x, y)

    # -------------------------------------------------------------- points

    def project_camera_point(self, p_cam: Sequence[float]) -> Optional[Tuple[float, float, float]]:
        """Camera-frame point → ``(u, v, z)``; None behind the camera."""
        X, Y, Z = p_cam
        if not Z > 0:
            return None
        xd, yd = self.distort(X / Z, Y / Z)
        return (self.fx * xd + self.cx, self.fy * yd + self.cy, Z)

    def project(self, p_base: Sequence[float], tool_pose=None) -> Optional[Tuple[float, float, float]]:
        """Base-frame point → pixel ``(u, v)`` and its z-depth in metres; None behind the camera.
        The pixel may lie outside the image; check with ``in_image``."""
        cam_from_base = ~self.base_from_camera(tool_pose)
        return self.project_camera_point(cam_from_base.apply(p_base))

    def in_image(self, u: float, v: float) -> bool:
        return -0.5 <= u < self.width - 0.5 and -0.5 <= v < self.height - 0.5

    def ray(self, u: float, v: float) -> Optional[Vec3]:
        """Camera-frame ray through pixel (u, v), scaled to z = 1; None if not invertible."""
        n = self.undistort((u - self.cx) / self.fx, (v - self.cy) / self.fy)
        return None if n is None else (n[0], n[1], 1.0)

    def back_project(self, u: float, v: float, depth_m: float, tool_pose=None) -> Optional[Vec3]:
        """Pixel (u, v) with z-depth ``depth_m`` → base-frame point; None for no return (0/NaN)."""
        if depth_m is None or not depth_m > 0 or not math.isfinite(depth_m):
            return None
        r = self.ray(u, v)
        if r is None:
            return None
        return self.base_from_camera(tool_pose).apply((r[0] * depth_m, r[1] * depth_m, depth_m))

    # -------------------------------------------------------------- vectorised (numpy)

    def back_project_pixels(self, us, vs, depths_m, tool_pose=None):
        """Vectorised ``back_project`` (needs numpy): arrays of u, v, z-depth (m) → (N, 3) base-frame
        points; rows with no return or a non-invertible pixel are NaN."""
        np = _require_numpy()
        u = np.asarray(us, dtype=float).ravel()
        v = np.asarray(vs, dtype=float).ravel()
        z = np.asarray(depths_m, dtype=float).ravel()
        xd = (u - self.cx) / self.fx
        yd = (v - self.cy) / self.fy
        x, y = xd.copy(), yd.copy()
        ok = np.ones_like(x, dtype=bool)
        if any((self.k1, self.k2, self.p1, self.p2, self.k3)):
            for _ in range(50):
                r2 = x * x + y * y
                radial = 1 + r2 * (self.k1 + r2 * (self.k2 + r2 * self.k3))
                ok &= radial > 0
                radial = np.where(radial > 0, radial, 1.0)
                dx = 2 * self.p1 * x * y + self.p2 * (r2 + 2 * x * x)
                dy = self.p1 * (r2 + 2 * y * y) + 2 * self.p2 * x * y
                x, y = (xd - dx) / radial, (yd - dy) / radial
            r2 = x * x + y * y
            radial = 1 + r2 * (self.k1 + r2 * (self.k2 + r2 * self.k3))
            ex = x * radial + 2 * self.p1 * x * y + self.p2 * (r2 + 2 * x * x)
            ey = y * radial + self.p1 * (r2 + 2 * y * y) + 2 * self.p2 * x * y
            ok &= np.hypot(ex - xd, ey - yd) <= 1e-9
        ok &= np.isfinite(z) & (z > 0)
        pc = np.stack([x * z, y * z, z], axis=1)
        T = self.base_from_camera(tool_pose)
        out = pc @ np.asarray(T.R).T + np.asarray(T.t)
        out[~ok] = np.nan
        return out

    def back_project_depth(self, depth_m, mask=None, tool_pose=None):
        """Every pixel of a depth image (H×W metres, NaN = no return) where ``mask`` is true →
        ``(points (N, 3) base frame, pixels (N, 2) as u, v)``; pixels without a return are dropped.
        Needs numpy."""
        np = _require_numpy()
        d = np.asarray(depth_m, dtype=float)
        sel = np.isfinite(d) & (d > 0)
        if mask is not None:
            sel &= np.asarray(mask, dtype=bool)
        vs, us = np.nonzero(sel)
        pts = self.back_project_pixels(us, vs, d[vs, us], tool_pose)
        keep = np.isfinite(pts[:, 0])
        return pts[keep], np.stack([us[keep], vs[keep]], axis=1)

    def project_points(self, points_base, tool_pose=None):
        """Vectorised ``project`` (needs numpy): (N, 3) base-frame points → (N, 3) of u, v, z;
        points behind the camera give NaN."""
        np = _require_numpy()
        P = np.asarray(points_base, dtype=float).reshape(-1, 3)
        T = ~self.base_from_camera(tool_pose)
        pc = P @ np.asarray(T.R).T + np.asarray(T.t)
        Z = pc[:, 2]
        with np.errstate(divide="ignore", invalid="ignore"):
            x = np.where(Z > 0, pc[:, 0] / Z, np.nan)
            y = np.where(Z > 0, pc[:, 1] / Z, np.nan)
        r2 = x * x + y * y
        radial = 1 + r2 * (self.k1 + r2 * (self.k2 + r2 * self.k3))
        xd = x * radial + 2 * self.p1 * x * y + self.p2 * (r2 + 2 * x * x)
        yd = y * radial + self.p1 * (r2 + 2 * y * y) + 2 * self.p2 * x * y
        return np.stack([self.fx * xd + self.cx, self.fy * yd + self.cy, np.where(Z > 0, Z, np.nan)], axis=1)


def _require_numpy():
    if _np is None:
        raise ImportError("this helper needs numpy: pip install 'robot-gateway[numpy]'")
    return _np
