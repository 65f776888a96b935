"""Scene files: load (validate) a TOML scene, build it into a simulator, drape it and check the result.

    import clothsim as cs
    scene = cs.load_scene("scenes/tshirt.toml")        # frozen dataclasses, no Warp, no GL
    from clothsim.scene import Drape
    with Drape(scene, level="coarsest") as drape:      # garments sewn on the avatar (Warp)
        result = drape.run()                           # steps until settled or the frame cap
    print(result.passed, result.garments[0].worst_penetration_m)

The format is documented in ``scenes/README.md``.
"""

from .loader import load_scene
from .schema import (AvatarKind, AvatarSpec, CameraSpec, CheckSpec, GarmentSpec, LightKind, LightSpec, OutputSpec,
                     PoseSpec, Scene, SimulationSpec, View, parse_scene)

__all__ = ["load_scene", "parse_scene", "Scene", "AvatarSpec", "AvatarKind", "GarmentSpec", "PoseSpec",
           "SimulationSpec", "CheckSpec", "CameraSpec", "View", "LightSpec", "LightKind", "OutputSpec",
           "Drape", "DrapeResult"]


def __getattr__(name):  # Drape needs Warp; importing the scene schema must not
    if name in ("Drape", "DrapeResult", "GarmentReport"):
        from . import drape

        return getattr(drape, name)
    raise AttributeError(f"module 'clothsim.scene' has no attribute {name!r}")
