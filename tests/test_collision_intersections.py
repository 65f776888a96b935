"""Triangle–triangle intersection counting and penetration depth.

References: a brute-force float64 numpy test (a pair of triangles in general position
intersects iff one of the six edges crosses the other triangle, Möller–Trumbore with closed
bounds) over all pairs, and hand-made cases whose answer is known by construction.
Exact agreement is expected: random inputs are in general position (no pair within 1e-6 m
of touching, checked for the seeds used).
"""

import numpy as np
import pytest
import warp as wp

from clothsim.collision.intersections import (
    count_mesh_intersections,
    count_self_intersections,
    max_penetration,
    penetration_depths,
    self_intersection_counts,
    self_intersection_pairs,
)



def _seg_hits_tri(p, q, a, b, c):
    """Closed segment p-q vs closed triangle a-b-c, float64, vectorized over rows."""
    d = q - p
    e1 = b - a
    e2 = c - a
    h = np.cross(d, e2)
    det = np.einsum("ij,ij->i", e1, h)
    ok = np.abs(det) > 1e-14
    f = np.where(ok, 1.0 / np.where(ok, det, 1.0), 0.0)
    s = p - a
    u = f * np.einsum("ij,ij->i", s, h)
    qv = np.cross(s, e1)
    v = f * np.einsum("ij,ij->i", d, qv)
    t = f * np.einsum("ij,ij->i", e2, qv)
    return ok & (u >= 0) & (v >= 0) & (u + v <= 1) & (t >= 0) & (t <= 1)


def tri_tri_reference(A, B):
    """A, B: (K, 3, 3) float64 triangles; returns (K,) bool (general position assumed)."""
    hit = np.zeros(len(A), dtype=bool)
    for X, Y in ((A, B), (B, A)):
        for i, j in ((0, 1), (1, 2), (2, 0)):
            hit |= _seg_hits_tri(X[:, i], X[:, j], Y[:, 0], Y[:, 1], Y[:, 2])
    return hit


def self_pairs_reference(x, tris):
    """(K, 2) rows (i, j), i < j, of the triangles sharing no vertex that intersect, in row-major order."""
    x = x.astype(np.float64)
    m = len(tris)
    i, j = np.triu_indices(m, 1)
    share = (tris[i][:, :, None] == tris[j][:, None, :]).any(axis=(1, 2))
    i, j = i[~share], j[~share]
    hit = tri_tri_reference(x[tris[i]], x[tris[j]])
    return np.stack([i[hit], j[hit]], axis=1)


def self_counts_reference(x, tris):
    return np.bincount(self_pairs_reference(x, tris)[:, 0], minlength=len(tris))


def random_soup(rng, n_vertices, n_tris):
    """Random vertices in the unit cube; each triangle joins a vertex to two of its 7 nearest (many share vertices)."""
    x = rng.uniform(0, 1, (n_vertices, 3))
    tris = []
    while len(tris) < n_tris:
        a = rng.integers(n_vertices)
        d = np.linalg.norm(x - x[a], axis=1)
        near = np.argsort(d)[1:8]
        b, c = rng.choice(near, 2, replace=False)
        tris.append((a, b, c))
    return x.astype(np.float32), np.array(tris, dtype=np.int32)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_self_counts_match_brute_force(seed, device):
    rng = np.random.default_rng(seed)
    x, tris = random_soup(rng, 60, 120)
    ref = self_counts_reference(x, tris)
    got = self_intersection_counts(x, tris, device=device)
    assert ref.sum() > 10  # the test is not vacuous
    np.testing.assert_array_equal(got, ref)
    assert count_self_intersections(x, tris, device=device) == ref.sum()


@pytest.mark.parametrize("seed", [0, 5])
def test_self_pairs_match_brute_force(seed, device):
    """Every intersecting pair, each once as (t, u) with t < u, sorted: the brute-force pairs exactly."""
    rng = np.random.default_rng(seed)
    x, tris = random_soup(rng, 60, 120)
    ref = self_pairs_reference(x, tris)
    got = self_intersection_pairs(x, tris, device=device)
    assert len(ref) > 10  # the test is not vacuous
    assert got.dtype == np.int32 and got.shape == (len(ref), 2)
    np.testing.assert_array_equal(got, ref)
    apart = np.array([[0, 0, 0], [1, 0, 0], [0, 1, 0], [0, 0, 1], [1, 0, 1], [0, 1, 1]], np.float32)
    assert self_intersection_pairs(apart, np.array([[0, 1, 2], [3, 4, 5]]), device=device).shape == (0, 2)


@pytest.mark.parametrize("seed", [3, 4])
def test_mesh_counts_match_brute_force(seed, device):
    rng = np.random.default_rng(seed)
    xa, ta = random_soup(rng, 50, 80)
    xb, tb = random_soup(rng, 50, 80)
    i, j = np.meshgrid(np.arange(len(ta)), np.arange(len(tb)), indexing="ij")
    ref = tri_tri_reference(xa.astype(np.float64)[ta[i.ravel()]], xb.astype(np.float64)[tb[j.ravel()]]).sum()
    assert ref > 10
    assert count_mesh_intersections(xa, ta, xb, tb, device=device) == ref
    # symmetric in its arguments, and wp.array inputs give the same answer
    assert count_mesh_intersections(xb, tb, xa, ta, device=device) == ref
    wa = wp.array(xa, dtype=wp.vec3, device=device)
    wt = wp.array(ta, dtype=wp.vec3i, device=device)
    assert count_mesh_intersections(wa, wt, xb, tb) == ref


T0 = np.array([[0, 0, 0], [1, 0, 0], [0, 1, 0]], dtype=np.float32)
TRI = np.array([[0, 1, 2]], dtype=np.int32)


@pytest.mark.parametrize(
    "other, expected, what",
    [
        ([[0.2, 0.2, -0.5], [0.2, 0.2, 0.5], [0.8, 0.8, 0.0]], 1, "piercing"),
        ([[0.25, 0.25, 0.0], [-1, -1, 0.5], [-1, -1, -0.5]], 1, "vertex touching the interior"),
        ([[1, 0, 0], [2, 0, 1], [2, 1, 0]], 1, "vertex touching a vertex"),
        ([[0.5, 0.5, 0.0], [0.5, 0.5, 1.0], [2, 2, 0]], 1, "edge touching an edge"),
        ([[0.2, 0.2, 1e-3], [0.8, 0.2, 0.5], [0.2, 0.8, 0.5]], 0, "disjoint, 1 mm above"),
        ([[2, 0, 0], [3, 0, 0], [2, 1, 0]], 0, "coplanar, apart"),
        ([[0.1, 0.1, 0], [0.9, 0.1, 0], [0.1, 0.9, 0]], 1, "coplanar, one inside the other"),
        ([[0.5, -0.5, 0], [0.5, 0.9, 0], [-0.5, 0.2, 0]], 1, "coplanar, crossing edges"),
        ([[0.6, 0.6, 0], [1.5, 0.6, 0], [0.6, 1.5, 0]], 0, "coplanar, across the hypotenuse"),
        ([[0.2, 0.2, 0.3], [0.2, 0.2, 0.3], [0.5, 0.5, -1]], 0, "degenerate (zero area)"),
    ],
)
def test_crafted_pairs(other, expected, what, device):
    b = np.array(other, dtype=np.float32)
    assert count_mesh_intersections(T0, TRI, b, TRI, device=device) == expected, what
    # as one mesh without shared vertices the answer is the same
    x = np.concatenate([T0, b])
    tris = np.array([[0, 1, 2], [3, 4, 5]], dtype=np.int32)
    assert count_self_intersections(x, tris, device=device) == expected, what


# Two triangles of a 5 mm cape drape on the H200 (positions in metres, float32 as simulated): nearly flat
# and 5 mm apart on the cloth (planes 3.5e-4 rad apart, each one's vertices 0.3-2.1 µm from the other's
# plane). The interval test on the planes' common line counted them as touching (a vertex snapped onto the
# other plane lies eps/s ~ 3 mm off that line); they are coplanar within the tolerance and do not overlap.
NEAR_FLAT_A = np.array([[0.22475266, 1.1154819, -0.06600016], [0.22562219, 1.1114814, -0.065949626],
                        [0.22116415, 1.1129341, -0.06636358]], dtype=np.float32)
NEAR_FLAT_B = np.array([[0.21571834, 1.1197107, -0.06683071], [0.22131857, 1.1191181, -0.06629829],
                        [0.21577108, 1.114284, -0.06686909]], dtype=np.float32)


def test_nearly_parallel_triangles_apart_do_not_touch(device):
    x = np.concatenate([NEAR_FLAT_A, NEAR_FLAT_B])
    tris = np.array([[0, 1, 2], [3, 4, 5]], dtype=np.int32)
    # the whole drape's default tolerance (its highest point is 1.52 m up): 1.52 µm
    assert count_self_intersections(x, tris, device=device, eps=1.52e-6) == 0
    assert count_self_intersections(x, tris, device=device) == 0
    # the float64 segment test agrees: no edge of one crosses the other
    a, b = NEAR_FLAT_A.astype(np.float64), NEAR_FLAT_B.astype(np.float64)
    for p_, q_ in ((a, b), (b, a)):
        for i in range(3):
            hit = _seg_hits_tri(p_[[i]], p_[[(i + 1) % 3]], q_[[0]], q_[[1]], q_[[2]])
            assert not hit.any()


@pytest.mark.parametrize("tilt", [1e-5, 1e-4, 1e-3])
def test_nearly_parallel_triangles_crossing_are_found(tilt, device):
    """Near-parallel pairs that do cross (B tilted by ``tilt`` rad through A's plane, overlapping it) are
    still counted, whichever branch (2D or interval) decides them."""
    b = np.array([[0.1, 0.1, -tilt * 0.3], [0.9, 0.1, -tilt * 0.3], [0.1, 0.9, tilt * 0.5]], dtype=np.float32)
    x = np.concatenate([T0, b])
    tris = np.array([[0, 1, 2], [3, 4, 5]], dtype=np.int32)
    assert count_self_intersections(x, tris, device=device) == 1
    assert count_self_intersections(x, tris, device=device, eps=1.52e-6) == 1


def test_neighbours_are_excluded(device):
    # a folded strip: consecutive triangles share vertices and touch by construction
    x = np.array([[0, 0, 0], [1, 0, 0], [0, 1, 0], [1, 1, 0], [0, 0, 0.0]], dtype=np.float32)
    tris = np.array([[0, 1, 2], [1, 3, 2], [2, 1, 4]], dtype=np.int32)
    assert count_self_intersections(x, tris, device=device) == 0


def test_max_penetration_box(device):
    import trimesh

    box = trimesh.creation.box(extents=(1.0, 1.0, 1.0))
    pts = np.array([[0.0, 0.0, 0.0], [0.45, 0.0, 0.0], [0.0, -0.3, 0.1], [2.0, 0.0, 0.0], [0.5, 0.6, 0.0]])
    depth = penetration_depths(pts, box.vertices, box.faces, device=device)
    # reference: inside a unit box centred at 0, depth = 0.5 - max |coordinate|
    ref = np.where(np.abs(pts).max(1) < 0.5, 0.5 - np.abs(pts).max(1), 0.0)
    np.testing.assert_allclose(depth, ref, atol=1e-6)
    assert max_penetration(pts, box.vertices, box.faces, device=device) == pytest.approx(0.5, abs=1e-6)
    assert max_penetration(pts[3:], box.vertices, box.faces, device=device) == 0.0
