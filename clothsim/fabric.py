"""Fabrics in physical units, and the presets file.

A :class:`Fabric` holds SI values; the presets file (``clothsim/data/fabrics.toml``) stores the
units textile labs measure (g/m², N/m, µN·m, mm) with a source for every number.

Material law (what the numbers mean) — see README "Physics model":

* membrane: orthotropic St. Venant–Kirchhoff on the Green strain ``E`` of the 2D rest shape
  (``u`` = warp, ``v`` = weft), energy per rest area
  ``ψ = ½·C11·E11² + C12·E11·E22 + ½·C22·E22² + 2·G·E12²`` with
  ``C11 = E1/(1−ν12·ν21)``, ``C22 = E2/(1−ν12·ν21)``, ``C12 = ν12·E2/(1−ν12·ν21)``, ``ν21 = ν12·E2/E1``;
  ``E1 = stretch_warp``, ``E2 = stretch_weft`` are the uniaxial secant stiffnesses E·t [N/m] a strip
  tensile test measures (free lateral contraction), ``G = shear`` [N/m per radian];
* bending: dihedral angles, rigidity per unit width ``B(φ)`` [N·m] for curvature along direction φ
  from warp: ``B(φ) = Bw·cos⁴φ + 2·B12·cos²φ·sin²φ + Bf·sin⁴φ``, ``B12 = 2·Bb − (Bw + Bf)/2``
  (clamped so B(φ) stays ≥ min(Bw, Bf, Bb)/2), i.e. B(45°) = bias rigidity ``Bb``.
"""

from __future__ import annotations

import dataclasses
import math
import tomllib
from dataclasses import dataclass
from importlib import resources

from .errors import InputError

_PRESET_FILE = "fabrics.toml"

# field: (unit in the presets file, factor file-unit -> SI)
_FILE_UNITS = {
    "density": ("g/m^2", 1e-3),
    "stretch_warp": ("N/m", 1.0),
    "stretch_weft": ("N/m", 1.0),
    "poisson": ("-", 1.0),
    "shear": ("N/m/rad", 1.0),
    "bend_warp": ("uN*m", 1e-6),
    "bend_weft": ("uN*m", 1e-6),
    "bend_bias": ("uN*m", 1e-6),
    "friction": ("-", 1.0),
    "thickness": ("mm", 1e-3),
    "damping": ("s", 1.0),
}


@dataclass(frozen=True)
class Fabric:
    """A fabric's mechanical properties, SI units.

    Attributes:
        name: preset name or a user label.
        density: areal density [kg/m²].
        stretch_warp, stretch_weft: uniaxial tensile stiffness E·t along warp / weft [N/m].
        poisson: in-plane Poisson ratio ν12 (lateral contraction across weft when pulled along warp).
        shear: in-plane shear stiffness G [N/m per radian].
        bend_warp, bend_weft, bend_bias: bending rigidity per unit width [N·m]
            (cantilever-test B for strips cut along warp, weft and at 45°).
        friction: Coulomb friction coefficient against colliders and itself.
        thickness: fabric thickness [m]; cloth keeps this distance from colliders and itself.
        damping: stiffness-proportional (Rayleigh β) damping [s].
    """

    name: str = "custom"
    density: float = 0.13
    stretch_warp: float = 261.0
    stretch_weft: float = 210.0
    poisson: float = 0.24
    shear: float = 30.0
    bend_warp: float = 9.92e-6
    bend_weft: float = 7.14e-6
    bend_bias: float = 9.13e-6
    friction: float = 0.5
    thickness: float = 3e-4
    damping: float = 2e-3

    def __post_init__(self):
        self.validate()

    # ------------------------------------------------------------------ construction
    @classmethod
    def preset(cls, name: str) -> "Fabric":
        """The named preset from ``clothsim/data/fabrics.toml`` (cotton, denim, silk, jersey, polyester)."""
        presets = _load_presets()
        if name not in presets:
            raise InputError(f"unknown fabric {name!r}: expected one of {', '.join(sorted(presets))}")
        return presets[name]

    @classmethod
    def resolve(cls, fabric: "Fabric | str | dict | None") -> "Fabric":
        """A Fabric from a preset name, a Fabric, a dict of SI fields (with optional ``preset`` base), or None (cotton)."""
        if fabric is None:
            return cls.preset("cotton")
        if isinstance(fabric, Fabric):
            return fabric
        if isinstance(fabric, str):
            return cls.preset(fabric)
        if isinstance(fabric, dict):
            d = dict(fabric)
            base = cls.preset(d.pop("preset")) if "preset" in d else cls()
            unknown = set(d) - {f.name for f in dataclasses.fields(cls)}
            if unknown:
                raise InputError(f"fabric: unknown field(s) {sorted(unknown)}; expected some of {preset_fields()}")
            return base.replace(**d)
        raise InputError(f"fabric: expected a preset name, a Fabric or a dict, got {type(fabric).__name__}")

    def replace(self, **changes) -> "Fabric":
        """A copy with some fields changed (SI units), validated."""
        return dataclasses.replace(self, **changes)

    # ------------------------------------------------------------------ checks / derived values
    def validate(self) -> None:
        for f in dataclasses.fields(self):
            if f.name == "name":
                continue
            v = getattr(self, f.name)
            if not isinstance(v, (int, float)) or not math.isfinite(v):
                raise InputError(f"fabric {self.name!r}: {f.name} must be a finite number, got {v!r}")
        positive = ("density", "stretch_warp", "stretch_weft", "shear", "bend_warp", "bend_weft", "bend_bias")
        for k in positive:
            if getattr(self, k) <= 0.0:
                raise InputError(f"fabric {self.name!r}: {k} must be > 0, got {getattr(self, k)!r}")
        for k in ("friction", "thickness", "damping"):
            if getattr(self, k) < 0.0:
                raise InputError(f"fabric {self.name!r}: {k} must be >= 0, got {getattr(self, k)!r}")
        nu21 = self.poisson * self.stretch_weft / self.stretch_warp
        if not (0.0 <= self.poisson and self.poisson * nu21 < 1.0):
            raise InputError(
                f"fabric {self.name!r}: poisson={self.poisson} gives ν12·ν21={self.poisson * nu21:.3f}; "
                "the membrane is stable only for 0 <= ν12·ν21 < 1"
            )

    def membrane_coefficients(self) -> tuple[float, float, float, float]:
        """(C11, C12, C22, G) of the plane-stress orthotropic law on the Green strain [N/m]."""
        e1, e2, nu12 = self.stretch_warp, self.stretch_weft, self.poisson
        nu21 = nu12 * e2 / e1
        den = 1.0 - nu12 * nu21
        return e1 / den, nu12 * e2 / den, e2 / den, self.shear

    def bending_rigidity(self, phi):
        """B(φ) [N·m] for curvature along direction φ [rad] from warp (works on numpy arrays)."""
        import numpy as np

        bw, bf, bb = self.bend_warp, self.bend_weft, self.bend_bias
        b12 = 2.0 * bb - 0.5 * (bw + bf)
        c2 = np.cos(phi) ** 2
        s2 = 1.0 - c2
        b = bw * c2 * c2 + 2.0 * b12 * c2 * s2 + bf * s2 * s2
        return np.maximum(b, 0.5 * min(bw, bf, bb))

    def to_lab_units(self) -> dict:
        """The fields in the presets file's units (g/m², N/m, µN·m, mm, …)."""
        return {k: getattr(self, k) / f for k, (_, f) in _FILE_UNITS.items()}


def preset_fields() -> list[str]:
    return list(_FILE_UNITS)


def preset_names() -> list[str]:
    return sorted(_load_presets())


def preset_sources(name: str) -> dict[str, str]:
    """The source string of each number of a preset."""
    raw = _read_file()
    if name not in raw:
        raise InputError(f"unknown fabric {name!r}: expected one of {', '.join(sorted(raw))}")
    return {k: raw[name][k]["source"] for k in _FILE_UNITS}


def file_units() -> dict[str, str]:
    return {k: u for k, (u, _) in _FILE_UNITS.items()}


def _read_file() -> dict:
    text = resources.files("clothsim.data").joinpath(_PRESET_FILE).read_text(encoding="utf-8")
    return tomllib.loads(text)


_CACHE: dict[str, Fabric] | None = None


def _load_presets() -> dict[str, Fabric]:
    global _CACHE
    if _CACHE is None:
        raw = _read_file()
        out = {}
        for name, entry in raw.items():
            where = f"{_PRESET_FILE} [{name}]"
            missing = set(_FILE_UNITS) - set(entry)
            extra = set(entry) - set(_FILE_UNITS) - {"label"}
            if missing or extra:
                raise InputError(f"{where}: missing {sorted(missing)} / unknown {sorted(extra)}")
            kw = {}
            for k, (_, factor) in _FILE_UNITS.items():
                item = entry[k]
                if not isinstance(item, dict) or "value" not in item or not item.get("source"):
                    raise InputError(f"{where}.{k}: expected {{ value = number, source = \"...\" }}")
                kw[k] = float(item["value"]) * factor
            out[name] = Fabric(name=name, **kw)
        _CACHE = out
    return _CACHE
