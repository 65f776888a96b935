"""Orbit camera controller: orbit, pan, zoom around a target, frame the garment, standard views.

State: ``target`` [m], ``azimuth`` [deg] around +Y from +Z towards +X, ``elevation`` [deg] above the
horizon, ``distance`` [m], ``focal_mm`` (36 mm sensor): the same conventions as
:mod:`render.camera` (so a standard view here is the catalog's standard view).
"""

from __future__ import annotations

import math

import numpy as np

from ..camera import STANDARD_VIEWS, Camera, bounds_corners, fit_distance, view_direction

ORBIT_DEG_PER_PX = 0.3
ZOOM_PER_NOTCH = 0.9          # one scroll notch towards the target: distance x 0.9
ELEVATION_LIMIT = 89.0
# number keys -> standard views (also in the help panel and the README)
VIEW_KEYS = {"1": "front", "2": "three_quarter", "3": "left", "4": "back", "5": "right"}


class OrbitCamera:
    """An orbiting camera; :meth:`camera` gives the :class:`render.Camera` for the Renderer."""

    def __init__(self, focal_mm: float = 50.0) -> None:
        self.target = np.array([0.0, 1.0, 0.0])
        self.azimuth = 30.0
        self.elevation = 10.0
        self.distance = 3.0
        self.focal_mm = focal_mm
        self.view_name = "custom"

    def direction(self) -> np.ndarray:
        return view_direction(self.azimuth, self.elevation)

    def camera(self) -> Camera:
        eye = self.target + self.distance * self.direction()
        return Camera(position=tuple(eye), target=tuple(self.target), focal_mm=self.focal_mm, name=self.view_name)

    # ------------------------------------------------------------------ mouse
    def orbit(self, dx_px: float, dy_px: float) -> None:
        """Drag by (dx, dy) pixels: right drags turn the camera left around the target, up lowers it."""
        self.azimuth = (self.azimuth - ORBIT_DEG_PER_PX * dx_px) % 360.0
        self.elevation = float(np.clip(self.elevation + ORBIT_DEG_PER_PX * dy_px, -ELEVATION_LIMIT, ELEVATION_LIMIT))
        self.view_name = "custom"

    def pan(self, dx_px: float, dy_px: float, viewport: tuple[int, int]) -> None:
        """Move the target in the view plane so the point under the cursor follows it."""
        cam = self.camera()
        right, up, _ = cam.basis()
        viewport_w, viewport_h = viewport
        _, fov_y = cam.fov(viewport_w / max(viewport_h, 1))
        m_per_px = 2.0 * self.distance * math.tan(0.5 * fov_y) / max(viewport_h, 1)
        self.target = self.target - right * dx_px * m_per_px + up * dy_px * m_per_px
        self.view_name = "custom"

    def zoom(self, notches: float) -> None:
        """Scroll: positive notches move towards the target."""
        self.distance = float(np.clip(self.distance * ZOOM_PER_NOTCH ** notches, 0.05, 100.0))

    # ------------------------------------------------------------------ framing
    def frame(self, lo, hi, aspect: float, margin: float = 0.1) -> None:
        """Aim at the centre of the box [lo, hi] and back off until it fits (keeps the direction)."""
        lo, hi = np.asarray(lo, float), np.asarray(hi, float)
        self.target = 0.5 * (lo + hi)
        self.distance = fit_distance(bounds_corners(lo, hi), self.target, self.direction(), np.array([0.0, 1.0, 0.0]),
                                     self.focal_mm, aspect, margin)

    def standard(self, name: str, lo, hi, aspect: float) -> None:
        """One of :data:`render.camera.STANDARD_VIEWS`, framed to [lo, hi]."""
        self.azimuth, self.elevation = STANDARD_VIEWS[name]
        self.frame(lo, hi, aspect)
        self.view_name = name
