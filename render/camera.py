"""Cameras: perspective, focal length in mm on a 36 x 24 mm ("35 mm") sensor, Y up, right-handed.

The body faces +Z, so the ``front`` camera stands at +Z looking towards -Z. The body's left side
is +X (facing +Z with +Y up, the body's right hand points to -X), so ``left`` stands at +X.
``three_quarter`` stands between front and left (45 degrees towards +X).

Sensor fit: the image is fitted inside the 36 x 24 mm frame. An image at least as wide as 3:2
spans the full 36 mm width; a narrower one (portrait, square) spans the full 24 mm height.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

import clothsim as cs

SENSOR_WIDTH_MM = 36.0
SENSOR_HEIGHT_MM = 24.0

# azimuth [deg] around +Y measured from +Z towards +X, elevation [deg] above the horizontal
STANDARD_VIEWS: dict[str, tuple[float, float]] = {
    "front": (0.0, 4.0),
    "three_quarter": (45.0, 8.0),
    "left": (90.0, 4.0),
    "back": (180.0, 4.0),
    "right": (270.0, 4.0),
}


def _cross(a, b) -> np.ndarray:
    """a x b of two 3-vectors, float64 (np.cross's formula without its per-call overhead: the renderer
    builds its light and contact cameras every frame)."""
    a0, a1, a2 = float(a[0]), float(a[1]), float(a[2])
    b0, b1, b2 = float(b[0]), float(b[1]), float(b[2])
    return np.array([a1 * b2 - a2 * b1, a2 * b0 - a0 * b2, a0 * b1 - a1 * b0])


def _normalize(v: np.ndarray) -> np.ndarray:
    n = np.linalg.norm(v)
    if n == 0.0:
        raise ValueError("zero-length direction")
    return v / n


@dataclass(frozen=True)
class Camera:
    """A pinhole camera. Positions in metres (world space), focal length in mm (36 x 24 mm sensor).

    Attributes:
        position: eye position [m], (3,).
        target: point looked at [m], (3,).
        up: approximate up direction, (3,); default +Y.
        focal_mm: focal length [mm]; 50 mm on the 36 mm wide sensor is the classic "normal" lens.
        near, far: clip distances [m]; ``None`` fits them to the scene when rendering.
        name: a label (view name) used for file names.
    """

    position: tuple[float, float, float]
    target: tuple[float, float, float] = (0.0, 0.0, 0.0)
    up: tuple[float, float, float] = (0.0, 1.0, 0.0)
    focal_mm: float = 50.0
    near: float | None = None
    far: float | None = None
    name: str = "camera"

    def __post_init__(self) -> None:
        for key in ("position", "target", "up"):
            value = np.asarray(getattr(self, key), dtype=np.float64)
            if value.shape != (3,) or not np.isfinite(value).all():
                raise cs.InputError(f"camera {self.name!r}: {key} must be 3 finite numbers [m], got {getattr(self, key)!r}")
            object.__setattr__(self, key, tuple(float(x) for x in value))
        if not (math.isfinite(self.focal_mm) and self.focal_mm > 0):
            raise cs.InputError(f"camera {self.name!r}: focal_mm must be > 0 mm, got {self.focal_mm!r}")
        if all(abs(p - t) <= 1e-8 + 1e-5 * abs(t) for p, t in zip(self.position, self.target)):   # np.allclose
            raise cs.InputError(f"camera {self.name!r}: position and target coincide at {self.position}")
        fwd = np.subtract(self.target, self.position)
        if np.linalg.norm(_cross(fwd, self.up)) < 1e-9 * np.linalg.norm(fwd) * np.linalg.norm(self.up):
            raise cs.InputError(f"camera {self.name!r}: up {self.up} is parallel to the view direction")

    # ------------------------------------------------------------------ geometry
    def basis(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(right, up, back) unit vectors of the camera frame; the camera looks along -back."""
        back = _normalize(np.subtract(self.position, self.target))
        right = _normalize(_cross(self.up, back))
        up = _cross(back, right)
        return right, up, back

    def view_matrix(self) -> np.ndarray:
        """World -> camera (OpenGL: camera looks down -Z), (4, 4) float64, column vectors."""
        right, up, back = self.basis()
        m = np.eye(4)
        m[0, :3], m[1, :3], m[2, :3] = right, up, back
        m[:3, 3] = -m[:3, :3] @ np.asarray(self.position)
        return m

    def pose_matrix(self) -> np.ndarray:
        """Camera -> world (the inverse of :meth:`view_matrix`), as pyrender/glTF camera nodes use."""
        return np.linalg.inv(self.view_matrix())

    def fov(self, aspect: float) -> tuple[float, float]:
        """(horizontal, vertical) full field of view [rad] for an image of width/height ``aspect``."""
        if aspect >= SENSOR_WIDTH_MM / SENSOR_HEIGHT_MM:
            half_w = 0.5 * SENSOR_WIDTH_MM
            half_h = half_w / aspect
        else:
            half_h = 0.5 * SENSOR_HEIGHT_MM
            half_w = half_h * aspect
        return 2.0 * math.atan(half_w / self.focal_mm), 2.0 * math.atan(half_h / self.focal_mm)

    def projection_matrix(self, aspect: float, near: float, far: float) -> np.ndarray:
        """OpenGL perspective projection (clip z in [-w, w]), (4, 4) float64."""
        _, fov_y = self.fov(aspect)
        f = 1.0 / math.tan(0.5 * fov_y)
        m = np.zeros((4, 4))
        m[0, 0] = f / aspect
        m[1, 1] = f
        m[2, 2] = (far + near) / (near - far)
        m[2, 3] = 2.0 * far * near / (near - far)
        m[3, 2] = -1.0
        return m

    def to_dict(self, aspect: float | None = None) -> dict:
        d = {"name": self.name, "position_m": list(self.position), "target_m": list(self.target),
             "up": list(self.up), "focal_mm": self.focal_mm,
             "sensor_mm": [SENSOR_WIDTH_MM, SENSOR_HEIGHT_MM]}
        if aspect is not None:
            fx, fy = self.fov(aspect)
            d["fov_deg"] = [math.degrees(fx), math.degrees(fy)]
        return d


def view_direction(azimuth_deg: float, elevation_deg: float) -> np.ndarray:
    """Unit vector from the target towards the camera (azimuth from +Z towards +X, about +Y)."""
    az, el = math.radians(azimuth_deg), math.radians(elevation_deg)
    return np.array([math.sin(az) * math.cos(el), math.sin(el), math.cos(az) * math.cos(el)])


def fit_distance(points: np.ndarray, target: np.ndarray, direction: np.ndarray, up: np.ndarray,
                 focal_mm: float, aspect: float, margin: float) -> float:
    """Smallest camera distance along ``direction`` from ``target`` at which every point projects
    inside the image shrunk by ``margin`` (a fraction of the half-size on each side).

    For a point at camera-frame offsets (x, y, z) (z towards the camera) the camera at distance D
    sees it at x / (D - z); it fits when |x| <= tan(fov_x / 2) (1 - margin) (D - z), so
    D >= z + |x| / (tan(fov_x / 2) (1 - margin)), likewise for y; D is the largest such bound.
    """
    cam = Camera(position=tuple(target + direction), target=tuple(target), up=tuple(up), focal_mm=focal_mm)
    right, cup, back = cam.basis()
    fx, fy = cam.fov(aspect)
    tx, ty = math.tan(0.5 * fx) * (1.0 - margin), math.tan(0.5 * fy) * (1.0 - margin)
    rel = np.asarray(points, dtype=np.float64) - target
    x, y, z = rel @ right, rel @ cup, rel @ back
    d = np.maximum(z + np.abs(x) / tx, z + np.abs(y) / ty)
    return float(max(d.max(), 1e-3 + z.max()))


def bounds_corners(lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
    """The 8 corners of an axis-aligned box, (8, 3)."""
    return np.array([[x, y, z] for x in (lo[0], hi[0]) for y in (lo[1], hi[1]) for z in (lo[2], hi[2])])


def framed_camera(lo, hi, *, azimuth_deg: float = 0.0, elevation_deg: float = 4.0, focal_mm: float = 70.0,
                  aspect: float = 1.0, margin: float = 0.08, name: str = "camera",
                  points: np.ndarray | None = None) -> Camera:
    """A camera aimed at the centre of the box [lo, hi] that fits it (or ``points``) with ``margin``.

    Args:
        lo, hi: bounds [m], (3,) each.
        azimuth_deg, elevation_deg: where the camera stands (see :func:`view_direction`).
        focal_mm: focal length [mm] (70 mm: a mild portrait lens, little perspective distortion).
        aspect: image width / height.
        margin: fraction of the half-image kept free on each side, in [0, 0.9].
    """
    lo, hi = np.asarray(lo, dtype=np.float64), np.asarray(hi, dtype=np.float64)
    if not (0.0 <= margin <= 0.9):
        raise cs.InputError(f"framing margin must lie in [0, 0.9], got {margin}")
    target = 0.5 * (lo + hi)
    direction = view_direction(azimuth_deg, elevation_deg)
    pts = bounds_corners(lo, hi) if points is None else points
    up = np.array([0.0, 1.0, 0.0])
    dist = fit_distance(pts, target, direction, up, focal_mm, aspect, margin)
    return Camera(position=tuple(target + dist * direction), target=tuple(target), focal_mm=focal_mm, name=name)


def standard_view(name: str, lo, hi, *, aspect: float, focal_mm: float = 70.0, margin: float = 0.08) -> Camera:
    """The named standard view (``front``, ``back``, ``left``, ``right``, ``three_quarter``) framed to [lo, hi]."""
    if name not in STANDARD_VIEWS:
        raise cs.InputError(f"unknown view {name!r}; expected one of {', '.join(STANDARD_VIEWS)}")
    az, el = STANDARD_VIEWS[name]
    return framed_camera(lo, hi, azimuth_deg=az, elevation_deg=el, focal_mm=focal_mm, aspect=aspect,
                         margin=margin, name=name)
