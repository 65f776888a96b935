"""Body measurements of the parametric mannequin (metres), validated on construction."""

from __future__ import annotations

import dataclasses
import math

from ..errors import InputError

__all__ = ["Measurements", "PLAUSIBLE_RANGES"]

# Plausible adult ranges [m] (a little wider than the ISO 8559 / ANSUR II 1st-99th percentiles).
PLAUSIBLE_RANGES: dict[str, tuple[float, float]] = {
    "height": (1.40, 2.10),
    "chest": (0.70, 1.35),
    "waist": (0.55, 1.25),
    "hips": (0.75, 1.35),
    "inseam": (0.60, 0.98),
    "arm_length": (0.45, 0.75),
    "shoulder_width": (0.30, 0.52),
    "neck": (0.28, 0.48),
    "thigh": (0.40, 0.78),
}


@dataclasses.dataclass(frozen=True)
class Measurements:
    """Body measurements of the mannequin, all in metres.

    Attributes:
        height: stature, floor to the top of the head [m].
        chest: chest (bust) circumference at the fullest part [m], measured like a tape does:
            the perimeter of the convex hull of the horizontal section at the chest landmark.
        waist: natural waist circumference [m] (the same convex-hull definition).
        hips: hip circumference at the fullest part of the seat [m].
        inseam: floor to crotch [m]; None: 0.78 * height / 1.70 (0.78 m at the default height).
        arm_length: shoulder joint to wrist joint [m]; None: 0.60 * height / 1.70.
        shoulder_width: across the back, shoulder point to shoulder point [m]; None: 0.235 * height.
        neck: neck circumference at its base [m]; None: 0.39 * chest.
        thigh: thigh circumference just below the crotch [m]; None: 0.56 * hips.
    """

    height: float = 1.70
    chest: float = 0.92
    waist: float = 0.74
    hips: float = 0.98
    inseam: float | None = None
    arm_length: float | None = None
    shoulder_width: float | None = None
    neck: float | None = None
    thigh: float | None = None

    def __post_init__(self) -> None:
        h = self.height
        if isinstance(h, (int, float)) and not isinstance(h, bool) and math.isfinite(h) and h > 0:
            # lengths left out scale with the height (the defaults' proportions); checked below like the rest
            if self.inseam is None:
                object.__setattr__(self, "inseam", 0.78 * (float(h) / 1.70))
            if self.arm_length is None:
                object.__setattr__(self, "arm_length", 0.60 * (float(h) / 1.70))
        for f in dataclasses.fields(self):
            value = getattr(self, f.name)
            if value is None and f.name in ("shoulder_width", "neck", "thigh"):
                continue
            if isinstance(value, bool) or not isinstance(value, (int, float)):
                raise InputError(f"Measurements.{f.name}: expected a number in metres, got {value!r}")
            value = float(value)
            if not math.isfinite(value) or value <= 0.0:
                raise InputError(f"Measurements.{f.name}: expected a positive finite length in metres, got {value!r}")
            lo, hi = PLAUSIBLE_RANGES[f.name]
            if not lo <= value <= hi:
                hint = " (centimetres? give metres)" if value > 10 * hi / 2 else ""
                raise InputError(f"Measurements.{f.name} = {value:g} m is outside the plausible range "
                                 f"[{lo:g}, {hi:g}] m{hint}")
            object.__setattr__(self, f.name, value)
        ratio = self.inseam / self.height
        if not 0.40 <= ratio <= 0.52:
            raise InputError(f"Measurements: inseam / height = {ratio:.3f} (inseam {self.inseam:g} m, height "
                             f"{self.height:g} m); expected 0.40 to 0.52")
        if self.waist > 1.15 * max(self.chest, self.hips):
            raise InputError(f"Measurements.waist = {self.waist:g} m is more than 1.15 x max(chest, hips) = "
                             f"{1.15 * max(self.chest, self.hips):g} m; expected a smaller waist")

    # derived optional measurements -------------------------------------------------------
    @property
    def shoulder(self) -> float:
        """Shoulder width [m] (given, or 0.235 * height)."""
        return self.shoulder_width if self.shoulder_width is not None else 0.235 * self.height

    @property
    def neck_circumference(self) -> float:
        """Neck base circumference [m] (given, or 0.39 * chest)."""
        return self.neck if self.neck is not None else 0.39 * self.chest

    @property
    def thigh_circumference(self) -> float:
        """Upper thigh circumference [m] (given, or 0.56 * hips)."""
        return self.thigh if self.thigh is not None else 0.56 * self.hips

    def replace(self, **changes) -> "Measurements":
        """A copy with some measurements changed (validated again)."""
        return dataclasses.replace(self, **changes)

    def as_dict(self) -> dict[str, float]:
        """All measurements, the optional ones resolved to their values [m]."""
        d = dataclasses.asdict(self)
        d.update(shoulder_width=self.shoulder, neck=self.neck_circumference, thigh=self.thigh_circumference)
        return d
