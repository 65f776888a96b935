"""ClothModel: the constant data of every cloth in a simulator, as flat device arrays.

Arrays are flat over all cloths (``cloth_offsets`` gives each cloth's first vertex), so several
garments, or many independent small cloths, share every kernel launch. Material numbers live in
small per-cloth arrays (no compile-time constants): changing a fabric rewrites them and recompiles
nothing.
"""

from __future__ import annotations

import math

import numpy as np
import warp as wp

from .cloth import Cloth
from .fabric import Fabric
from .coloring import color_graph
from .topology import adjacency, bending_stencils, check_coloring, csr, unique_edges

# Bending calibration: per-edge stiffness k_e = BENDING_C * 3|e|²/(A1+A2) * B(φ_e), i.e. with
# BENDING_C = 1/3, k_e = B(φ_e)·|e|²/(A1+A2). With that value an isometric cylinder of curvature κ,
# laid on a near-equilateral lattice in either orientation or on a right-triangle grid, stores the
# continuum energy ½·B·κ²·area within 1 % (tests/test_bending.py); the common "discrete shells"
# factor (BENDING_C = 1) makes meshes three times too stiff. tests/test_cantilever.py checks the
# rigidity the ASTM cantilever recovers on two mesh orientations.
BENDING_C = 1.0 / 3.0
# seam spring k = scale * (C11 + C22)/2 [N/m] per sewn pair. At scale 1 a seam was as soft as the cloth
# beside it and sewn T-shirt seams held 9 mm open under their load at rest (jersey, 40 mm mesh); at 10
# they hold 1.1 mm, and the implicit per-vertex solve stays stable while they close from 0.34 m.
SEAM_STIFFNESS_SCALE = 10.0


class ClothModel:
    """Constant arrays of all cloths in one simulator (SI units; shapes below, N vertices, M triangles).

    Vertex arrays: ``mass`` (N,) [kg], ``inv_mass`` (N,) [1/kg] (0 for pinned), ``cloth_id`` (N,),
    ``area`` (N,) [m²] (a third of the adjacent triangles' rest area).
    Triangle arrays: ``tri`` (M, 3), ``tri_dm_inv`` (M,) mat22, ``tri_area`` (M,) [m²], ``tri_cloth`` (M,).
    Bending: ``bend`` (B, 4) stencils, ``bend_k`` (B,) [N·m], ``bend_rest`` (B,) [rad].
    Seams: ``spring`` (S, 2), ``spring_k`` (S,) [N/m].
    Per cloth: ``mat_coef`` (C,) vec4 (C11, C12, C22, G) [N/m], ``mat_damping`` (C,) [s],
    ``mat_friction`` (C,), ``mat_thickness`` (C,) [m].
    Vertex→element adjacency (CSR, packed ``element*arity + local``): ``v_tri_*``, ``v_bend_*``, ``v_spring_*``.
    Colouring: ``color_vertices`` (free vertices grouped by colour), host ``color_ranges`` [(start, count)].
    """

    def __init__(self, cloths: list[Cloth], device):
        self.device = wp.get_device(device)
        self.cloths = list(cloths)
        counts = [c.vertex_count for c in self.cloths]
        self.cloth_offsets = np.concatenate([[0], np.cumsum(counts)]).astype(np.int64)
        n = int(self.cloth_offsets[-1])
        self.particle_count = n
        off = self.cloth_offsets

        x0 = np.concatenate([c.vertices for c in self.cloths])
        tri = np.concatenate([c.triangles + off[i] for i, c in enumerate(self.cloths)])
        tri_cloth = np.concatenate([np.full(len(c.triangles), i) for i, c in enumerate(self.cloths)])
        self.tri_count = len(tri)
        self.host_triangles = tri
        self.host_rest_positions = x0

        # rest shape per triangle: material-space 2D edge matrix Dm, its inverse and area
        dm = np.zeros((len(tri), 2, 2))
        start = 0
        for i, c in enumerate(self.cloths):
            t = c.triangles
            dm[start:start + len(t)] = _rest_edge_matrices(c)
            start += len(t)
        det = dm[:, 0, 0] * dm[:, 1, 1] - dm[:, 0, 1] * dm[:, 1, 0]
        area = 0.5 * np.abs(det)
        dm_inv = np.linalg.inv(dm)
        self.host_tri_area = area

        # lumped masses
        dens = np.array([c.fabric.density for c in self.cloths])[tri_cloth]
        v_area = np.zeros(n)
        np.add.at(v_area, tri.ravel(), np.repeat(area / 3.0, 3))
        mass = np.zeros(n)
        np.add.at(mass, tri.ravel(), np.repeat(area * dens / 3.0, 3))
        pinned = np.zeros(n, dtype=bool)
        pin_idx = [c.pins + off[i] for i, c in enumerate(self.cloths)]
        pin_idx = np.concatenate(pin_idx) if pin_idx else np.zeros(0, np.int64)
        pinned[pin_idx] = True
        inv_mass = np.where(pinned, 0.0, 1.0 / mass)
        self.host_mass = mass
        self.host_pinned = pinned

        # bending stencils and seams
        stencils, stencil_tris = bending_stencils(tri, return_triangles=True)
        self.host_bend = stencils
        self.host_bend_tris = stencil_tris
        springs = [c.seams + off[i] for i, c in enumerate(self.cloths) if len(c.seams)]
        springs = np.concatenate(springs) if springs else np.zeros((0, 2), np.int64)
        spring_cloth = np.searchsorted(off, springs[:, 0], side="right") - 1 if len(springs) else np.zeros(0, np.int64)
        self.host_springs = springs
        edges, _ = unique_edges(tri)
        self.host_edges = edges
        # the median rest edge length [m]: the scale the self-contact radius is compared with (the solve's CUDA
        # launch shape, clothsim.solver.vbd.TILE_CONTACT_RADIUS_EDGES)
        self.median_edge_length = (float(np.median(np.linalg.norm(x0[edges[:, 1]] - x0[edges[:, 0]], axis=1)))
                                   if len(edges) else 0.0)

        # vertex -> element adjacency (CSR)
        self.host_v_tri_offsets, v_tri = csr(tri.ravel(), np.arange(tri.size), n)
        self.host_v_bend_offsets, v_bend = csr(stencils.ravel(), np.arange(stencils.size), n)
        self.host_v_spring_offsets, v_spring = csr(springs.ravel(), np.arange(springs.size), n)

        # colouring of free vertices: no two vertices of one element share a colour
        # each cloth is coloured on its own (seams join vertices of one cloth), so a cloth's sweep order,
        # and on CPU its result, does not depend on which other cloths share the simulator
        colors = np.zeros(n, dtype=np.int32)
        for i, c in enumerate(self.cloths):
            st_i = bending_stencils(c.triangles)
            a_off, a_nb = adjacency(c.vertex_count, [c.triangles, st_i, c.seams])
            colors[off[i]:off[i + 1]] = color_graph(c.vertex_count, a_off, a_nb)
            check_coloring(a_off, a_nb, colors[off[i]:off[i + 1]])  # elements never span two cloths
        free = np.nonzero(~pinned)[0]
        order = free[np.lexsort((free, colors[free]))]
        ccount = np.bincount(colors[free], minlength=int(colors.max(initial=0)) + 1)
        starts = np.concatenate([[0], np.cumsum(ccount)[:-1]])
        self.color_ranges = [(int(s), int(c)) for s, c in zip(starts, ccount) if c > 0]
        self.host_colors = colors

        # pins
        pin_tgt = [c.pin_targets for c in self.cloths]
        pin_tgt = np.concatenate(pin_tgt) if pin_tgt else np.zeros((0, 3))
        self.host_pin_indices = pin_idx
        self.host_pin_targets = pin_tgt

        d = self.device
        f32 = np.float32
        self.tri = wp.array(tri.astype(np.int32), dtype=wp.vec3i, device=d)
        self.tri_dm_inv = wp.array(dm_inv.astype(f32), dtype=wp.mat22, device=d)
        self.tri_area = wp.array(area.astype(f32), dtype=float, device=d)
        self.tri_cloth = wp.array(tri_cloth.astype(np.int32), dtype=wp.int32, device=d)
        self.mass = wp.array(mass.astype(f32), dtype=float, device=d)
        self.inv_mass = wp.array(inv_mass.astype(f32), dtype=float, device=d)
        self.vertex_area = wp.array(v_area.astype(f32), dtype=float, device=d)
        vcl = np.searchsorted(off, np.arange(n), side="right") - 1
        self.host_vertex_cloth = vcl
        self.vertex_cloth = wp.array(vcl.astype(np.int32), dtype=wp.int32, device=d)
        self.bend = wp.array(stencils.astype(np.int32), dtype=wp.vec4i, device=d)
        self.bend_k = wp.zeros(len(stencils), dtype=float, device=d)
        self.bend_rest = wp.array(self._rest_angles().astype(f32), dtype=float, device=d)
        self.spring = wp.array(springs.astype(np.int32).reshape(-1, 2), dtype=wp.vec2i, device=d)
        self.spring_k = wp.zeros(len(springs), dtype=float, device=d)
        self.host_spring_cloth = spring_cloth
        self.v_tri_offsets = wp.array(self.host_v_tri_offsets.astype(np.int32), dtype=wp.int32, device=d)
        self.v_tri = wp.array(v_tri.astype(np.int32), dtype=wp.int32, device=d)
        self.v_bend_offsets = wp.array(self.host_v_bend_offsets.astype(np.int32), dtype=wp.int32, device=d)
        self.v_bend = wp.array(v_bend.astype(np.int32), dtype=wp.int32, device=d)
        self.v_spring_offsets = wp.array(self.host_v_spring_offsets.astype(np.int32), dtype=wp.int32, device=d)
        self.v_spring = wp.array(v_spring.astype(np.int32), dtype=wp.int32, device=d)
        # unique edges and vertex -> edge adjacency (edge-edge contacts, self and collider)
        e_off, v_edge = csr(edges.ravel(), np.arange(edges.size), n)
        self.edges = wp.array(edges.astype(np.int32).reshape(-1, 2), dtype=wp.vec2i, device=d)
        self.v_edge_offsets = wp.array(e_off.astype(np.int32), dtype=wp.int32, device=d)
        self.v_edge = wp.array(v_edge.astype(np.int32), dtype=wp.int32, device=d)
        self.color_vertices = wp.array(order.astype(np.int32), dtype=wp.int32, device=d)
        # each vertex's index in the pin list, -1 if free (the substep's predict kernel moves the pins)
        pin_slot = np.full(n, -1, dtype=np.int32)
        pin_slot[pin_idx] = np.arange(len(pin_idx), dtype=np.int32)
        self.pin_slot = wp.array(pin_slot, dtype=wp.int32, device=d)
        self.pin_targets = wp.array(pin_tgt.astype(f32), dtype=wp.vec3, device=d)
        c = len(self.cloths)
        self.mat_coef = wp.zeros(c, dtype=wp.vec4, device=d)
        self.mat_damping = wp.zeros(c, dtype=float, device=d)
        self.mat_friction = wp.zeros(c, dtype=float, device=d)
        self.mat_thickness = wp.zeros(c, dtype=float, device=d)
        self.fabrics = [cl.fabric for cl in self.cloths]
        self._write_materials()

    # ------------------------------------------------------------------ materials
    def set_fabric(self, cloth: int, fabric: Fabric) -> None:
        """Change one cloth's fabric between steps: rewrites material arrays (masses stay: density is fixed)."""
        if fabric.density != self.fabrics[cloth].density:
            from .errors import InputError

            raise InputError(
                f"set_fabric: changing density ({self.fabrics[cloth].density} -> {fabric.density} kg/m^2) "
                "between steps is not supported; build a new Simulator"
            )
        self.fabrics[cloth] = fabric
        self._write_materials()

    def _write_materials(self) -> None:
        fabs = self.fabrics
        self.mat_coef.assign(np.array([f.membrane_coefficients() for f in fabs], dtype=np.float32))
        self.mat_damping.assign(np.array([f.damping for f in fabs], dtype=np.float32))
        self.mat_friction.assign(np.array([f.friction for f in fabs], dtype=np.float32))
        self.mat_thickness.assign(np.array([f.thickness for f in fabs], dtype=np.float32))
        self.bend_k.assign(self._bending_stiffness().astype(np.float32))
        if len(self.host_springs):
            coef = np.array([f.membrane_coefficients() for f in fabs])
            k = SEAM_STIFFNESS_SCALE * 0.5 * (coef[:, 0] + coef[:, 2])
            self.spring_k.assign(k[self.host_spring_cloth].astype(np.float32))

    def _bending_stiffness(self) -> np.ndarray:
        """k_e = BENDING_C · 3|e|²/(A1+A2) · B(φ_e) [N·m], φ_e the material-space direction across the edge."""
        st = self.host_bend
        if len(st) == 0:
            return np.zeros(0)
        k = np.zeros(len(st))
        tri_cloth = self.host_vertex_cloth[st[:, 0]]
        boundary_cover = self._boundary_cover()
        for i, c in enumerate(self.cloths):
            sel = tri_cloth == i
            s = st[sel] - self.cloth_offsets[i]
            uv = _material_coords_for_edges(c, s)
            e = uv[:, 1] - uv[:, 0]
            el2 = np.sum(e * e, axis=1)
            a1 = 0.5 * np.abs(_cross2(uv[:, 1] - uv[:, 0], uv[:, 2] - uv[:, 0]))
            a2 = 0.5 * np.abs(_cross2(uv[:, 1] - uv[:, 0], uv[:, 3] - uv[:, 0]))
            phi = np.arctan2(e[:, 1], e[:, 0]) + 0.5 * math.pi  # curvature runs across the edge
            k[sel] = BENDING_C * 3.0 * el2 / (a1 + a2) * self.fabrics[i].bending_rigidity(phi)
            k[sel] *= boundary_cover[sel]
        return k

    def _boundary_cover(self) -> np.ndarray:
        """Per-stencil factor that hands a boundary triangle's bending area to its remaining hinges.

        An interior triangle has three hinges, each standing for a third of its area; a triangle on the
        boundary has one or two, so without correction a strip loses the bending stiffness of its edge
        rows (≈ one row per side, a large share of a narrow cantilever strip). Each hinge instead stands
        for ``A_t/n_t`` of each adjacent triangle t with n_t hinges: factor = 3·(A1/n1 + A2/n2)/(A1 + A2).
        """
        st = self.host_bend
        tri = self.host_triangles
        t1, t2 = self.host_bend_tris[:, 0], self.host_bend_tris[:, 1]
        n_t = np.bincount(self.host_bend_tris.ravel(), minlength=len(tri))  # hinges per triangle
        n_t = np.maximum(n_t, 1)
        a_t = self.host_tri_area
        cover = 3.0 * (a_t[t1] / n_t[t1] + a_t[t2] / n_t[t2]) / (a_t[t1] + a_t[t2])
        # A hinge between a clamped triangle (all three vertices pinned) and a free one stands for the
        # curvature of a band half of which lies in the rigid clamp: its angle is the bend of the free
        # half alone, so it gets twice the stiffness (else a clamped strip is too soft by half an element).
        tri_clamped = self.host_pinned[tri].all(axis=1)
        edge_clamped = self.host_pinned[st[:, 0]] & self.host_pinned[st[:, 1]]
        root = edge_clamped & (tri_clamped[t1] ^ tri_clamped[t2])
        return np.where(root, 2.0 * cover, cover)

    def _rest_angles(self) -> np.ndarray:
        """Rest dihedral angles: 0 where the rest shape is flat (rest_uv given), else the initial 3D angle."""
        st = self.host_bend
        rest = np.zeros(len(st))
        vcl = self.host_vertex_cloth[st[:, 0]] if len(st) else np.zeros(0, np.int64)
        for i, c in enumerate(self.cloths):
            if c.rest_uv is None:
                sel = vcl == i
                x = self.host_rest_positions[st[sel]]
                rest[sel] = _dihedral_np(x[:, 0], x[:, 1], x[:, 2], x[:, 3])
        return rest

    # ------------------------------------------------------------------ bookkeeping
    def arrays(self) -> dict:
        return {k: v for k, v in vars(self).items() if isinstance(v, wp.array)}

    def nbytes(self) -> int:
        return sum(a.capacity for a in self.arrays().values())

    def release(self) -> None:
        for k in list(self.arrays()):
            setattr(self, k, None)


def _cross2(a, b):
    return a[:, 0] * b[:, 1] - a[:, 1] * b[:, 0]


def _dihedral_np(x0, x1, x2, x3):
    na = np.cross(x1 - x0, x2 - x0)
    nb = np.cross(x0 - x1, x3 - x1)
    e = x1 - x0
    e = e / np.linalg.norm(e, axis=1, keepdims=True)
    return np.arctan2(np.sum(np.cross(na, nb) * e, axis=1), np.sum(na * nb, axis=1))


def _local_frame_uv(cloth: Cloth, tri: np.ndarray) -> np.ndarray:
    """(M, 3, 2) per-triangle 2D coordinates from the 3D rest triangle (u along the first edge)."""
    x = cloth.vertices[tri]
    e1 = x[:, 1] - x[:, 0]
    e2 = x[:, 2] - x[:, 0]
    u = e1 / np.linalg.norm(e1, axis=1, keepdims=True)
    n = np.cross(e1, e2)
    n /= np.linalg.norm(n, axis=1, keepdims=True)
    v = np.cross(n, u)
    out = np.zeros((len(tri), 3, 2))
    out[:, 1, 0] = np.sum(e1 * u, axis=1)
    out[:, 2, 0] = np.sum(e2 * u, axis=1)
    out[:, 2, 1] = np.sum(e2 * v, axis=1)
    return out


def _rest_edge_matrices(cloth: Cloth) -> np.ndarray:
    t = cloth.triangles
    uv = cloth.rest_uv[t] if cloth.rest_uv is not None else _local_frame_uv(cloth, t)
    dm = np.stack([uv[:, 1] - uv[:, 0], uv[:, 2] - uv[:, 0]], axis=2)  # columns are edges
    return dm


def _material_coords_for_edges(cloth: Cloth, stencils: np.ndarray) -> np.ndarray:
    """(B, 4, 2) material coordinates of each stencil's vertices (rest_uv, or an unfolded local frame)."""
    if cloth.rest_uv is not None:
        return cloth.rest_uv[stencils]
    x = cloth.vertices[stencils]
    e = x[:, 1] - x[:, 0]
    el = np.linalg.norm(e, axis=1, keepdims=True)
    u = e / el
    out = np.zeros((len(stencils), 4, 2))
    out[:, 1, 0] = el[:, 0]
    for j, sign in ((2, 1.0), (3, -1.0)):
        d = x[:, j] - x[:, 0]
        a = np.sum(d * u, axis=1)
        h = np.linalg.norm(d - a[:, None] * u, axis=1)
        out[:, j, 0] = a
        out[:, j, 1] = sign * h
    return out
