"""Scene files: TOML → validated, frozen :class:`Scene` (paths, numbers, enums; no Warp, no GL).

Every error is a :class:`clothsim.InputError` whose message starts with the scene file and the key
(``scenes/tshirt.toml: simulation.substeps: expected an integer in [1, 1000], got -3``). A key that
is not part of the format is an error (with the closest valid key suggested), never ignored. The
format is documented in ``scenes/README.md``; :data:`FORMAT_KEYS` lists every key.

Units: metres, seconds, degrees for joint rotations and camera angles, millimetres only where the key
says so (``focal_length_mm``); inline fabric values use the lab units of ``clothsim/data/fabrics.toml``
(g/m², N/m, µN·m, mm, s).
"""

from __future__ import annotations

import difflib
import enum
import math
import tomllib
from dataclasses import dataclass, field
from pathlib import Path

from ..errors import InputError
from ..fabric import Fabric, file_units, preset_names
from .tomltable import Table, short, type_name

# ---------------------------------------------------------------------------------------------- limits
# "Huge counts": bounds that stop a typo (an extra zero or three) from starting a days-long run or
# exhausting memory. Each is far above anything a garment scene needs.
MAX_FRAMES = 100_000  # 27 minutes of simulated time at 60 fps
MAX_SUBSTEPS = 1_000
MAX_ITERATIONS = 1_000
MAX_LEVEL = 16  # resolution level index (0 = coarsest)
MAX_GARMENTS = 32
MAX_CAMERAS = 64
MAX_LIGHTS = 64
MAX_JOINTS = 512
MAX_MESH_VERTICES = 2_000_000  # per garment / avatar mesh (float32 state ~ 100 MB per 2M vertices)
MAX_SIZE_M = 10.0  # a body or garment larger than 10 m is a unit mistake (mm or cm read as m)

MEASUREMENTS = ("height", "chest", "waist", "hips", "inseam", "arm_length", "shoulder_width", "neck", "thigh")  # metres
VIEWS = ("front", "back", "left", "right", "three_quarter")
OUTPUT_FORMATS = ("obj", "glb", "usd")


class AvatarKind(str, enum.Enum):
    MANNEQUIN = "mannequin"  # the embedded parametric mannequin (clothsim.avatar)
    MAKEHUMAN = "makehuman"  # the optional MakeHuman base mesh (needs `clothsim avatar fetch`)
    FILE = "file"  # a body mesh file (OBJ/GLB/USD)


class View(str, enum.Enum):
    FRONT = "front"
    BACK = "back"
    LEFT = "left"
    RIGHT = "right"
    THREE_QUARTER = "three_quarter"


class LightKind(str, enum.Enum):
    DIRECTIONAL = "directional"
    POINT = "point"
    SPOT = "spot"
    AMBIENT = "ambient"


# ---------------------------------------------------------------------------------------------- dataclasses
@dataclass(frozen=True)
class AvatarSpec:
    """The body. ``kind`` mannequin uses ``measurements`` (metres, only those given; the rest take the
    defaults); makehuman is the converted MakeHuman body (``clothsim.avatar.fetch_makehuman`` fills its
    cache); ``kind`` file uses ``file`` (a mesh, converted to metres and Y up)."""

    kind: AvatarKind
    measurements: dict[str, float] = field(default_factory=dict)
    file: Path | None = None


@dataclass(frozen=True)
class GarmentSpec:
    """One garment: from a sewing ``pattern`` file or a 3D ``mesh`` file (exactly one is set).

    ``level``: index into the pattern's resolution hierarchy (0 = coarsest) or None; ``edge_length``
    [m]: target edge length (the level whose edge length is nearest), or None; both None: coarsest.
    ``offset`` [m]: translation added to the garment's placed position.
    ``color``: the colour the renderer draws it in, sRGB (r, g, b) in [0, 1], or None: a mesh
    file's own material (glTF), else the fabric's display colour.
    """

    name: str
    fabric: Fabric | None = None  # None: the pattern's own fabric (cotton for a mesh)
    pattern: Path | None = None
    mesh: Path | None = None
    level: int | None = None
    edge_length: float | None = None
    offset: tuple[float, float, float] = (0.0, 0.0, 0.0)
    color: tuple[float, float, float] | None = None


@dataclass(frozen=True)
class PoseSpec:
    """Joint rotations [degrees], XYZ Euler per joint, applied over ``blend_frames`` frames after sewing."""

    joints: dict[str, tuple[float, float, float]] = field(default_factory=dict)
    blend_frames: int = 30


@dataclass(frozen=True)
class CheckSpec:
    """Thresholds a drape must meet (see scenes/README.md for why each default is what it is).

    kinetic_energy: cloth kinetic energy per kilogram of cloth [J/kg] (½·v_rms²).
    residual: RMS over free vertices of the net force per vertex weight, |m·Δv/Δt| / (m·g) [-].
    seam_gap: largest distance between sewn vertex pairs [m].
    penetration: deepest cloth vertex inside the body mesh [m].
    settle_frames: consecutive frames that must meet the energy and residual thresholds.
    """

    kinetic_energy: float = 1.0e-4
    residual: float = 0.05
    seam_gap: float = 0.005
    penetration: float = 0.002
    settle_frames: int = 5


@dataclass(frozen=True)
class SimulationSpec:
    """Solver settings. ``dt`` [s] is one frame; ``frame_cap`` the most frames a drape may take;
    ``min_frames`` frames always run before settling is checked; ``skin_thickness`` [m] is the avatar
    collider's offset; ``ground`` [m] a ground height or None. ``refine_from``: a coarser level index
    (0 = coarsest) to sew and settle at first, then refine level by level up to the garments' level
    (coarse-to-fine draping, :class:`clothsim.scene.Drape`), or None to drape at the garments' level from
    the start; ``frame_cap`` then applies to each level."""

    device: str = "auto"
    dt: float = 1.0 / 60.0
    substeps: int = 10
    iterations: int = 10
    frame_cap: int = 300
    min_frames: int = 30
    self_collision: bool = True
    skin_thickness: float = 0.003
    ground: float | None = None
    contact_stiffness: float = 1.0e4
    contact_damping: float = 2.0e-4
    drag: float = 0.0
    air_damping: float = 0.0
    checks: CheckSpec = field(default_factory=CheckSpec)
    refine_from: int | None = None
    # how an iteration visits the vertices: "gauss-seidel" or "jacobi" (clothsim.Simulator's ``sweep``)
    sweep: str = "gauss-seidel"
    # Chebyshev acceleration of the iterations (clothsim.Simulator's chebyshev_rho, chebyshev_delay); 0 = off
    chebyshev_rho: float = 0.0
    chebyshev_delay: int = 0
    # per-level solver settings: level index (0 = coarsest) -> {"substeps": n, "iterations": n, "sweep": s},
    # used whenever a garment is simulated at that level (see :meth:`at_level`, :meth:`sweep_at`)
    levels: dict = field(default_factory=dict)

    def at_level(self, level: int | None, substeps: int | None = None) -> tuple[int, int]:
        """(substeps, iterations) for simulating at ``level``: the ``[simulation.levels]`` entry where it
        gives one, else ``substeps`` (a caller's default, e.g. a coarse-to-fine draft's) or the scene's."""
        own = self.levels.get(level, {}) if level is not None else {}
        return (int(own.get("substeps", substeps if substeps is not None else self.substeps)),
                int(own.get("iterations", self.iterations)))

    def sweep_at(self, level: int | None) -> str:
        """The sweep for simulating at ``level``: the ``[simulation.levels]`` entry's, else the scene's."""
        own = self.levels.get(level, {}) if level is not None else {}
        return str(own.get("sweep", self.sweep))


@dataclass(frozen=True)
class CameraSpec:
    """A camera for the renderer: a standard ``view`` (auto-fit to the garment) or an explicit
    ``position``/``target`` [m]; ``focal_length_mm`` on a 36 mm wide sensor."""

    name: str
    view: View | None = None
    position: tuple[float, float, float] | None = None
    target: tuple[float, float, float] | None = None
    focal_length_mm: float = 50.0
    sensor_width_mm: float = 36.0


@dataclass(frozen=True)
class LightSpec:
    """A light for the renderer, fixed in the world. ``intensity``: lux for directional/ambient,
    candela for point/spot (KHR_lights_punctual's units). ``direction``: the way the light travels
    (directional, spot). ``inner_cone_deg``/``outer_cone_deg``: a spot's full-intensity and cut-off
    half-angles [degrees]. ``cast_shadows``: True/False, or None = the renderer's default (the first
    directional light casts the shadow)."""

    kind: LightKind
    name: str = ""
    intensity: float = 1.0
    color: tuple[float, float, float] = (1.0, 1.0, 1.0)
    direction: tuple[float, float, float] | None = None
    position: tuple[float, float, float] | None = None
    inner_cone_deg: float = 0.0
    outer_cone_deg: float = 45.0
    cast_shadows: bool | None = None


@dataclass(frozen=True)
class OutputSpec:
    """Where results go (``folder``) and which mesh formats; the frame cache and report are always written."""

    folder: Path
    formats: tuple[str, ...] = OUTPUT_FORMATS
    cache_every: int = 1


@dataclass(frozen=True)
class Scene:
    """A validated scene file. Paths are absolute (resolved against the scene file's folder)."""

    path: Path
    name: str
    description: str
    avatar: AvatarSpec
    garments: tuple[GarmentSpec, ...]
    pose: PoseSpec
    simulation: SimulationSpec
    cameras: tuple[CameraSpec, ...]
    lights: tuple[LightSpec, ...]
    output: OutputSpec

    def replace(self, **changes) -> "Scene":
        import dataclasses

        return dataclasses.replace(self, **changes)


# every key of the format: section -> keys (nested tables as "a.b")
FORMAT_KEYS: dict[str, tuple[str, ...]] = {
    "": ("scene", "avatar", "garments", "pose", "simulation", "cameras", "lights", "output"),
    "scene": ("name", "description"),
    "avatar": ("kind", "file", "measurements"),
    "avatar.measurements": MEASUREMENTS,
    "garments": ("name", "pattern", "mesh", "fabric", "level", "edge_length", "offset", "color"),
    "garments.fabric": ("preset", *file_units().keys()),
    "pose": ("joints", "blend_frames"),
    "simulation": ("device", "dt", "substeps", "iterations", "frame_cap", "min_frames", "self_collision",
                   "skin_thickness", "ground", "contact_stiffness", "contact_damping", "drag", "air_damping",
                   "checks", "refine_from", "levels", "sweep", "chebyshev_rho", "chebyshev_delay"),
    "simulation.levels": ("substeps", "iterations", "sweep"),
    "simulation.checks": ("kinetic_energy", "residual", "seam_gap", "penetration", "settle_frames"),
    "cameras": ("name", "view", "position", "target", "focal_length_mm", "sensor_width_mm"),
    "lights": ("kind", "name", "intensity", "color", "direction", "position", "inner_cone_deg", "outer_cone_deg",
               "cast_shadows"),
    "output": ("folder", "formats", "cache_every"),
}


# ---------------------------------------------------------------------------------------------- sections
def _read_avatar(t: Table, base: Path) -> AvatarSpec:
    has_file = t.has("file")
    kind_default = "file" if has_file else ...
    kind = AvatarKind(t.string("kind", kind_default, choices=tuple(k.value for k in AvatarKind)))
    if kind is AvatarKind.FILE:
        if t.has("measurements"):
            raise t.error("measurements", "measurements apply to kind = 'mannequin' or 'makehuman', not to a mesh file")
        return AvatarSpec(kind=kind, file=t.existing_file("file", base))
    if has_file:
        raise t.error("file", f"a file is used with kind = 'file' (or no kind), not with kind = {kind.value!r}")
    if kind is AvatarKind.MAKEHUMAN and t.has("measurements"):
        raise t.error("measurements", "the MakeHuman body is used as converted; measurements apply to kind = 'mannequin'")
    m = t.table("measurements", MEASUREMENTS)
    meas = {}
    if m is not None:
        for k in MEASUREMENTS:
            if m.has(k):
                # 0.1 .. 3 m covers any human measurement; a larger number is a unit mistake (cm as m)
                meas[k] = m.number(k, lo=0.1, hi=3.0, unit="m")
    return AvatarSpec(kind=kind, measurements=meas)


def _read_fabric(t: Table, k: str) -> Fabric | None:
    if not t.has(k):
        return None  # the pattern's fabric (cotton for a mesh)
    v = t.raw(k)
    names = preset_names()
    if isinstance(v, str):
        if v not in names:
            close = difflib.get_close_matches(v, names, n=1, cutoff=0.6)
            hint = f" (did you mean {close[0]!r}?)" if close else ""
            raise t.error(k, f"unknown fabric {v!r}{hint}: expected one of {', '.join(names)} or an inline table")
        return Fabric.preset(v)
    if not isinstance(v, dict):
        raise t.error(k, f"expected a preset name or an inline table of values, got {type_name(v)} {short(v)}")
    ft = Table(t.file, t.key(k), v, FORMAT_KEYS["garments.fabric"])
    base_name = ft.string("preset", "cotton", choices=tuple(names)) if ft.has("preset") else None
    base = Fabric.preset(base_name) if base_name else None
    units = file_units()
    from ..fabric import _FILE_UNITS

    changes = {}
    for name, unit in units.items():
        if ft.has(name):
            lo_open = name in ("density", "stretch_warp", "stretch_weft", "shear", "bend_warp", "bend_weft", "bend_bias")
            changes[name] = ft.number(name, lo=0.0, lo_open=lo_open, unit=unit) * _FILE_UNITS[name][1]
        elif base is None:
            raise ft.error(name, f"missing (an inline fabric without 'preset' must give every value: "
                                 f"{', '.join(units)}; or add preset = 'cotton' to start from a preset)")
    label = f"{base_name}+custom" if base is not None and changes else (base_name or "custom")
    try:
        return (base or Fabric()).replace(name=label, **changes)
    except InputError as e:
        raise t.error(k, str(e)) from None


def _read_garment(t: Table, base: Path, index: int) -> GarmentSpec:
    has_p, has_m = t.has("pattern"), t.has("mesh")
    if has_p == has_m:
        raise t.error_at(t.path, "expected exactly one of 'pattern' (a sewing pattern file) or 'mesh' (a 3D mesh file)"
                         + (", got both" if has_p else ", got neither"))
    pattern = t.existing_file("pattern", base) if has_p else None
    mesh = t.existing_file("mesh", base) if has_m else None
    src = pattern or mesh
    name = t.string("name", src.stem if src else f"garment{index}")
    if t.has("level") and t.has("edge_length"):
        raise t.error("edge_length", "give either 'level' or 'edge_length', not both")
    level = None
    if t.has("level"):
        lv = t.raw("level")
        if lv in ("coarsest", "finest"):
            level = 0 if lv == "coarsest" else -1
        else:
            level = t.integer("level", lo=0, hi=MAX_LEVEL)
    edge = t.number("edge_length", None, lo=0.0005, hi=0.5, unit="m") if t.has("edge_length") else None
    return GarmentSpec(name=name, fabric=_read_fabric(t, "fabric"), pattern=pattern, mesh=mesh, level=level,
                       edge_length=edge, offset=t.vec3("offset", (0.0, 0.0, 0.0), max_abs=MAX_SIZE_M),
                       color=_read_srgb(t, "color"))


def _read_srgb(t: Table, k: str) -> tuple[float, float, float] | None:
    """An optional sRGB colour: "#rrggbb" or 3 numbers in [0, 1]."""
    if not t.has(k):
        return None
    v = t.raw(k)
    if isinstance(v, str):
        s = v.strip()
        if len(s) == 7 and s.startswith("#"):
            try:
                return tuple(int(s[i:i + 2], 16) / 255.0 for i in (1, 3, 5))
            except ValueError:
                pass
        raise t.error(k, f"expected an sRGB colour '#rrggbb' or 3 numbers in [0, 1], got {v!r}")
    c = t.vec3(k, unit="sRGB, 0..1")
    for i, x in enumerate(c):
        if not (0.0 <= x <= 1.0):
            raise t.error_at(f"{t.key(k)}[{i}]", f"expected a number in [0, 1] (sRGB), got {x:g}")
    return c


def _read_pose(t: Table | None) -> PoseSpec:
    if t is None:
        return PoseSpec()
    joints = {}
    if t.has("joints"):
        jv = t.raw("joints")
        if not isinstance(jv, dict):
            raise t.error("joints", f"expected a table of joint = [rx, ry, rz] (degrees), got {type_name(jv)}")
        if len(jv) > MAX_JOINTS:
            raise t.error("joints", f"expected at most {MAX_JOINTS} joints, got {len(jv)}")
        jt = Table(t.file, t.key("joints"), jv, tuple(jv))
        for name in jv:
            joints[name] = jt.vec3(name, unit="degrees", max_abs=360.0)
    return PoseSpec(joints=joints, blend_frames=t.integer("blend_frames", 30, lo=1, hi=MAX_FRAMES))


def _read_checks(t: Table | None) -> CheckSpec:
    d = CheckSpec()
    if t is None:
        return d
    return CheckSpec(
        kinetic_energy=t.number("kinetic_energy", d.kinetic_energy, lo=0.0, lo_open=True, hi=100.0, unit="J/kg"),
        residual=t.number("residual", d.residual, lo=0.0, lo_open=True, hi=100.0, unit="fraction of vertex weight"),
        seam_gap=t.number("seam_gap", d.seam_gap, lo=0.0, lo_open=True, hi=1.0, unit="m"),
        penetration=t.number("penetration", d.penetration, lo=0.0, hi=1.0, unit="m"),
        settle_frames=t.integer("settle_frames", d.settle_frames, lo=1, hi=MAX_FRAMES),
    )


def _read_simulation(t: Table | None) -> SimulationSpec:
    d = SimulationSpec()
    if t is None:
        return d
    device = t.string("device", d.device)
    if not (device in ("auto", "cpu", "cuda") or (device.startswith("cuda:") and device[5:].isdigit())):
        raise t.error("device", f"expected 'auto', 'cpu', 'cuda' or 'cuda:N', got {device!r}")
    ground = None
    if t.has("ground") and t.raw("ground") is not False:
        ground = t.number("ground", lo=-MAX_SIZE_M, hi=MAX_SIZE_M, unit="m (or false for none)")
    frame_cap = t.integer("frame_cap", d.frame_cap, lo=1, hi=MAX_FRAMES)
    min_frames = t.integer("min_frames", min(d.min_frames, frame_cap), lo=0, hi=MAX_FRAMES)
    if min_frames > frame_cap:
        raise t.error("min_frames", f"expected at most frame_cap = {frame_cap}, got {min_frames}")
    refine_from = None
    if t.has("refine_from"):
        rf = t.raw("refine_from")
        if rf == "coarsest":
            refine_from = 0
        elif isinstance(rf, str):
            raise t.error("refine_from", f"expected 'coarsest', false or a level index (0 = coarsest) coarser than "
                                         f"the garments' level, got {short(rf)}")
        elif rf is not False:
            refine_from = t.integer("refine_from", lo=0, hi=MAX_LEVEL)
    return SimulationSpec(
        device=device,
        dt=t.number("dt", d.dt, lo=0.0, lo_open=True, hi=1.0, unit="s"),
        substeps=t.integer("substeps", d.substeps, lo=1, hi=MAX_SUBSTEPS),
        iterations=t.integer("iterations", d.iterations, lo=1, hi=MAX_ITERATIONS),
        frame_cap=frame_cap,
        min_frames=min_frames,
        self_collision=t.boolean("self_collision", d.self_collision),
        skin_thickness=t.number("skin_thickness", d.skin_thickness, lo=0.0, hi=0.05, unit="m"),
        ground=ground,
        contact_stiffness=t.number("contact_stiffness", d.contact_stiffness, lo=1.0, hi=1.0e8, unit="N/m"),
        contact_damping=t.number("contact_damping", d.contact_damping, lo=0.0, hi=1.0, unit="s"),
        drag=t.number("drag", d.drag, lo=0.0, hi=1.0e3, unit="N*s/m^3"),
        air_damping=t.number("air_damping", d.air_damping, lo=0.0, hi=1.0e3, unit="1/s"),
        checks=_read_checks(t.table("checks", FORMAT_KEYS["simulation.checks"])),
        refine_from=refine_from,
        sweep=t.string("sweep", d.sweep, choices=SWEEPS),
        chebyshev_rho=t.number("chebyshev_rho", d.chebyshev_rho, lo=0.0, hi=0.99),
        chebyshev_delay=t.integer("chebyshev_delay", d.chebyshev_delay, lo=0, hi=MAX_ITERATIONS),
        levels=_read_levels(t),
    )



SWEEPS = ("gauss-seidel", "jacobi")


def _read_levels(t: Table) -> dict:
    """``[simulation.levels]``: a table keyed by level index ("0" = coarsest), each entry a table with
    ``substeps`` and/or ``iterations`` (e.g. ``3 = { substeps = 20 }``)."""
    if not t.has("levels"):
        return {}
    raw = t.raw("levels")
    key = t.key("levels")
    if not isinstance(raw, dict):
        raise t.error("levels", f"expected a table of level index = {{ substeps = n, iterations = n }}, "
                                f"got {type_name(raw)} {short(raw)}")
    out = {}
    for k, v in raw.items():
        if not (k.isdigit() and 0 <= int(k) <= MAX_LEVEL):
            raise t.error_at(f"{key}.{k}", f"expected a level index in [0, {MAX_LEVEL}] (0 = coarsest) as the key, "
                                           f"got {k!r}")
        lt = Table(t.file, f"{key}.{k}", v, FORMAT_KEYS["simulation.levels"])
        entry = {}
        if lt.has("substeps"):
            entry["substeps"] = lt.integer("substeps", lo=1, hi=MAX_SUBSTEPS)
        if lt.has("iterations"):
            entry["iterations"] = lt.integer("iterations", lo=1, hi=MAX_ITERATIONS)
        if lt.has("sweep"):
            entry["sweep"] = lt.string("sweep", choices=SWEEPS)
        out[int(k)] = entry
    return out


def _read_camera(t: Table, i: int) -> CameraSpec:
    name = t.string("name", f"camera{i}")
    has_view, has_pos = t.has("view"), t.has("position")
    if has_view == has_pos:
        raise t.error_at(t.path, "expected exactly one of 'view' (" + "|".join(VIEWS) + ") or 'position' [m]"
                         + (", got both" if has_view else ", got neither"))
    view = View(t.string("view", choices=VIEWS)) if has_view else None
    if has_view and t.has("target"):
        raise t.error("target", "a standard 'view' aims at the garment itself; 'target' goes with 'position'")
    pos = t.vec3("position", None, max_abs=1.0e3) if has_pos else None
    tgt = t.vec3("target", (0.0, 1.0, 0.0), max_abs=1.0e3) if has_pos else None
    if pos is not None and math.dist(pos, tgt) < 1e-6:
        raise t.error("target", f"expected a point away from position {list(pos)}, got the same point")
    return CameraSpec(name=name, view=view, position=pos, target=tgt,
                      focal_length_mm=t.number("focal_length_mm", 50.0, lo=1.0, hi=2000.0, unit="mm"),
                      sensor_width_mm=t.number("sensor_width_mm", 36.0, lo=1.0, hi=200.0, unit="mm"))


def _read_light(t: Table, i: int) -> LightSpec:
    kind = LightKind(t.string("kind", choices=tuple(k.value for k in LightKind)))
    color = t.vec3("color", (1.0, 1.0, 1.0), unit="linear RGB, 0..1")
    for c, x in enumerate(color):
        if not (0.0 <= x <= 1.0):
            raise t.error_at(f"{t.key('color')}[{c}]", f"expected a number in [0, 1] (linear RGB), got {x:g}")
    direction = position = None
    if kind in (LightKind.DIRECTIONAL, LightKind.SPOT):
        direction = t.vec3("direction", unit="")
        if math.hypot(*direction) < 1e-9:
            raise t.error("direction", "expected a non-zero direction vector, got [0, 0, 0]")
    if kind in (LightKind.POINT, LightKind.SPOT):
        position = t.vec3("position")
    if kind is LightKind.DIRECTIONAL and t.has("position"):
        raise t.error("position", "a directional light has a direction, not a position")
    if kind is LightKind.POINT and t.has("direction"):
        raise t.error("direction", "a point light has a position, not a direction")
    if kind is LightKind.AMBIENT:
        for k in ("direction", "position"):
            if t.has(k):
                raise t.error(k, f"an ambient light has no {k}")
    if kind is not LightKind.SPOT:
        for k in ("inner_cone_deg", "outer_cone_deg"):
            if t.has(k):
                raise t.error(k, f"only a spot light has a cone, not a {kind.value} light")
    inner = t.number("inner_cone_deg", 0.0, lo=0.0, hi=90.0, unit="degrees")
    outer = t.number("outer_cone_deg", 45.0, lo=0.0, hi=90.0, lo_open=True, unit="degrees")
    if kind is LightKind.SPOT and inner >= outer:
        raise t.error("inner_cone_deg", f"expected less than outer_cone_deg ({outer:g}), got {inner:g}")
    cast = t.boolean("cast_shadows", None) if t.has("cast_shadows") else None
    if cast and kind is not LightKind.DIRECTIONAL:
        raise t.error("cast_shadows", f"only directional lights cast shadows, not a {kind.value} light")
    return LightSpec(kind=kind, name=t.string("name", f"light{i}"),
                     intensity=t.number("intensity", 1.0, lo=0.0, hi=1.0e6), color=color,
                     direction=direction, position=position, inner_cone_deg=inner, outer_cone_deg=outer,
                     cast_shadows=cast)


def _read_output(t: Table | None, base: Path, scene_name: str) -> OutputSpec:
    if t is None:
        return OutputSpec(folder=(base / ".." / "out" / scene_name).resolve())
    folder = t.path_("folder", base, required=False) or (base / ".." / "out" / scene_name).resolve()
    formats = OUTPUT_FORMATS
    if t.has("formats"):
        v = t.raw("formats")
        if not isinstance(v, list) or not all(isinstance(x, str) for x in v):
            raise t.error("formats", f"expected an array of strings from {list(OUTPUT_FORMATS)}, got {short(v)}")
        bad = [x for x in v if x not in OUTPUT_FORMATS]
        if bad:
            raise t.error("formats", f"unknown format {bad[0]!r}: expected some of {', '.join(OUTPUT_FORMATS)}")
        formats = tuple(dict.fromkeys(v))
    return OutputSpec(folder=folder, formats=formats, cache_every=t.integer("cache_every", 1, lo=1, hi=MAX_FRAMES))


# ---------------------------------------------------------------------------------------------- entry point
def parse_scene(path: str | Path) -> Scene:
    """Read and validate the TOML of a scene file (structure, types, ranges, paths exist).

    Contents of referenced files (patterns, meshes) are checked by :func:`clothsim.scene.load_scene`.
    """
    path = Path(path).expanduser()
    if not path.exists():
        raise InputError(f"{path}: scene file not found")
    if not path.is_file():
        raise InputError(f"{path}: expected a scene file (.toml), but it is a folder")
    path = path.resolve()
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except tomllib.TOMLDecodeError as e:
        raise InputError(f"{path}: not valid TOML: {e}") from None
    except UnicodeDecodeError as e:
        raise InputError(f"{path}: not a UTF-8 text file ({e.reason} at byte {e.start})") from None
    base = path.parent
    top = Table(path, "", data, FORMAT_KEYS[""])
    meta = top.table("scene", FORMAT_KEYS["scene"])
    name = meta.string("name", path.stem) if meta else path.stem
    description = meta.string("description", "") if meta else ""
    avatar = _read_avatar(top.table("avatar", FORMAT_KEYS["avatar"], required=True), base)
    garments = tuple(_read_garment(g, base, i) for i, g in enumerate(
        top.array_of_tables("garments", FORMAT_KEYS["garments"], max_count=MAX_GARMENTS, required=True)))
    names = [g.name for g in garments]
    dup = next((n for n in names if names.count(n) > 1), None)
    if dup is not None:
        raise top.error_at("garments", f"two garments are named {dup!r}; give each a unique 'name'")
    cameras = tuple(_read_camera(c, i) for i, c in enumerate(
        top.array_of_tables("cameras", FORMAT_KEYS["cameras"], max_count=MAX_CAMERAS)))
    cnames = [c.name for c in cameras]
    cdup = next((n for n in cnames if cnames.count(n) > 1), None)
    if cdup is not None:
        raise top.error_at("cameras", f"two cameras are named {cdup!r}; give each a unique 'name'")
    lights = tuple(_read_light(lt, i) for i, lt in enumerate(
        top.array_of_tables("lights", FORMAT_KEYS["lights"], max_count=MAX_LIGHTS)))
    return Scene(path=path, name=name, description=description, avatar=avatar, garments=garments,
                 pose=_read_pose(top.table("pose", FORMAT_KEYS["pose"])),
                 simulation=_read_simulation(top.table("simulation", FORMAT_KEYS["simulation"])),
                 cameras=cameras, lights=lights, output=_read_output(top.table("output", FORMAT_KEYS["output"]), base, name))
