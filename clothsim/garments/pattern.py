"""Sewing patterns: panels (closed 2D outlines placed around the body) and seams, loaded and validated.

The file format (TOML or JSON, same keys) is documented in ``assets/garments/README.md``. Every
error names the file, the key path (e.g. ``panels[1] 'back'.edges[3].points``) and what was expected.

    pattern = load_pattern("assets/garments/tshirt.toml")
    mesh = pattern.mesh(0.02)            # GarmentMesh at a 20 mm target edge length
"""

from __future__ import annotations

import json
import math
import tomllib
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from ..errors import InputError
from ..fabric import Fabric
from .curves import KINDS, Edge

CLOSE_TOL = 1e-6
"""Largest gap [m] between one edge's end and the next edge's start that still counts as closed."""
SEAM_TOL = 0.005
"""Default largest length difference [m] between the two edges of a seam (a seam's ``tolerance`` overrides)."""

_TOP_KEYS = {"name": "a string", "description": "a string", "fabric": "a fabric preset name",
             "panels": "a list of panel tables", "seams": "a list of seam tables"}
_PANEL_KEYS = {"name": "a string", "fabric": "a fabric preset name", "grain": "an angle in degrees",
               "placement": "a table", "edges": "a list of edge tables", "pin_edges": "a list of edge names"}
_PLACEMENT_KEYS = {"rotation": "[rx, ry, rz] in degrees", "translation": "[x, y, z] in metres", "wrap": "a table"}
_WRAP_KEYS = {"cylinder": {"type", "axis", "radius", "center"}, "cone": {"type", "center", "half_angle", "inner_radius"}}
_EDGE_KEYS = {"name": "a string", "kind": f"one of {', '.join(KINDS)}", "points": "a list of [x, y] points in metres"}
_SEAM_KEYS = {"a": "'panel.edge'", "b": "'panel.edge'", "orientation": "'same' or 'reversed'",
              "tolerance": "a length in metres"}


# ---------------------------------------------------------------------------------------------- placement
@dataclass(frozen=True)
class Wrap:
    """Optional bending of a panel onto a surface before it is rotated and translated.

    ``cylinder``: the panel is rolled onto a cylinder of ``radius`` [m] whose axis is parallel to the
    panel's ``axis`` ("y": vertical, the usual case for torso and legs; or "x"); the panel touches the
    cylinder along the line ``x = center`` (axis "y") or ``y = center`` (axis "x") and curls towards
    -z (behind the panel, where the body is). Lengths in the panel are kept (isometric).

    ``cone``: a flare around the point ``center`` (x, y) of the panel: a point at distance ρ from it
    moves down the panel's -z by ``(ρ - inner_radius)·cos(half_angle)`` and in by
    ``(ρ - inner_radius)·(1 - sin(half_angle))``: distances measured from the inner circle are kept,
    circles are shortened by up to ``sin(half_angle)`` (the solver relaxes this). Used to hang circle
    skirts and capes from a waist or neck ring without starting flat through the arms.
    """

    type: str
    radius: float = 0.0
    axis: str = "y"
    center: tuple = (0.0,)
    half_angle: float = 90.0
    inner_radius: float = 0.0

    def apply(self, xy: np.ndarray) -> np.ndarray:
        """Local 3D points (N, 3) [m] of panel points xy (N, 2) [m], before rotation/translation."""
        x, y = xy[:, 0], xy[:, 1]
        if self.type == "cylinder":
            r, c = self.radius, self.center[0]
            if self.axis == "y":
                th = (x - c) / r
                return np.stack([c + r * np.sin(th), y, r * np.cos(th) - r], axis=1)
            th = (y - c) / r
            return np.stack([x, c + r * np.sin(th), r * np.cos(th) - r], axis=1)
        c = np.asarray(self.center, dtype=np.float64)
        d = xy - c
        rho = np.linalg.norm(d, axis=1)
        a = math.radians(self.half_angle)
        s = np.maximum(rho - self.inner_radius, 0.0)
        g = np.where(rho > self.inner_radius, self.inner_radius + s * math.sin(a), rho)
        k = np.divide(g, rho, out=np.ones_like(rho), where=rho > 0)
        out = np.empty((len(xy), 3))
        out[:, :2] = c + k[:, None] * d
        out[:, 2] = -s * math.cos(a)
        return out

    def second_derivative_bound(self, xy: np.ndarray) -> float:
        """M [1/m]: a bound on |d²F/dt²| along any unit direction of the panel, for the wrap map F over
        the panel points ``xy`` (used to bound linear-interpolation error by M·d²/2).

        Cylinder: F is an isometry onto a cylinder, whose normal curvature is at most 1/radius.
        Cone: F(p) = c + k(ρ)(p − c) − (ρ − ρ0)·cos α·ẑ with k = sin α + ρ0(1 − sin α)/ρ; with
        |ρ'| ≤ 1, |ρ''| ≤ 1/ρ, |k'| = ρ0(1 − sin α)/ρ², |k''| = 2ρ0(1 − sin α)/ρ³ the in-plane part is
        bounded by |k''|ρ + |k'| + 2|k'| ... = 5ρ0(1 − sin α)/ρ² and the out-of-plane part by cos α/ρ,
        at the smallest ρ of the panel (which must be ≥ ρ0: inside ρ0 the map has a kink).
        """
        if self.type == "cylinder":
            return 1.0 / self.radius
        rho = np.linalg.norm(xy - np.asarray(self.center), axis=1)
        r_min = float(rho.min())
        if r_min < self.inner_radius * (1 - 1e-9) or r_min <= 0:
            return math.inf
        a = math.radians(self.half_angle)
        return 5.0 * self.inner_radius * (1 - math.sin(a)) / r_min**2 + math.cos(a) / r_min


@dataclass(frozen=True)
class Placement:
    """Where a panel sits around the body: optional wrap, then rotation, then translation.

    Attributes:
        rotation: (rx, ry, rz) [degrees], applied about the world X, then Y, then Z axes (R = Rz·Ry·Rx).
        translation: (x, y, z) [m] of the panel's origin after rotation.
        wrap: optional :class:`Wrap`.
    """

    rotation: tuple = (0.0, 0.0, 0.0)
    translation: tuple = (0.0, 0.0, 0.0)
    wrap: Wrap | None = None

    @property
    def matrix(self) -> np.ndarray:
        rx, ry, rz = (math.radians(a) for a in self.rotation)
        cx, sx, cy, sy, cz, sz = math.cos(rx), math.sin(rx), math.cos(ry), math.sin(ry), math.cos(rz), math.sin(rz)
        Rx = np.array([[1, 0, 0], [0, cx, -sx], [0, sx, cx]])
        Ry = np.array([[cy, 0, sy], [0, 1, 0], [-sy, 0, cy]])
        Rz = np.array([[cz, -sz, 0], [sz, cz, 0], [0, 0, 1]])
        return Rz @ Ry @ Rx

    def apply(self, xy: np.ndarray) -> np.ndarray:
        """World positions (N, 3) [m] of panel points xy (N, 2) [m]."""
        xy = np.asarray(xy, dtype=np.float64)
        local = self.wrap.apply(xy) if self.wrap is not None else np.column_stack([xy, np.zeros(len(xy))])
        return local @ self.matrix.T + np.asarray(self.translation, dtype=np.float64)

    def second_derivative_bound(self, xy: np.ndarray) -> float:
        """See :meth:`Wrap.second_derivative_bound`; 0 for a flat placement (rotation and translation are affine)."""
        return 0.0 if self.wrap is None else self.wrap.second_derivative_bound(xy)


# ---------------------------------------------------------------------------------------------- panels, seams
@dataclass
class Panel:
    """A closed outline (edges listed counter-clockwise, so the panel's front faces +z) and its placement.

    Attributes:
        name: panel name. edges: list of :class:`~clothsim.garments.curves.Edge`, edge i ends where
        edge i+1 starts. placement: :class:`Placement`. fabric: preset name or None (the pattern's).
        grain: angle [degrees] of the warp from the panel's +x axis (counter-clockwise); 90 = warp runs
        along +y. pin_edges: names of edges whose vertices are pinned where they are placed.
    """

    name: str
    edges: list
    placement: Placement = field(default_factory=Placement)
    fabric: str | None = None
    grain: float = 90.0
    pin_edges: tuple = ()

    def edge_index(self, ref) -> int:
        """Index of an edge given by name or index; raises KeyError."""
        if isinstance(ref, int) or (isinstance(ref, str) and ref.isdigit()):
            i = int(ref)
            if 0 <= i < len(self.edges):
                return i
            raise KeyError(ref)
        for i, e in enumerate(self.edges):
            if e.name == ref:
                return i
        raise KeyError(ref)

    def outline(self, segments: int = 32) -> np.ndarray:
        """(K, 2) closed polyline [m] (first point not repeated) following the edges."""
        return np.concatenate([e.polyline(segments)[:-1] for e in self.edges])

    @property
    def area(self) -> float:
        p = self.outline()
        return 0.5 * float(np.sum(p[:, 0] * np.roll(p[:, 1], -1) - np.roll(p[:, 0], -1) * p[:, 1]))


@dataclass(frozen=True)
class Seam:
    """Edge ``a`` of panel ``a_panel`` sewn to edge ``b`` of panel ``b_panel``.

    ``orientation`` "reversed": a's start meets b's end (the usual case for two panels facing each
    other, both outlined counter-clockwise); "same": a's start meets b's start.
    """

    a_panel: int
    a_edge: int
    b_panel: int
    b_edge: int
    orientation: str = "reversed"
    tolerance: float = SEAM_TOL


@dataclass
class Pattern:
    """A garment's sewing pattern: panels and seams (validated), and the fabric preset name.

    Build meshes with :meth:`mesh` (one resolution) or :meth:`hierarchy` (several, with mappings).
    """

    name: str
    panels: list
    seams: list
    fabric: str = "cotton"
    description: str = ""
    source: str = "<pattern>"

    def mesh(self, edge_length: float, *, min_angle: float = 30.0):
        """The garment triangulated at a target edge length [m] (see :func:`clothsim.garments.mesh.mesh_pattern`)."""
        from .mesh import mesh_pattern

        return mesh_pattern(self, edge_length, min_angle=min_angle)

    def hierarchy(self, levels=(0.04, 0.02, 0.01, 0.005), *, min_angle: float = 30.0):
        """A :class:`~clothsim.garments.hierarchy.GarmentHierarchy` at these edge lengths [m], coarse to fine (built lazily)."""
        from .hierarchy import GarmentHierarchy

        return GarmentHierarchy(self, levels, min_angle=min_angle)

    def panel_index(self, name: str) -> int:
        for i, p in enumerate(self.panels):
            if p.name == name:
                return i
        raise KeyError(name)


# ---------------------------------------------------------------------------------------------- loading
def load_pattern(path) -> Pattern:
    """Load and validate a pattern file (``.toml`` or ``.json``); raises InputError naming file and key."""
    path = Path(path)
    if not path.is_file():
        raise InputError(f"{path}: pattern file not found")
    try:
        if path.suffix.lower() == ".json":
            data = json.loads(path.read_text())
        elif path.suffix.lower() == ".toml":
            data = tomllib.loads(path.read_text())
        else:
            raise InputError(f"{path}: unknown pattern file type {path.suffix!r}; expected .toml or .json")
    except (tomllib.TOMLDecodeError, json.JSONDecodeError, UnicodeDecodeError) as e:
        raise InputError(f"{path}: not valid {path.suffix[1:].upper()}: {e}") from None
    return pattern_from_dict(data, source=str(path))


def pattern_from_dict(data, source: str = "<pattern>") -> Pattern:
    """Validate a parsed pattern (dict with the file's keys) and build a :class:`Pattern`."""
    ctx = _Ctx(source)
    ctx.table(data, "", _TOP_KEYS)
    name = ctx.string(data.get("name", Path(source).stem), "name")
    fabric = ctx.fabric(data.get("fabric", "cotton"), "fabric")
    panels_raw = ctx.require(data, "panels", "", "a list of panel tables")
    if not isinstance(panels_raw, list) or not panels_raw:
        ctx.fail("panels", "a non-empty list of panel tables", panels_raw)
    panels = [_panel(ctx, p, f"panels[{i}]") for i, p in enumerate(panels_raw)]
    names = [p.name for p in panels]
    for i, n in enumerate(names):
        if names.index(n) != i:
            ctx.fail(f"panels[{i}].name", "a panel name used once", n)
    seams_raw = data.get("seams", [])
    if not isinstance(seams_raw, list):
        ctx.fail("seams", "a list of seam tables", seams_raw)
    seams, used = [], {}
    for i, s in enumerate(seams_raw):
        seam = _seam(ctx, s, f"seams[{i}]", panels)
        for side, (pi, ei) in (("a", (seam.a_panel, seam.a_edge)), ("b", (seam.b_panel, seam.b_edge))):
            if (pi, ei) in used:
                ctx.fail(f"seams[{i}].{side}", f"an edge that is in no other seam (already in seams[{used[(pi, ei)]}])",
                         f"{panels[pi].name}.{panels[pi].edges[ei].name}")
            used[(pi, ei)] = i
        seams.append(seam)
    return Pattern(name=name, panels=panels, seams=seams, fabric=fabric,
                   description=str(data.get("description", "")), source=source)


class _Ctx:
    """Error helper: every message starts with the file and the key path."""

    def __init__(self, source):
        self.source = source

    def fail(self, key, expected, got=None, why=None):
        msg = f"{self.source}: {key}: "
        msg += why if why else f"expected {expected}, got {got!r}"
        if why and expected:
            msg += f"; expected {expected}"
        raise InputError(msg)

    def table(self, d, where, keys):
        if not isinstance(d, dict):
            self.fail(where or "top level", "a table", type(d).__name__)
        for k in d:
            if k not in keys:
                self.fail(f"{where + '.' if where else ''}{k}", None,
                          why=f"unknown key {k!r}; expected one of {', '.join(sorted(keys))}")

    def require(self, d, k, where, expected):
        if k not in d:
            self.fail(f"{where + '.' if where else ''}{k}", expected, why="missing key")
        return d[k]

    def string(self, v, key):
        if not isinstance(v, str) or not v or "." in v:
            self.fail(key, "a non-empty string without '.'", v)
        return v

    def number(self, v, key, lo=-math.inf, hi=math.inf, lo_open=False, expected="a number"):
        if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v):
            self.fail(key, f"a finite number ({expected})", v)
        if v < lo or v > hi or (lo_open and v == lo):
            self.fail(key, expected, v)
        return float(v)

    def vector(self, v, key, n, expected):
        if not isinstance(v, list) or len(v) != n:
            self.fail(key, expected, v)
        return tuple(self.number(x, f"{key}[{i}]", expected=expected) for i, x in enumerate(v))

    def fabric(self, v, key):
        if not isinstance(v, str):
            self.fail(key, "a fabric preset name", v)
        try:
            Fabric.preset(v)
        except InputError as e:
            self.fail(key, None, why=str(e))
        return v


def _panel(ctx: _Ctx, d, where) -> Panel:
    ctx.table(d, where, _PANEL_KEYS)
    name = ctx.string(ctx.require(d, "name", where, "a string"), f"{where}.name")
    where = f"{where} '{name}'"
    fabric = ctx.fabric(d["fabric"], f"{where}.fabric") if "fabric" in d else None
    grain = ctx.number(d.get("grain", 90.0), f"{where}.grain", expected="an angle in degrees")
    placement = _placement(ctx, d.get("placement", {}), f"{where}.placement")
    edges_raw = ctx.require(d, "edges", where, "a list of edge tables")
    if not isinstance(edges_raw, list) or not edges_raw:
        ctx.fail(f"{where}.edges", "a non-empty list of edge tables", edges_raw)
    edges = []
    for i, e in enumerate(edges_raw):
        ew = f"{where}.edges[{i}]"
        ctx.table(e, ew, _EDGE_KEYS)
        ename = ctx.string(e.get("name", f"e{i}"), f"{ew}.name")
        pts = ctx.require(e, "points", ew, "a list of [x, y] points")
        if not isinstance(pts, list) or not 2 <= len(pts) <= 4:
            ctx.fail(f"{ew}.points", "2 to 4 points [x, y] in metres", pts)
        pts = np.array([ctx.vector(p, f"{ew}.points[{j}]", 2, "[x, y] in metres") for j, p in enumerate(pts)])
        kind = e.get("kind", {2: "line", 3: "quadratic", 4: "cubic"}[len(pts)])
        if kind not in KINDS:
            ctx.fail(f"{ew}.kind", f"one of {', '.join(KINDS)}", kind)
        if KINDS[kind] != len(pts):
            ctx.fail(f"{ew}.points", f"{KINDS[kind]} points for a {kind!r} edge", f"{len(pts)} points")
        try:
            edge = Edge(ename, kind, pts)
        except ValueError as err:
            ctx.fail(f"{ew}.points", None, why=str(err))
        if not edge.length > 1e-6:
            ctx.fail(f"{ew}.points", "an edge of positive length (> 1e-6 m)", f"length {edge.length:.3g} m")
        if any(x.name == ename for x in edges):
            ctx.fail(f"{ew}.name", "an edge name used once in its panel", ename)
        edges.append(edge)
    for i, e in enumerate(edges):
        nxt = edges[(i + 1) % len(edges)]
        gap = float(np.linalg.norm(e.end - nxt.start))
        if gap > CLOSE_TOL:
            ctx.fail(f"{where}.edges[{i}]", "a closed outline (each edge ends where the next one starts, the last "
                     "where the first starts)",
                     why=f"outline is not closed: edge {i} {e.name!r} ends at {e.end.tolist()} but edge "
                     f"{(i + 1) % len(edges)} {nxt.name!r} starts at {nxt.start.tolist()} (gap {gap:.3g} m)")
    panel = Panel(name=name, edges=edges, placement=placement, fabric=fabric, grain=grain)
    if len(edges) < 2 and not any(e.curved for e in edges):
        ctx.fail(f"{where}.edges", "an outline enclosing an area", why="a single straight edge encloses nothing")
    _check_simple(ctx, panel, where)
    if panel.area <= 0:
        ctx.fail(f"{where}.edges", "edges listed counter-clockwise (seen from +z, the panel's outside)",
                 why=f"outline runs clockwise (signed area {panel.area:.4g} m^2)")
    pins = d.get("pin_edges", [])
    if not isinstance(pins, list):
        ctx.fail(f"{where}.pin_edges", "a list of edge names", pins)
    for j, ref in enumerate(pins):
        try:
            panel.edge_index(ref)
        except KeyError:
            ctx.fail(f"{where}.pin_edges[{j}]", f"an edge of this panel ({', '.join(e.name for e in edges)})", ref)
    panel.pin_edges = tuple(edges[panel.edge_index(r)].name for r in pins)
    if placement.wrap is not None and placement.wrap.type == "cylinder":
        w = placement.wrap
        coord = panel.outline()[:, 0 if w.axis == "y" else 1]
        reach = float(np.max(np.abs(coord - w.center[0])))
        if reach >= math.pi * w.radius:
            ctx.fail(f"{where}.placement.wrap.radius", f"a radius > {reach / math.pi:.4g} m (the panel reaches "
                     f"{reach:.4g} m from the wrap line; it would wrap more than half a turn each way)", w.radius)
    return panel


def _check_simple(ctx, panel, where):
    """The outline must not cross itself (checked on its polyline, 32 segments per curved edge)."""
    p = panel.outline()
    q = np.roll(p, -1, axis=0)
    n = len(p)
    i, j = np.triu_indices(n, k=2)
    keep = ~((i == 0) & (j == n - 1))  # first and last segments share a point
    i, j = i[keep], j[keep]

    def orient(a, b, c):
        return (b[:, 0] - a[:, 0]) * (c[:, 1] - a[:, 1]) - (b[:, 1] - a[:, 1]) * (c[:, 0] - a[:, 0])

    d1, d2 = orient(p[i], q[i], p[j]), orient(p[i], q[i], q[j])
    d3, d4 = orient(p[j], q[j], p[i]), orient(p[j], q[j], q[i])
    cross = (d1 * d2 < 0) & (d3 * d4 < 0)
    if cross.any():
        k = int(np.nonzero(cross)[0][0])
        ctx.fail(f"{where}.edges", "an outline that does not cross itself",
                 why=f"outline crosses itself near {np.round(p[i[k]], 4).tolist()} and {np.round(p[j[k]], 4).tolist()}")


def _placement(ctx, d, where) -> Placement:
    ctx.table(d, where, _PLACEMENT_KEYS)
    rot = ctx.vector(d.get("rotation", [0.0, 0.0, 0.0]), f"{where}.rotation", 3, "[rx, ry, rz] in degrees")
    tr = ctx.vector(d.get("translation", [0.0, 0.0, 0.0]), f"{where}.translation", 3, "[x, y, z] in metres")
    wrap = None
    if "wrap" in d:
        w, ww = d["wrap"], f"{where}.wrap"
        if not isinstance(w, dict):
            ctx.fail(ww, "a table", w)
        kind = w.get("type", "cylinder")
        if kind not in _WRAP_KEYS:
            ctx.fail(f"{ww}.type", "'cylinder' or 'cone'", kind)
        ctx.table(w, ww, _WRAP_KEYS[kind])
        if kind == "cylinder":
            axis = w.get("axis", "y")
            if axis not in ("x", "y"):
                ctx.fail(f"{ww}.axis", "'x' or 'y' (an axis of the panel plane)", axis)
            radius = ctx.number(ctx.require(w, "radius", ww, "a radius in metres"), f"{ww}.radius", lo=0.0,
                                lo_open=True, expected="a radius > 0 in metres")
            center = ctx.number(w.get("center", 0.0), f"{ww}.center", expected="a coordinate in metres")
            wrap = Wrap("cylinder", radius=radius, axis=axis, center=(center,))
        else:
            center = ctx.vector(w.get("center", [0.0, 0.0]), f"{ww}.center", 2, "[x, y] in metres")
            half = ctx.number(ctx.require(w, "half_angle", ww, "an angle in degrees"), f"{ww}.half_angle", lo=0.0,
                              hi=90.0, lo_open=True, expected="an angle in (0, 90] degrees")
            inner = ctx.number(w.get("inner_radius", 0.0), f"{ww}.inner_radius", lo=0.0,
                               expected="a radius >= 0 in metres")
            wrap = Wrap("cone", center=center, half_angle=half, inner_radius=inner)
    return Placement(rotation=rot, translation=tr, wrap=wrap)


def _seam(ctx, d, where, panels) -> Seam:
    ctx.table(d, where, _SEAM_KEYS)
    refs = []
    for side in ("a", "b"):
        ref = ctx.require(d, side, where, "'panel.edge'")
        if not isinstance(ref, str) or ref.count(".") != 1:
            ctx.fail(f"{where}.{side}", "'panel.edge' (edge by name or index)", ref)
        pname, ename = ref.split(".")
        pi = next((i for i, p in enumerate(panels) if p.name == pname), None)
        if pi is None:
            ctx.fail(f"{where}.{side}", f"a panel of this pattern ({', '.join(p.name for p in panels)})",
                     why=f"unknown panel {pname!r}")
        try:
            ei = panels[pi].edge_index(ename)
        except KeyError:
            ctx.fail(f"{where}.{side}", f"an edge of panel {pname!r} ({', '.join(e.name for e in panels[pi].edges)})",
                     why=f"unknown edge {ename!r}")
        refs.append((pi, ei))
    if refs[0] == refs[1]:
        ctx.fail(where, "two different edges", why=f"seam joins edge {d['a']!r} to itself")
    orient = d.get("orientation", "reversed")
    if orient not in ("same", "reversed"):
        ctx.fail(f"{where}.orientation", "'same' or 'reversed'", orient)
    tol = ctx.number(d.get("tolerance", SEAM_TOL), f"{where}.tolerance", lo=0.0, expected="a length >= 0 in metres")
    (pa, ea), (pb, eb) = refs
    la, lb = panels[pa].edges[ea].length, panels[pb].edges[eb].length
    if abs(la - lb) > tol:
        ctx.fail(where, f"edges whose lengths differ by at most {tol:.4g} m (the seam's tolerance)",
                 why=f"seam joins edges of different lengths: {d['a']} is {la:.4f} m, {d['b']} is {lb:.4f} m")
    return Seam(pa, ea, pb, eb, orient, tol)
