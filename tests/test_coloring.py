"""Vertex colouring of the Gauss–Seidel sweep (clothsim.coloring): valid, few colours, balanced.

References: a colouring is valid when no two vertices of one element (triangle, bending stencil, seam)
share a colour; greedy colouring never needs more than max degree + 1 colours. On the benchmark grids
(alternate diagonals, bending stencils: 12 neighbours per interior vertex) the colouring finds 6 colours
for N = 32 and 64 (the benchmark sizes) and 7 for some others (N = 24, 33); always of equal size ±1.
"""

import numpy as np

import clothsim as cs
from clothsim.coloring import color_graph
from clothsim.topology import adjacency, bending_stencils, check_coloring


def _grid_graph(n):
    c = cs.Cloth.grid(size=(1.0, 1.0), resolution=(n, n), diagonals="alternate", plane="xz")
    st = bending_stencils(c.triangles)
    st = st[0] if isinstance(st, tuple) else st
    return adjacency(n * n, [c.triangles, st])


def test_grids_get_few_balanced_colours():
    for n, ncol in ((32, 6), (64, 6), (24, 7), (33, 7)):
        off, nb = _grid_graph(n)
        col = color_graph(n * n, off, nb)
        check_coloring(off, nb, col)
        sizes = np.bincount(col)
        assert len(sizes) == ncol, (n, sizes)
        assert sizes.max() - sizes.min() <= 1, (n, sizes)


def test_irregular_mesh_is_valid_and_within_the_greedy_bound():
    import trimesh

    # an icosphere: vertices of valence 5 and 6, no grid structure
    m = trimesh.creation.icosphere(subdivisions=3)
    tris = np.asarray(m.faces, dtype=np.int64)
    st = bending_stencils(tris)
    st = st[0] if isinstance(st, tuple) else st
    n = len(m.vertices)
    off, nb = adjacency(n, [tris, st])
    col = color_graph(n, off, nb)
    check_coloring(off, nb, col)
    assert col.max() + 1 <= np.diff(off).max() + 1
    sizes = np.bincount(col)
    assert sizes.max() <= 1.5 * n / len(sizes), sizes  # balanced: no colour far above the mean
    assert np.array_equal(col, color_graph(n, off, nb))  # deterministic
