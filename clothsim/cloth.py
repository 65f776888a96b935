"""Cloth: one piece of fabric as host data (numpy), validated, before it goes to a device.

A Cloth holds positions (m), triangles, the 2D rest shape in material space (metres, ``u`` along
warp, ``v`` along weft), pins, seams and a fabric. :class:`clothsim.model.ClothModel` turns a list
of Cloths into flat device arrays.
"""

from __future__ import annotations

import math

import numpy as np

from .errors import InputError
from .fabric import Fabric


class Cloth:
    """A cloth mesh with its rest shape, fabric, pins and seams (host side, numpy).

    Attributes:
        vertices: (N, 3) float64 initial positions [m].
        triangles: (M, 3) int64 vertex indices, consistently wound.
        rest_uv: (N, 2) float64 rest positions in material space [m] (u = warp, v = weft), or
            None: each triangle then rests as it is in 3D (warp along its first edge's tangent).
        fabric: :class:`Fabric`.
        pins: (P,) int64 pinned vertex indices; pin_targets: (P, 3) their target positions [m].
        seams: (S, 2) int64 vertex pairs pulled together (rest length 0).
        name: a label.
    """

    def __init__(self, vertices, triangles, rest_uv=None, fabric="cotton", name="cloth", grid_shape=None):
        self.name = str(name)
        self.vertices = _as_float_array(vertices, "vertices", (None, 3), where=self.name)
        self.triangles = _as_index_array(triangles, "triangles", (None, 3), len(self.vertices), where=self.name)
        self.rest_uv = None if rest_uv is None else _as_float_array(rest_uv, "rest_uv", (len(self.vertices), 2), where=self.name)
        self.fabric = Fabric.resolve(fabric)
        self.pins = np.zeros(0, dtype=np.int64)
        self.pin_targets = np.zeros((0, 3), dtype=np.float64)
        self.seams = np.zeros((0, 2), dtype=np.int64)
        self.grid_shape = grid_shape
        self._check_triangles()

    # ------------------------------------------------------------------ constructors
    @classmethod
    def grid(cls, size=(1.0, 1.0), resolution=(32, 32), fabric="cotton", center=(0.0, 1.0, 0.0), plane="xy",
             warp_angle: float = 0.0, diagonals: str = "alternate", name="grid") -> "Cloth":
        """A rectangular cloth of ``resolution = (nx, ny)`` vertices spanning ``size = (width, height)`` metres.

        Vertex ``v = j*nx + i`` sits at local ``(u, w) = (-W/2 + i*W/(nx-1), -H/2 + j*H/(ny-1))``.
        ``plane="xy"`` hangs vertically (``w`` → +y, "top" is the last row); ``plane="xz"`` lies flat at
        height ``center[1]`` (``w`` → +z, "top" is the last row, the +z edge). ``warp_angle`` [rad]
        turns the warp direction away from the local ``u`` axis. ``diagonals`` is "alternate"
        (each cell's diagonal flips in a checkerboard) or "regular" (all from (i, j) to (i+1, j+1)).
        """
        nx, ny = (int(r) for r in resolution)
        if nx < 2 or ny < 2:
            raise InputError(f"Cloth.grid: resolution must be at least (2, 2) vertices, got {resolution!r}")
        w, h = (float(s) for s in size)
        if not (w > 0 and h > 0 and math.isfinite(w) and math.isfinite(h)):
            raise InputError(f"Cloth.grid: size must be positive finite metres, got {size!r}")
        if plane not in ("xy", "xz"):
            raise InputError(f"Cloth.grid: plane must be 'xy' or 'xz', got {plane!r}")
        if diagonals not in ("alternate", "regular"):
            raise InputError(f"Cloth.grid: diagonals must be 'alternate' or 'regular', got {diagonals!r}")
        i, j = np.meshgrid(np.arange(nx), np.arange(ny), indexing="xy")
        u = -0.5 * w + i.ravel() * (w / (nx - 1))
        s = -0.5 * h + j.ravel() * (h / (ny - 1))
        c = np.asarray(center, dtype=np.float64)
        if plane == "xy":
            verts = np.stack([c[0] + u, c[1] + s, np.full_like(u, c[2])], axis=1)
        else:
            verts = np.stack([c[0] + u, np.full_like(u, c[1]), c[2] + s], axis=1)
        ci, cj = np.meshgrid(np.arange(nx - 1), np.arange(ny - 1), indexing="xy")
        ci, cj = ci.ravel(), cj.ravel()
        v00 = cj * nx + ci
        v10, v01, v11 = v00 + 1, v00 + nx, v00 + nx + 1
        flip = ((ci + cj) % 2 == 1) if diagonals == "alternate" else np.zeros_like(ci, dtype=bool)
        # winding: counter-clockwise in (u, w), normal +z for "xy" ; for "xz" the normal is -y, flip winding
        t_a = np.where(flip[:, None], np.stack([v00, v10, v01], 1), np.stack([v00, v10, v11], 1))
        t_b = np.where(flip[:, None], np.stack([v10, v11, v01], 1), np.stack([v00, v11, v01], 1))
        tris = np.concatenate([t_a, t_b])
        if plane == "xz":
            tris = tris[:, [0, 2, 1]]
        uv = _rotate_uv(np.stack([u, s], axis=1), warp_angle)
        return cls(verts, tris, rest_uv=uv, fabric=fabric, name=name, grid_shape=(nx, ny))

    @classmethod
    def lattice(cls, size=(1.0, 0.1), edge_length=0.01, fabric="cotton", center=(0.0, 1.0, 0.0), plane="xz",
                rows_along: str = "x", warp_angle: float = 0.0, name="lattice") -> "Cloth":
        """A rectangle meshed with near-equilateral triangles (rows offset by half an edge).

        ``rows_along="x"`` puts one family of edges along the rectangle's first side; ``"y"`` turns the
        lattice by 90°, so the same rectangle is meshed in the other orientation. Used to check that
        bending does not depend on how the mesh is laid over the fabric.
        """
        w, h = (float(s) for s in size)
        a = float(edge_length)
        if not (w > 0 and h > 0 and a > 0):
            raise InputError(f"Cloth.lattice: size and edge_length must be > 0, got {size!r}, {edge_length!r}")
        if rows_along not in ("x", "y"):
            raise InputError(f"Cloth.lattice: rows_along must be 'x' or 'y', got {rows_along!r}")
        L, H = (w, h) if rows_along == "x" else (h, w)
        nrow = max(2, int(round(H / (a * math.sqrt(3) / 2))) + 1)
        dy = H / (nrow - 1)
        ncol = max(2, int(round(L / a)) + 1)
        dx = L / (ncol - 1)
        pts, index = [], {}
        for r in range(nrow):
            off = 0.5 * dx if r % 2 else 0.0
            xs = [0.0] + [off + k * dx for k in range(ncol) if 0.0 < off + k * dx < L - 1e-9 * L] + [L]
            xs = sorted(set(xs))
            for k, x in enumerate(xs):
                index[(r, k)] = len(pts)
                pts.append((x, r * dy))
        pts = np.asarray(pts)
        rows = [[index[(r, k)] for k in range(sum(1 for key in index if key[0] == r))] for r in range(nrow)]
        tris = []
        for r in range(nrow - 1):
            lo, hi = rows[r], rows[r + 1]
            i = j = 0
            while i < len(lo) - 1 or j < len(hi) - 1:  # zipper triangulation between two rows
                adv_lo = j == len(hi) - 1 or (i < len(lo) - 1 and pts[lo[i + 1], 0] <= pts[hi[j + 1], 0])
                if adv_lo:
                    tris.append((lo[i], lo[i + 1], hi[j]))
                    i += 1
                else:
                    tris.append((lo[i], hi[j + 1], hi[j]))
                    j += 1
        tris = np.asarray(tris, dtype=np.int64)
        uv = pts - np.array([L / 2, H / 2])
        if rows_along == "y":
            uv = np.stack([uv[:, 1], uv[:, 0]], axis=1)
            tris = tris[:, [0, 2, 1]]
        c = np.asarray(center, dtype=np.float64)
        if plane == "xy":
            verts = np.stack([c[0] + uv[:, 0], c[1] + uv[:, 1], np.full(len(uv), c[2])], axis=1)
        else:
            verts = np.stack([c[0] + uv[:, 0], np.full(len(uv), c[1]), c[2] + uv[:, 1]], axis=1)
            tris = tris[:, [0, 2, 1]]
        return cls(verts, tris, rest_uv=_rotate_uv(uv, warp_angle), fabric=fabric, name=name)

    @classmethod
    def from_mesh(cls, vertices, triangles, rest_uv=None, fabric="cotton", name="mesh") -> "Cloth":
        """A cloth from a triangle mesh: vertices (N, 3) [m], triangles (M, 3), optional rest_uv (N, 2) [m]."""
        return cls(vertices, triangles, rest_uv=rest_uv, fabric=fabric, name=name)

    # ------------------------------------------------------------------ editing
    @property
    def vertex_count(self) -> int:
        return len(self.vertices)

    def boundary(self, side: str) -> np.ndarray:
        """Vertex indices of a side: "top", "bottom", "left", "right" (grid cloths), or "all" (any mesh)."""
        if side == "all":
            from .topology import unique_edges

            e, te = unique_edges(self.triangles)
            cnt = np.bincount(te.ravel(), minlength=len(e))
            return np.unique(e[cnt == 1].ravel())
        if self.grid_shape is None:
            raise InputError(f"{self.name}: boundary({side!r}) needs a grid cloth; use 'all' or explicit indices")
        nx, ny = self.grid_shape
        idx = np.arange(nx * ny).reshape(ny, nx)
        sides = {"top": idx[-1], "bottom": idx[0], "left": idx[:, 0], "right": idx[:, -1]}
        if side not in sides:
            raise InputError(f"{self.name}: unknown side {side!r}; expected one of top, bottom, left, right, all")
        return sides[side].copy()

    def pin(self, indices, targets=None) -> None:
        """Pin vertices at their current positions (or at ``targets`` (P, 3) [m])."""
        idx = _as_index_array(np.atleast_1d(indices), "pin indices", (None,), self.vertex_count, where=self.name)
        tgt = self.vertices[idx] if targets is None else _as_float_array(targets, "pin targets", (len(idx), 3), where=self.name)
        keep = ~np.isin(self.pins, idx)
        self.pins = np.concatenate([self.pins[keep], idx])
        self.pin_targets = np.concatenate([self.pin_targets[keep], tgt])

    def add_seam(self, a, b) -> None:
        """Sew vertex ``a[k]`` to vertex ``b[k]``: a zero-length spring pulls each pair together."""
        a = _as_index_array(np.atleast_1d(a), "seam side a", (None,), self.vertex_count, where=self.name)
        b = _as_index_array(np.atleast_1d(b), "seam side b", (len(a),), self.vertex_count, where=self.name)
        if np.any(a == b):
            raise InputError(f"{self.name}: seam pair {int(np.nonzero(a == b)[0][0])} joins a vertex to itself")
        self.seams = np.concatenate([self.seams, np.stack([a, b], axis=1)])

    # ------------------------------------------------------------------ checks
    def _check_triangles(self) -> None:
        t = self.triangles
        if len(t) == 0:
            raise InputError(f"{self.name}: triangles is empty")
        same = (t[:, 0] == t[:, 1]) | (t[:, 1] == t[:, 2]) | (t[:, 0] == t[:, 2])
        if same.any():
            raise InputError(f"{self.name}: triangle {int(np.nonzero(same)[0][0])} repeats a vertex {t[same][0].tolist()}")
        key = np.sort(t, axis=1)
        _, first, counts = np.unique(key, axis=0, return_index=True, return_counts=True)
        if (counts > 1).any():
            k = key[first[counts > 1][0]]
            dup = np.nonzero(np.all(key == k, axis=1))[0]
            raise InputError(f"{self.name}: triangles {dup.tolist()} are duplicates (vertices {k.tolist()})")
        ref = self.rest_uv
        if ref is not None:
            a, b, c = ref[t[:, 0]], ref[t[:, 1]], ref[t[:, 2]]
            area = 0.5 * np.abs((b - a)[:, 0] * (c - a)[:, 1] - (b - a)[:, 1] * (c - a)[:, 0])
        else:
            a, b, c = self.vertices[t[:, 0]], self.vertices[t[:, 1]], self.vertices[t[:, 2]]
            area = 0.5 * np.linalg.norm(np.cross(b - a, c - a), axis=1)
        scale = max(float(np.max(area)), 1e-30)
        bad = area <= 1e-9 * scale
        if bad.any():
            k = int(np.nonzero(bad)[0][0])
            raise InputError(f"{self.name}: triangle {k} {t[k].tolist()} is degenerate (rest area {area[k]:.3g} m^2)")
        used = np.zeros(self.vertex_count, dtype=bool)
        used[t.ravel()] = True
        if not used.all():
            raise InputError(f"{self.name}: vertex {int(np.nonzero(~used)[0][0])} belongs to no triangle")


def _rotate_uv(uv: np.ndarray, angle: float) -> np.ndarray:
    """Material coordinates of points whose warp runs at ``angle`` [rad] from the local u axis."""
    if angle == 0.0:
        return uv
    c, s = math.cos(angle), math.sin(angle)
    return np.stack([c * uv[:, 0] + s * uv[:, 1], -s * uv[:, 0] + c * uv[:, 1]], axis=1)


def _as_float_array(a, what, shape, where) -> np.ndarray:
    try:
        arr = np.asarray(a, dtype=np.float64)
    except (TypeError, ValueError) as e:
        raise InputError(f"{where}: {what} must be numbers: {e}") from None
    _check_shape(arr, what, shape, where)
    bad = ~np.isfinite(arr)
    if bad.any():
        pos = tuple(int(x) for x in np.argwhere(bad)[0])
        raise InputError(f"{where}: {what} has a non-finite value {float(arr[pos])} at index {pos}")
    return arr


def _as_index_array(a, what, shape, count, where) -> np.ndarray:
    arr = np.asarray(a)
    if arr.size and not np.issubdtype(arr.dtype, np.integer):
        if np.issubdtype(arr.dtype, np.floating) and np.all(np.isfinite(arr)) and np.all(arr == np.round(arr)):
            arr = arr.astype(np.int64)
        else:
            raise InputError(f"{where}: {what} must be integer vertex indices, got dtype {arr.dtype}")
    arr = arr.astype(np.int64)
    _check_shape(arr, what, shape, where)
    bad = (arr < 0) | (arr >= count)
    if bad.any():
        pos = tuple(int(x) for x in np.argwhere(bad)[0])
        raise InputError(f"{where}: {what} index {int(arr[pos])} at {pos} is out of range [0, {count})")
    return arr


def _check_shape(arr, what, shape, where) -> None:
    if arr.ndim != len(shape) or any(s is not None and s != d for s, d in zip(shape, arr.shape)):
        want = "(" + ", ".join("N" if s is None else str(s) for s in shape) + ")"
        raise InputError(f"{where}: {what} must have shape {want}, got {arr.shape}")
