"""Triangulating a pattern: every panel at a target edge length, seams matched vertex for vertex.

Boundary first: every outline edge is split into ``n`` pieces of equal arc length, ``n`` chosen from
the target edge length ``h``; the two edges of a seam get the same ``n`` (from their mean length), so
vertex k of one meets vertex k (or n−k, reversed) of the other at the same arc-length fraction.
Then Shewchuk's Triangle fills each panel with a quality constrained Delaunay mesh (minimum angle,
maximum area √3/4·h², no extra vertices on the boundary), and a few sweeps of Laplacian smoothing of
the interior vertices even the triangles out.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from ..errors import InputError


@dataclass
class GarmentMesh:
    """A pattern triangulated at one edge length: all panels in one mesh, placed around the body.

    Attributes:
        name: garment name. edge_length: target edge length h [m].
        vertices: (N, 3) float64 placed positions [m] (world, Y up).
        triangles: (M, 3) int64, counter-clockwise in panel space (front of the panel = outside).
        panel_xy: (N, 2) float64 position in its panel's own 2D coordinates [m].
        rest_uv: (N, 2) float64 rest position in material space [m]: u along the warp (the panel's
            grain), v along the weft; what :class:`clothsim.Cloth` takes as ``rest_uv``.
        panel_id: (N,) int64 panel of each vertex; triangle_panel: (M,) int64 panel of each triangle.
        seams: (S, 2) int64 vertex pairs sewn together (a[k] meets b[k]).
        seam_ids: (S,) int64 the pattern seam each pair belongs to.
        pins: (P,) int64 pinned vertices (on the panels' ``pin_edges``).
        edge_vertices: {(panel, edge): (n+1,) int64} vertices along each outline edge, start to end.
        min_angle: (panels,) float64 smallest triangle angle of each panel [degrees].
        panel_names, panel_fabrics: per panel; fabric: the pattern's fabric preset name.
        stats: {"mean_edge", "min_edge", "max_edge"} rest edge lengths [m].
    """

    name: str
    edge_length: float
    vertices: np.ndarray
    triangles: np.ndarray
    panel_xy: np.ndarray
    rest_uv: np.ndarray
    panel_id: np.ndarray
    triangle_panel: np.ndarray
    seams: np.ndarray
    seam_ids: np.ndarray
    pins: np.ndarray
    edge_vertices: dict
    min_angle: np.ndarray
    panel_names: list
    panel_fabrics: list
    fabric: str = "cotton"
    stats: dict = field(default_factory=dict)

    @property
    def vertex_count(self) -> int:
        return len(self.vertices)

    def seam_gaps(self, positions=None) -> np.ndarray:
        """(S,) distance [m] between the two vertices of every seam pair at ``positions`` (default: placed)."""
        x = self.vertices if positions is None else np.asarray(positions)
        return np.linalg.norm(x[self.seams[:, 0]] - x[self.seams[:, 1]], axis=1)

    def triangle_angles(self) -> np.ndarray:
        """(M, 3) angles [degrees] of every triangle in its rest (panel) shape."""
        return triangle_angles(self.panel_xy, self.triangles)

    def to_cloth(self, fabric=None, *, pin: bool = True, name: str | None = None):
        """A :class:`clothsim.Cloth` of this mesh: placed vertices, rest_uv, seams (zero-length springs)
        and, if ``pin``, the pins at their placed positions. ``fabric``: a preset name, Fabric or dict;
        default the pattern's fabric. (A Cloth has one fabric: per-panel fabrics are not applied.)"""
        from ..cloth import Cloth

        if fabric is None and len(set(self.panel_fabrics)) > 1:
            import warnings

            warnings.warn(f"{self.name}: panels use fabrics {sorted(set(self.panel_fabrics))} but a Cloth has one "
                          f"fabric; simulating all panels as {self.fabric!r}", stacklevel=2)
        cloth = Cloth.from_mesh(self.vertices, self.triangles, rest_uv=self.rest_uv,
                                fabric=self.fabric if fabric is None else fabric, name=name or self.name)
        if len(self.seams):
            cloth.add_seam(self.seams[:, 0], self.seams[:, 1])
        if pin and len(self.pins):
            cloth.pin(self.pins)
        return cloth


def triangle_angles(xy: np.ndarray, tris: np.ndarray) -> np.ndarray:
    """(M, 3) interior angles [degrees] of triangles ``tris`` over 2D points ``xy``."""
    p = xy[tris]
    out = np.empty((len(tris), 3))
    for k in range(3):
        u = p[:, (k + 1) % 3] - p[:, k]
        v = p[:, (k + 2) % 3] - p[:, k]
        cos = np.einsum("ij,ij->i", u, v) / (np.linalg.norm(u, axis=1) * np.linalg.norm(v, axis=1))
        out[:, k] = np.degrees(np.arccos(np.clip(cos, -1.0, 1.0)))
    return out


def edge_segments(pattern, edge_length: float) -> dict:
    """{(panel, edge): n} pieces each outline edge is split into at target length h [m]; both edges of
    a seam get the same n = max(n_min, round(mean length / h)); n_min = 2 for curved edges, else 1."""
    h = edge_length
    n = {}
    for pi, panel in enumerate(pattern.panels):
        for ei, e in enumerate(panel.edges):
            n[(pi, ei)] = max(2 if e.curved else 1, int(round(e.length / h)))
    for s in pattern.seams:
        a, b = pattern.panels[s.a_panel].edges[s.a_edge], pattern.panels[s.b_panel].edges[s.b_edge]
        m = max(2 if (a.curved or b.curved) else 1, int(round(0.5 * (a.length + b.length) / h)))
        n[(s.a_panel, s.a_edge)] = n[(s.b_panel, s.b_edge)] = m
    return n


def mesh_pattern(pattern, edge_length: float, *, min_angle: float = 30.0, smooth_sweeps: int = 4) -> GarmentMesh:
    """Triangulate every panel of ``pattern`` at target edge length ``edge_length`` [m].

    ``min_angle`` [degrees] is asked of Triangle (its guarantee holds away from the fixed boundary
    vertices; the reached minimum per panel is in ``GarmentMesh.min_angle``).
    """
    import triangle as tr

    try:
        h = math.nan if isinstance(edge_length, bool) else float(edge_length)
    except (TypeError, ValueError):
        h = math.nan
    if not (math.isfinite(h) and h > 0):
        raise InputError(f"{pattern.source}: edge_length must be a positive length in metres, got {edge_length!r}")
    if not (0 < min_angle <= 34):
        raise InputError(f"{pattern.source}: min_angle must be in (0, 34] degrees (Triangle's limit), got {min_angle!r}")
    nseg = edge_segments(pattern, h)
    area_est = sum(p.area for p in pattern.panels) / (math.sqrt(3) / 4 * h * h)
    if area_est > 5e6:
        raise InputError(f"{pattern.source}: edge_length {h} m gives about {area_est:.3g} triangles; expected "
                         "a coarser edge length (at most 5e6 triangles)")
    max_area = 1.5 * math.sqrt(3) / 4 * h * h  # Triangle stays well under its area bound: this gives mean edges ~h
    verts_xy, tris, pid, tpid, edge_vertices, min_ang = [], [], [], [], {}, []
    offset = 0
    for pi, panel in enumerate(pattern.panels):
        pts, ids = [], []
        for ei, e in enumerate(panel.edges):
            n = nseg[(pi, ei)]
            p = e.at_fractions(np.arange(n) / n)
            ids.append(len(pts) + np.arange(n + 1))
            pts.extend(p)
        nb = len(pts)
        for ei in range(len(panel.edges)):
            ids[ei] = ids[ei] % nb  # the last edge's end is the first edge's start
        pts = np.asarray(pts)
        segs = np.stack([np.arange(nb), (np.arange(nb) + 1) % nb], axis=1)
        out = tr.triangulate({"vertices": pts, "segments": segs}, f"pq{min_angle:.6f}a{max_area:.15f}YQ")
        xy = np.asarray(out["vertices"], dtype=np.float64)
        t = np.asarray(out["triangles"], dtype=np.int64)
        if len(xy) < nb or not np.allclose(xy[:nb], pts):
            raise InputError(f"{pattern.source}: panel {panel.name!r}: triangulation moved boundary vertices")
        xy = _smooth(xy, t, nb, smooth_sweeps)
        # keep counter-clockwise winding in panel space
        a, b, c = xy[t[:, 0]], xy[t[:, 1]], xy[t[:, 2]]
        cw = ((b - a)[:, 0] * (c - a)[:, 1] - (b - a)[:, 1] * (c - a)[:, 0]) < 0
        t[cw] = t[cw][:, [0, 2, 1]]
        min_ang.append(float(triangle_angles(xy, t).min()))
        for ei in range(len(panel.edges)):
            edge_vertices[(pi, ei)] = ids[ei] + offset
        verts_xy.append(xy)
        tris.append(t + offset)
        pid.append(np.full(len(xy), pi, dtype=np.int64))
        tpid.append(np.full(len(t), pi, dtype=np.int64))
        offset += len(xy)
    panel_xy = np.concatenate(verts_xy)
    panel_id = np.concatenate(pid)
    vertices = np.empty((len(panel_xy), 3))
    rest_uv = np.empty_like(panel_xy)
    for pi, panel in enumerate(pattern.panels):
        m = panel_id == pi
        vertices[m] = panel.placement.apply(panel_xy[m])
        g = math.radians(panel.grain)  # warp direction (cos g, sin g) in the panel plane
        warp, weft = np.array([math.cos(g), math.sin(g)]), np.array([-math.sin(g), math.cos(g)])
        rest_uv[m] = np.stack([panel_xy[m] @ warp, panel_xy[m] @ weft], axis=1)
    pairs, sid = [], []
    for k, s in enumerate(pattern.seams):
        va, vb = edge_vertices[(s.a_panel, s.a_edge)], edge_vertices[(s.b_panel, s.b_edge)]
        if s.orientation == "reversed":
            vb = vb[::-1]
        pairs.append(np.stack([va, vb], axis=1))
        sid.append(np.full(len(va), k, dtype=np.int64))
    if pairs:
        seams = np.concatenate(pairs)
        sid = np.concatenate(sid)
        _, first = np.unique(np.sort(seams, axis=1), axis=0, return_index=True)  # corners shared by two seams
        first = np.sort(first)
        seams, sid = seams[first], sid[first]
    else:
        seams, sid = np.zeros((0, 2), dtype=np.int64), np.zeros(0, dtype=np.int64)
    pins = [edge_vertices[(pi, p.edge_index(name))] for pi, p in enumerate(pattern.panels) for name in p.pin_edges]
    pins = np.unique(np.concatenate(pins)) if pins else np.zeros(0, dtype=np.int64)
    all_tris = np.concatenate(tris)
    lengths = np.linalg.norm(panel_xy[all_tris[:, [1, 2, 0]]] - panel_xy[all_tris], axis=2)
    stats = {"mean_edge": float(lengths.mean()), "min_edge": float(lengths.min()), "max_edge": float(lengths.max())}
    return GarmentMesh(
        name=pattern.name, edge_length=h, vertices=vertices, triangles=all_tris, panel_xy=panel_xy,
        rest_uv=rest_uv, panel_id=panel_id, triangle_panel=np.concatenate(tpid), seams=seams, seam_ids=sid,
        pins=pins, edge_vertices=edge_vertices, min_angle=np.asarray(min_ang),
        panel_names=[p.name for p in pattern.panels], panel_fabrics=[p.fabric or pattern.fabric for p in pattern.panels],
        fabric=pattern.fabric, stats=stats)


def _smooth(xy: np.ndarray, t: np.ndarray, nb: int, sweeps: int) -> np.ndarray:
    """Move interior vertices (index >= nb) towards the mean of their neighbours, keeping a move only
    where it does not lower the smallest angle of the triangles around the vertex (checked per sweep)."""
    if sweeps <= 0 or len(xy) == nb:
        return xy
    e = np.concatenate([t[:, [0, 1]], t[:, [1, 2]], t[:, [2, 0]]])
    e = np.concatenate([e, e[:, ::-1]])
    n = len(xy)
    deg = np.bincount(e[:, 0], minlength=n).astype(np.float64)
    x = xy.copy()
    for _ in range(sweeps):
        s = np.zeros_like(x)
        np.add.at(s, e[:, 0], x[e[:, 1]])
        cand = x.copy()
        cand[nb:] = s[nb:] / deg[nb:, None]
        # accept per triangle-star: a vertex moves only if every triangle around it keeps min angle >= before
        before = triangle_angles(x, t).min(axis=1)
        after = triangle_angles(cand, t).min(axis=1)
        a, b, c = cand[t[:, 0]], cand[t[:, 1]], cand[t[:, 2]]
        orient0 = np.sign(_cross2(x[t[:, 1]] - x[t[:, 0]], x[t[:, 2]] - x[t[:, 0]]))
        flipped = np.sign(_cross2(b - a, c - a)) != orient0
        worse = (after < np.minimum(before, 30.0)) | flipped
        bad = np.zeros(n, dtype=bool)
        bad[t[worse].ravel()] = True
        bad[:nb] = True
        cand[bad] = x[bad]
        for _ in range(10):  # moves were judged together; undo those whose mixed result got worse
            after = triangle_angles(cand, t).min(axis=1)
            flipped = np.sign(_cross2(cand[t[:, 1]] - cand[t[:, 0]], cand[t[:, 2]] - cand[t[:, 0]])) != orient0
            worse = (after < np.minimum(before, 30.0)) | flipped
            if not worse.any():
                break
            idx = t[worse].ravel()
            cand[idx] = x[idx]
        x = cand
    return x


def _cross2(u, v):
    return u[:, 0] * v[:, 1] - u[:, 1] * v[:, 0]
