"""Lights: the soft studio rig (camera-relative, the default) and scene lights fixed in the world.

Both resolve, for one camera, into a :class:`LightSet`: world-space punctual lights (directional,
point, spot), the one that casts the shadow map, and an environment dome. The shaders take that.

Units. The shading is ``BRDF * E * N.L`` with E the light's illuminance at the surface, in the same
units for the rig and the scene: a directional light of intensity ``I`` gives ``E = I * colour``;
point and spot lights give ``E = I * colour / d^2`` (``I`` in candela at distance ``d`` [m]), as
KHR_lights_punctual defines them. The studio key is 3.3 and the default exposure 0.8 keeps a white
fabric facing it below the tone map's highlight compression, so a scene's directional key of
intensity ~3 looks like the studio key. Ambient lights add a uniform dome of radiance ``I * colour``.

The rig's lights move with the camera (a photographer's rig, the product turns on a turntable), so
every standard view is lit the same way; scene lights stay where the scene puts them.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

import clothsim as cs

from .camera import Camera

LIGHT_KINDS = ("directional", "point", "spot", "ambient")
_KIND_CODE = {"directional": 0.0, "point": 1.0, "spot": 1.0}


@dataclass(frozen=True)
class LightSet:
    """Lights resolved for one view (world space), as the shaders take them.

    Attributes:
        vec: (L, 4) float32: directional ``(unit direction towards the light, 0)``; point/spot
            ``(position [m], 1)``.
        radiance: (L, 3) float32 linear: illuminance for directional lights, intensity [cd] x colour
            for point/spot (divided by d^2 in the shader).
        axis: (L, 3) float32: a spot's axis (the way its light travels); unused otherwise.
        cone: (L, 2) float32: spot attenuation ``clamp(cos(angle) * scale + offset, 0, 1)^2``
            (KHR_lights_punctual); (0, 1) = none.
        shadow: True when light 0 is directional and casts the shadow map.
        env_top, env_horizon, env_bottom: linear radiance of the dome; env_intensity scales it.
        key_angle_deg: apparent size of the shadowed light: sets the shadow penumbra.
    """

    vec: np.ndarray
    radiance: np.ndarray
    axis: np.ndarray
    cone: np.ndarray
    shadow: bool
    env_top: tuple[float, float, float]
    env_horizon: tuple[float, float, float]
    env_bottom: tuple[float, float, float]
    env_intensity: float
    key_angle_deg: float

    @property
    def count(self) -> int:
        return len(self.vec)

    @property
    def shadow_dir(self) -> np.ndarray | None:
        """Unit vector towards the shadow-casting light, or None."""
        return np.asarray(self.vec[0, :3], np.float64) if self.shadow else None


def _light_set(entries, shadow: bool, env, env_intensity: float, key_angle_deg: float) -> LightSet:
    n = len(entries)
    vec = np.zeros((n, 4), np.float32)
    rad = np.zeros((n, 3), np.float32)
    axis = np.zeros((n, 3), np.float32)
    cone = np.tile(np.array([0.0, 1.0], np.float32), (n, 1))
    for i, e in enumerate(entries):
        vec[i] = e["vec"]
        rad[i] = e["radiance"]
        if "axis" in e:
            axis[i] = e["axis"]
            cone[i] = e["cone"]
    return LightSet(vec, rad, axis, cone, bool(shadow), tuple(env[0]), tuple(env[1]), tuple(env[2]),
                    float(env_intensity), float(key_angle_deg))


@dataclass(frozen=True)
class Light:
    """A directional studio light: ``azimuth_deg`` around +Y relative to the camera's azimuth
    (positive = towards camera-left), ``elevation_deg`` above the horizon, linear RGB ``radiance``
    (illuminance, see the module doc)."""

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

    def resolve(self, camera: Camera) -> LightSet:
        """The rig placed for ``camera``: key (light 0, shadowed), fill, rim."""
        entries = [{"vec": (*light.direction(camera), 0.0), "radiance": light.radiance}
                   for light in (self.key, self.fill, self.rim)]
        return _light_set(entries, True, (self.env_top, self.env_horizon, self.env_bottom),
                          self.env_intensity, self.key_angle_deg)

    def to_dict(self) -> dict:
        return {"kind": "studio", **{k: (v.__dict__ if isinstance(v, Light) else v) for k, v in self.__dict__.items()}}


@dataclass(frozen=True)
class SceneLight:
    """One light fixed in the world (a scene file's ``[[lights]]`` entry).

    Attributes:
        kind: "directional", "point", "spot" or "ambient".
        intensity: >= 0; lux for directional/ambient, candela for point/spot (see the module doc).
        color: linear RGB in [0, 1].
        direction: the way the light travels (directional, spot), any non-zero length.
        position: [m] (point, spot).
        inner_cone_deg, outer_cone_deg: a spot's full-intensity and cut-off half-angles [degrees].
        cast_shadows: True/False; None = the default (the first directional light casts the shadow).
        name: label.

    Validated by :class:`SceneLights`, whose errors name the light's index and key.
    """

    kind: str
    intensity: float = 1.0
    color: tuple[float, float, float] = (1.0, 1.0, 1.0)
    direction: tuple[float, float, float] | None = None
    position: tuple[float, float, float] | None = None
    inner_cone_deg: float = 0.0
    outer_cone_deg: float = 45.0
    cast_shadows: bool | None = None
    name: str = ""

    def check(self, where: str) -> None:
        """Raise InputError naming ``where`` (e.g. ``lights[2]``) and the key for a bad entry."""
        def bad(key, msg):
            return cs.InputError(f"{where}{f' ({self.name!r})' if self.name else ''}.{key}: {msg}")

        kind = self.kind.value if hasattr(self.kind, "value") else self.kind
        if kind not in LIGHT_KINDS:
            raise bad("kind", f"expected one of {', '.join(LIGHT_KINDS)}, got {kind!r}")
        i = self.intensity
        if isinstance(i, bool) or not isinstance(i, (int, float, np.floating)) or not math.isfinite(i) or i < 0:
            unit = "cd" if kind in ("point", "spot") else "lux"
            raise bad("intensity", f"expected a finite number >= 0 [{unit}], got {i!r}")
        c = np.asarray(self.color, dtype=np.float64)
        if c.shape != (3,) or not np.isfinite(c).all() or (c < 0).any() or (c > 1).any():
            raise bad("color", f"expected 3 linear RGB numbers in [0, 1], got {self.color!r}")
        needs = {"directional": ("direction",), "point": ("position",), "spot": ("direction", "position"),
                 "ambient": ()}[kind]
        for key in ("direction", "position"):
            v = getattr(self, key)
            if key not in needs:
                if v is not None:
                    raise bad(key, f"a {kind} light has no {key}")
                continue
            if v is None:
                raise bad(key, f"missing (a {kind} light needs a {key}: 3 numbers)")
            a = np.asarray(v, dtype=np.float64)
            if a.shape != (3,) or not np.isfinite(a).all():
                raise bad(key, f"expected 3 finite numbers, got {v!r}")
            if key == "direction" and np.linalg.norm(a) < 1e-9:
                raise bad(key, "expected a non-zero direction vector, got [0, 0, 0]")
        if kind == "spot" and not (0.0 <= self.inner_cone_deg < self.outer_cone_deg <= 90.0):
            raise bad("outer_cone_deg", f"expected 0 <= inner_cone_deg < outer_cone_deg <= 90, got "
                                        f"{self.inner_cone_deg!r} and {self.outer_cone_deg!r}")
        if self.cast_shadows and kind != "directional":
            raise bad("cast_shadows", f"only directional lights cast shadows, not a {kind} light")

    @classmethod
    def from_spec(cls, spec) -> "SceneLight":
        """From a :class:`clothsim.scene.LightSpec` (or any object with the same attributes)."""
        kind = spec.kind.value if hasattr(spec.kind, "value") else spec.kind
        return cls(kind=kind, intensity=spec.intensity, color=tuple(spec.color), direction=spec.direction,
                   position=spec.position, inner_cone_deg=getattr(spec, "inner_cone_deg", 0.0),
                   outer_cone_deg=getattr(spec, "outer_cone_deg", 45.0),
                   cast_shadows=getattr(spec, "cast_shadows", None), name=spec.name)


@dataclass(frozen=True)
class SceneLights:
    """Lights fixed in the world, in place of the studio rig (``RenderSettings(rig=SceneLights(...))``).

    The shadow comes from the first light with ``cast_shadows=True``, else from the first
    directional light without ``cast_shadows=False``; no directional light: no shadow map (the
    floor keeps its contact shadow). Ambient lights sum into a uniform dome; without one the
    environment is black (what the scene asks for).

    Raises:
        InputError: a bad entry; the message names ``lights[i]`` and the key.
    """

    lights: tuple[SceneLight, ...]
    key_angle_deg: float = 9.0

    def __post_init__(self) -> None:
        lights = tuple(self.lights)
        if not lights:
            raise cs.InputError("lights: expected at least one light (or use the studio rig)")
        for i, light in enumerate(lights):
            if not isinstance(light, SceneLight):
                raise cs.InputError(f"lights[{i}]: expected a SceneLight, got {type(light).__name__}")
            light.check(f"lights[{i}]")
        object.__setattr__(self, "lights", lights)
        if not (math.isfinite(self.key_angle_deg) and 0.0 <= self.key_angle_deg < 45.0):
            raise cs.InputError(f"key_angle_deg must lie in [0, 45) degrees, got {self.key_angle_deg!r}")

    @classmethod
    def from_scene(cls, specs) -> "SceneLights | None":
        """From a scene's ``lights`` (LightSpecs); None when the scene has none (use the rig)."""
        specs = list(specs or ())
        return cls(tuple(SceneLight.from_spec(s) for s in specs)) if specs else None

    def shadow_index(self) -> int | None:
        for i, light in enumerate(self.lights):
            if light.cast_shadows:
                return i
        for i, light in enumerate(self.lights):
            if light.kind == "directional" and light.cast_shadows is None:
                return i
        return None

    def resolve(self, camera: Camera | None = None) -> LightSet:
        """World-space lights (the camera does not move them); the shadow caster first."""
        k = self.shadow_index()
        order = ([k] if k is not None else []) + [i for i in range(len(self.lights)) if i != k]
        entries = []
        ambient = np.zeros(3)
        for i in order:
            light = self.lights[i]
            e = float(light.intensity) * np.asarray(light.color, np.float64)
            if light.kind == "ambient":
                ambient += e
                continue
            entry = {"radiance": e}
            if light.kind == "directional":
                d = np.asarray(light.direction, np.float64)
                entry["vec"] = (*(-d / np.linalg.norm(d)), 0.0)
            else:
                entry["vec"] = (*light.position, 1.0)
            if light.kind == "spot":
                d = np.asarray(light.direction, np.float64)
                entry["axis"] = d / np.linalg.norm(d)
                cos_outer = math.cos(math.radians(light.outer_cone_deg))
                cos_inner = math.cos(math.radians(light.inner_cone_deg))
                scale = 1.0 / max(cos_inner - cos_outer, 1e-4)
                entry["cone"] = (scale, -cos_outer * scale)
            entries.append(entry)
        amb = tuple(ambient)
        return _light_set(entries, k is not None, (amb, amb, amb), 1.0, self.key_angle_deg)

    def to_dict(self) -> dict:
        return {"kind": "scene", "key_angle_deg": self.key_angle_deg,
                "lights": [{k: v for k, v in light.__dict__.items() if v is not None} for light in self.lights]}
