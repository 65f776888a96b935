"""The soft studio rig: key, fill, rim lights placed relative to the camera, and a gradient dome.

Lights move with the camera (a photographer's rig, the product turns on a turntable), so every
standard view is lit the same way. Radiances are linear; at the default exposure (0.8) a white
fabric facing the key keeps its folds below the tone map's highlight compression.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from .camera import Camera


@dataclass(frozen=True)
class Light:
    """A directional light: ``azimuth_deg`` around +Y relative to the camera's azimuth (positive =
    towards camera-left), ``elevation_deg`` above the horizon, linear RGB ``radiance``."""

    azimuth_deg: float
    elevation_deg: float
    radiance: tuple[float, float, float]

    def direction(self, camera: Camera) -> np.ndarray:
        """Unit vector from the scene towards the light [world]."""
        back = np.subtract(camera.position, camera.target)
        cam_az = math.atan2(back[0], back[2])
        az = cam_az + math.radians(self.azimuth_deg)
        el = math.radians(self.elevation_deg)
        return np.array([math.sin(az) * math.cos(el), math.sin(el), math.cos(az) * math.cos(el)])


@dataclass(frozen=True)
class StudioRig:
    """Key (shadowed), fill, rim and a gradient environment dome (linear radiance top/horizon/bottom)."""

    key: Light = Light(-40.0, 38.0, (3.3, 3.22, 3.1))
    fill: Light = Light(60.0, 15.0, (0.42, 0.44, 0.47))
    rim: Light = Light(-155.0, 28.0, (1.5, 1.5, 1.5))
    env_top: tuple[float, float, float] = (1.0, 1.0, 1.02)
    env_horizon: tuple[float, float, float] = (0.55, 0.55, 0.56)
    env_bottom: tuple[float, float, float] = (0.24, 0.235, 0.23)
    env_intensity: float = 0.8
    key_angle_deg: float = 9.0   # apparent size of the key softbox: sets the shadow penumbra

    def to_dict(self) -> dict:
        return {k: (v.__dict__ if isinstance(v, Light) else v) for k, v in self.__dict__.items()}
