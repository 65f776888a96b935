"""Sewn meshes: seam welding (vertices sewn together as one) and local untangling of cloth-cloth intersections.

Used by :class:`clothsim.scene.Drape`: the checks count intersections on the welded mesh (a closed seam is not an
intersection), and a coarse-to-fine switch that made intersections untangles them before time moves on.
"""

from __future__ import annotations

import numpy as np


def weld_map(n: int, seams: np.ndarray) -> tuple[np.ndarray, int]:
    """(N,) index of each vertex's sewn group (groups numbered by their smallest member's order) and the
    number of groups: sewn pairs ``seams`` (S, 2) joined transitively."""
    parent = np.arange(n)
    if len(seams) == 0:
        return parent, n

    def find(i):
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    for a, b in np.asarray(seams, dtype=np.int64):
        ra, rb = find(a), find(b)
        if ra != rb:
            parent[max(ra, rb)] = min(ra, rb)
    root = np.array([find(i) for i in range(n)])
    uniq, new = np.unique(root, return_inverse=True)
    return new.ravel(), len(uniq)


def untangle(x: np.ndarray, triangles: np.ndarray, seams: np.ndarray, free: np.ndarray, *,
             max_iterations: int = 12, rings: int = 1, step: float = 0.5) -> tuple[np.ndarray, list[int]]:
    """Remove cloth-cloth triangle intersections that a level switch made, by local smoothing.

    Linear prolongation puts a finer level on the coarse triangles; a fine triangle whose corners lie in
    different coarse triangles is a chord across the coarse fold line between them. Around a coarse vertex
    whose fan is folded sharply (a pleat that ends in a point: dihedral angles near 180°), chords across
    neighbouring fold lines of the same fan can cross each other; self-collision then keeps them crossed (it
    keeps layers from crossing, not uncrossing). Each iteration finds the triangles that intersect another
    (sewn pairs welded, :func:`weld_seams`), takes their free vertices and ``rings`` rings of neighbours, and
    moves each ``step`` of the way to the mean of its mesh neighbours (a damped Jacobi step of the umbrella
    operator): a sharp fold opens toward its neighbours' plane, and the rest of the drape is untouched. Stops when no intersection is
    left or after ``max_iterations``. Returns the positions (N, 3) and the intersection count before each
    iteration and at the end (``counts[-1]`` is what is left).
    """
    from ..collision.intersections import self_intersection_counts

    n = len(x)
    new, m = weld_map(n, seams)
    tw = new[np.asarray(triangles, dtype=np.int64)]
    ok = (tw[:, 0] != tw[:, 1]) & (tw[:, 1] != tw[:, 2]) & (tw[:, 0] != tw[:, 2])
    tw = tw[ok]
    cnt = np.bincount(new, minlength=m).astype(np.float64)
    xw = np.zeros((m, 3))
    np.add.at(xw, new, np.asarray(x, dtype=np.float64))
    xw /= cnt[:, None]
    free_w = np.ones(m, dtype=bool)
    np.logical_and.at(free_w, new, np.asarray(free, dtype=bool))
    e = np.concatenate([tw[:, [0, 1]], tw[:, [1, 2]], tw[:, [2, 0]]])
    e = np.unique(np.sort(e, axis=1), axis=0)
    deg = np.bincount(e.ravel(), minlength=m).astype(np.float64)
    counts = []
    touched = np.zeros(m, dtype=bool)
    for it in range(max_iterations + 1):
        xf = xw.astype(np.float32)
        lo = self_intersection_counts(xf, tw, device="cpu")
        hi = self_intersection_counts(xf, tw[::-1], device="cpu")[::-1]  # the partner side of each pair
        counts.append(int(lo.sum()))
        if counts[-1] == 0 or it == max_iterations:
            break
        sel = np.zeros(m, dtype=bool)
        sel[tw[(lo > 0) | (hi > 0)].ravel()] = True
        for _ in range(rings):
            grow = sel.copy()
            grow[e[sel[e[:, 0]], 1]] = True
            grow[e[sel[e[:, 1]], 0]] = True
            sel = grow
        sel &= free_w
        nb = np.zeros((m, 3))
        np.add.at(nb, e[:, 0], xw[e[:, 1]])
        np.add.at(nb, e[:, 1], xw[e[:, 0]])
        xw[sel] = (1.0 - step) * xw[sel] + step * nb[sel] / np.maximum(deg[sel], 1.0)[:, None]
        touched |= sel
    out = np.asarray(x, dtype=np.float64).copy()
    moved = touched[new]
    out[moved] = xw[new[moved]]
    return out.astype(np.asarray(x).dtype), counts


def weld_seams(x: np.ndarray, triangles: np.ndarray, seams: np.ndarray, *, return_kept: bool = False) -> tuple:
    """Merge sewn vertex pairs into one vertex (at the mean of the sewn group) for intersection counts.

    Two panels sewn together touch along the seam: their triangles share points but not vertex indices,
    and :func:`count_self_intersections` (which counts touching triangles, and skips only pairs that
    share a vertex) would count every closed seam as intersections. Welding the pairs makes the sewn
    mesh what it stands for. Returns positions (N', 3) and triangles (M', 3) of the welded mesh, and with
    ``return_kept`` the (M,) mask of the input triangles kept (those the weld did not collapse).
    """
    if len(seams) == 0:
        return (x, triangles, np.ones(len(triangles), bool)) if return_kept else (x, triangles)
    new, groups = weld_map(len(x), seams)
    xs = np.zeros((groups, 3))
    np.add.at(xs, new, x.astype(np.float64))
    xs /= np.bincount(new, minlength=groups)[:, None]
    t = new[np.asarray(triangles, dtype=np.int64)]
    ok = (t[:, 0] != t[:, 1]) & (t[:, 1] != t[:, 2]) & (t[:, 0] != t[:, 2])
    return (xs.astype(np.float32), t[ok], ok) if return_kept else (xs.astype(np.float32), t[ok])
