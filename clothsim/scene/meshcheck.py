"""Checks on triangle meshes a scene loads (garment meshes, avatar bodies), numpy only.

:func:`check_mesh` raises :class:`clothsim.InputError` naming the file/key (``where``) and the
first offending element: empty, non-finite coordinates, indices out of range, too many vertices,
absurd size (a unit mistake), degenerate or repeated triangles, non-manifold edges (an edge of more
than two triangles), and for ``closed=True`` (a collider body) open boundary edges and inconsistent
winding. It returns a small dict of facts for reports.
"""

from __future__ import annotations

import numpy as np

from ..errors import InputError
from .schema import MAX_MESH_VERTICES, MAX_SIZE_M


def check_mesh(vertices, triangles, *, where: str, closed: bool, max_vertices: int = MAX_MESH_VERTICES,
               max_size: float = MAX_SIZE_M) -> dict:
    """Validate a triangle mesh: vertices (N, 3) [m], triangles (M, 3) int.

    Args:
        where: prefix of every message (``"scenes/a.toml: garments[0].mesh (shirt.obj)"``).
        closed: require a closed, consistently wound 2-manifold (every edge in exactly two
            triangles, traversed in opposite directions), as a collider must be.
    Returns:
        ``{"vertices": N, "triangles": M, "size_m": bbox diagonal, "boundary_edges": B}``.
    """
    v = np.asarray(vertices)
    t = np.asarray(triangles)
    if v.ndim != 2 or v.shape[1] != 3:
        raise InputError(f"{where}: expected vertices of shape (N, 3), got {v.shape}")
    if t.ndim != 2 or t.shape[1] != 3:
        raise InputError(f"{where}: expected triangles of shape (M, 3), got {t.shape}")
    if len(v) == 0 or len(t) == 0:
        raise InputError(f"{where}: the mesh is empty ({len(v)} vertices, {len(t)} triangles); expected a triangle mesh")
    if len(v) > max_vertices:
        raise InputError(f"{where}: {len(v)} vertices is more than the limit of {max_vertices}")
    v = v.astype(np.float64)
    bad = ~np.isfinite(v)
    if bad.any():
        i = int(np.argwhere(bad)[0][0])
        raise InputError(f"{where}: vertex {i} has a non-finite coordinate {v[i].tolist()}; expected finite numbers")
    if not np.issubdtype(t.dtype, np.integer):
        raise InputError(f"{where}: expected integer triangle indices, got {t.dtype}")
    t = t.astype(np.int64)
    out = (t < 0) | (t >= len(v))
    if out.any():
        k = int(np.argwhere(out)[0][0])
        raise InputError(f"{where}: triangle {k} {t[k].tolist()} indexes a vertex outside [0, {len(v)})")
    size = float(np.linalg.norm(v.max(0) - v.min(0)))
    if size > max_size:
        raise InputError(f"{where}: the mesh is {size:.3g} m across; expected at most {max_size:g} m "
                         "(is it in centimetres or millimetres without a declared unit?)")
    rep = (t[:, 0] == t[:, 1]) | (t[:, 1] == t[:, 2]) | (t[:, 0] == t[:, 2])
    if rep.any():
        k = int(np.nonzero(rep)[0][0])
        raise InputError(f"{where}: triangle {k} {t[k].tolist()} repeats a vertex")
    area2 = np.linalg.norm(np.cross(v[t[:, 1]] - v[t[:, 0]], v[t[:, 2]] - v[t[:, 0]]), axis=1)
    tiny = area2 <= 1e-12 * max(float(area2.max()), 1e-30)
    if tiny.any():
        k = int(np.nonzero(tiny)[0][0])
        raise InputError(f"{where}: triangle {k} {t[k].tolist()} has zero area")
    key = np.sort(t, axis=1)
    _, first, counts = np.unique(key, axis=0, return_index=True, return_counts=True)
    if (counts > 1).any():
        k = int(first[counts > 1][0])
        raise InputError(f"{where}: triangle {k} {t[k].tolist()} appears more than once")

    # directed edges (a -> b) of every triangle; undirected key = (min, max)
    d = np.concatenate([t[:, [0, 1]], t[:, [1, 2]], t[:, [2, 0]]])
    und = np.sort(d, axis=1)
    ukey, inv, ucount = np.unique(und, axis=0, return_inverse=True, return_counts=True)
    inv = inv.ravel()
    if (ucount > 2).any():
        e = ukey[ucount > 2][0]
        raise InputError(f"{where}: non-manifold edge between vertices {e.tolist()} is shared by "
                         f"{int(ucount[ucount > 2][0])} triangles; expected at most 2")
    boundary = int((ucount == 1).sum())
    if closed:
        if boundary:
            e = ukey[ucount == 1][0]
            raise InputError(f"{where}: the mesh is not closed: {boundary} edges belong to one triangle only "
                             f"(first between vertices {e.tolist()}); a body collider must be watertight")
        # each undirected edge must be traversed once a->b and once b->a
        fwd = d[:, 0] < d[:, 1]
        nfwd = np.bincount(inv, weights=fwd, minlength=len(ukey))
        bad_w = nfwd != 1
        if bad_w.any():
            e = ukey[bad_w][0]
            raise InputError(f"{where}: inconsistent winding at the edge between vertices {e.tolist()} "
                             "(both triangles run it the same way); expected consistently wound triangles")
    return {"vertices": int(len(v)), "triangles": int(len(t)), "size_m": size, "boundary_edges": boundary}
