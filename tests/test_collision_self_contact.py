"""SelfContactDetector lists vs a brute-force float64 reference on a crumpled cloth.

Reference: every (vertex, triangle) and (edge, edge) pair of the mesh, distances by
trimesh.triangles.closest_point and a vectorized float64 segment–segment distance (Ericson),
adjacency excluded. Pairs whose reference distance is within 1e-5 m of the radius are
ambiguous in float32 and may be on either side. min_dist must match the reference minimum
within 1e-5 m.
"""

import numpy as np
import pytest
import trimesh
import warp as wp

from clothsim.collision._arrays import unique_edges
from clothsim.collision.self_contact import SelfContactDetector, group_order
from clothsim.collision.self_contact_kernels import min_nonnegative
from clothsim.errors import SimulationError

R = 0.06
AMBIG = 1e-5


def crumpled_cloth(n=12, seed=0):
    """n×n grid on [0,1]², folded over at x = 0.5 (3 cm gap), waved and jittered: many near contacts."""
    rng = np.random.default_rng(seed)
    u, v = np.meshgrid(np.linspace(0, 1, n), np.linspace(0, 1, n), indexing="ij")
    x = np.stack([u, v, 0.02 * np.sin(7 * u) * np.cos(5 * v)], -1).reshape(-1, 3)
    fold = x[:, 0] > 0.5
    x[fold, 0] = 1.0 - x[fold, 0]
    x[fold, 2] += 0.03 + 0.05 * (x[fold, 0] - 0.5) ** 2
    x += rng.normal(scale=0.004, size=x.shape)
    tris = []
    for i in range(n - 1):
        for j in range(n - 1):
            a, b, c, d = i * n + j, (i + 1) * n + j, (i + 1) * n + j + 1, i * n + j + 1
            tris += [(a, b, c), (a, c, d)] if (i + j) % 2 else [(a, b, d), (b, c, d)]
    tris = np.array(tris, dtype=np.int32)
    return x.astype(np.float32), tris, unique_edges(tris)


def seg_dist(P0, P1, Q0, Q1):
    """Vectorized float64 segment-segment distance (Ericson 5.1.9, parallel: s = 0 branch)."""
    d1, d2, r = P1 - P0, Q1 - Q0, P0 - Q0
    a = (d1 * d1).sum(-1)
    e = (d2 * d2).sum(-1)
    f = (d2 * r).sum(-1)
    c = (d1 * r).sum(-1)
    b = (d1 * d2).sum(-1)
    den = a * e - b * b
    s = np.where(den > 1e-12 * a * e, np.clip((b * f - c * e) / np.where(den > 0, den, 1), 0, 1), 0.0)
    t = (b * s + f) / e
    s = np.where(t < 0, np.clip(-c / a, 0, 1), np.where(t > 1, np.clip((b - c) / a, 0, 1), s))
    t = np.clip(t, 0, 1)
    return np.linalg.norm(P0 + s[:, None] * d1 - Q0 - t[:, None] * d2, axis=1)


def reference(x, tris, edges, r):
    x = x.astype(np.float64)
    n, m = len(x), len(tris)
    vi, ti = np.meshgrid(np.arange(n), np.arange(m), indexing="ij")
    vi, ti = vi.ravel(), ti.ravel()
    keep = (tris[ti] != vi[:, None]).all(1)
    vi, ti = vi[keep], ti[keep]
    dvt = np.linalg.norm(trimesh.triangles.closest_point(x[tris[ti]], x[vi]) - x[vi], axis=1)
    ei, fi = np.meshgrid(np.arange(len(edges)), np.arange(len(edges)), indexing="ij")
    ei, fi = ei.ravel(), fi.ravel()
    keep = (edges[ei][:, :, None] != edges[fi][:, None, :]).all((1, 2))
    ei, fi = ei[keep], fi[keep]
    dee = seg_dist(x[edges[ei, 0]], x[edges[ei, 1]], x[edges[fi, 0]], x[edges[fi, 1]])
    min_dist = np.full(n, r)
    np.minimum.at(min_dist, vi, dvt)
    for k in range(3):
        np.minimum.at(min_dist, tris[ti, k], dvt)
    for k in range(2):
        np.minimum.at(min_dist, edges[ei, k], dee)
    return (vi, ti, dvt), (ei, fi, dee), np.minimum(min_dist, r)


def check_lists(got_lists, owner, other, dist, count, r):
    sure = dist < r - AMBIG
    maybe = dist < r + AMBIG
    for i in range(count):
        got = set(got_lists[i].tolist())
        assert len(got) == len(got_lists[i]), "duplicate entries"
        must = set(other[(owner == i) & sure].tolist())
        may = set(other[(owner == i) & maybe].tolist())
        assert must <= got <= may, (i, must - got, got - may)


def check_all_lists(got, cloth):
    """Every list kind of ``det.lists_numpy()`` against the brute-force pairs of the ``cloth`` fixture."""
    x, tris, edges, ((vi, ti, dvt), (ei, fi, dee), _) = cloth
    check_lists(got["vt"], vi, ti, dvt, len(x), R)
    check_lists(got["tv"], ti, vi, dvt, len(tris), R)
    check_lists(got["ee"], ei, fi, dee, len(edges), R)


@pytest.fixture(scope="module")
def cloth():
    x, tris, edges = crumpled_cloth()
    return x, tris, edges, reference(x, tris, edges, R)


def test_lists_match_brute_force(cloth, device):
    x, tris, edges, (vt, ee, min_dist) = cloth
    det = SelfContactDetector(len(x), tris, edges, vertex_capacity=64, edge_capacity=64, device=device, positions=x)
    pos = wp.array(x, dtype=wp.vec3, device=device)
    det.detect(pos, R)
    assert not det.overflowed()
    got = det.lists_numpy()
    vi, ti, dvt = vt
    assert (dvt < R).sum() > 200  # not vacuous: many close pairs
    check_lists(got["vt"], vi, ti, dvt, len(x), R)
    check_lists(got["tv"], ti, vi, dvt, len(tris), R)
    ei, fi, dee = ee
    assert (dee < R).sum() > 200
    check_lists(got["ee"], ei, fi, dee, len(edges), R)
    np.testing.assert_allclose(got["min_dist"], min_dist, atol=1e-5)
    assert (min_dist < R).sum() > len(x) // 2


def test_detect_refits_after_motion_and_is_deterministic(cloth, device):
    x, tris, edges, _ = cloth
    det = SelfContactDetector(len(x), tris, edges, vertex_capacity=64, edge_capacity=64, device=device)
    # built lazily on a flat sheet, then the crumpled shape arrives: refit must still find everything
    flat = x.copy()
    flat[:, 2] = 0.0
    det.detect(wp.array(flat * 3.0, dtype=wp.vec3, device=device), R)
    x2 = x + np.float32(0.01) * np.sin(np.arange(x.size, dtype=np.float32)).reshape(x.shape)
    (vi, ti, dvt), (ei, fi, dee), md = reference(x2, tris, edges, R)
    pos = wp.array(x2, dtype=wp.vec3, device=device)
    det.detect(pos, R)
    got = det.lists_numpy()
    check_lists(got["vt"], vi, ti, dvt, len(x), R)
    check_lists(got["ee"], ei, fi, dee, len(edges), R)
    np.testing.assert_allclose(got["min_dist"], md, atol=1e-5)
    raw = [a.numpy().copy() for a in (det.vt_tri, det.tv_vertex, det.ee_edge, det.min_dist)]
    det.detect(pos, R)
    for a, b in zip(raw, (det.vt_tri, det.tv_vertex, det.ee_edge, det.min_dist)):
        np.testing.assert_array_equal(a, b.numpy())
    det.release()
    det.release()
    assert det.vt_tri is None


def test_overflow_and_grow(cloth, device):
    x, tris, edges, (vt, ee, min_dist) = cloth
    det = SelfContactDetector(len(x), tris, edges, vertex_capacity=2, edge_capacity=2, device=device, positions=x)
    pos = wp.array(x, dtype=wp.vec3, device=device)
    det.detect(pos, R)
    assert det.overflowed()
    # truncated lists are still valid contacts and min_dist still counts the dropped pairs
    got = det.lists_numpy()
    assert max(len(lst) for lst in got["vt"]) == 2
    np.testing.assert_allclose(got["min_dist"], min_dist, atol=1e-5)
    need = det.required.numpy()
    # the longest list each kind needs is known even though the vt lists were cut at 2 (the tv lists are
    # inverted from them: their needed length counts every pair found, stored or not)
    vi, ti, dvt = vt
    ei, fi, dee = ee
    assert need[0] >= np.bincount(vi[dvt < R - AMBIG]).max()
    assert need[1] >= np.bincount(ti[dvt < R - AMBIG]).max()
    assert need[2] >= np.bincount(ei[dee < R - AMBIG]).max()
    # cut harder (one entry per list): the tv lists' need still counts every pair
    det1 = SelfContactDetector(len(x), tris, edges, vertex_capacity=1, edge_capacity=1, device=device, positions=x)
    det1.detect(pos, R)
    assert det1.required.numpy()[1] >= np.bincount(ti[dvt < R - AMBIG]).max()
    det1.release()
    caps = det.grow()
    assert caps["vt"] >= need[0] and caps["tv"] >= need[1] and caps["ee"] >= need[2]
    assert not det.overflowed()
    det.detect(pos, R)
    assert not det.overflowed()
    check_all_lists(det.lists_numpy(), cloth)
    # with nothing recorded, grow() doubles every capacity
    before = det.capacities
    after = det.grow()
    assert all(after[k] == 2 * before[k] for k in before)
    # lists too long for one array (an N = 1024 fold at a 6 mm radius asked for 1024 edges a list: 3.2e9
    # entries): a clear error, and the detector keeps its lists
    det.ee_capacity = 2**31 // len(edges) + 1
    before = det.capacities
    with pytest.raises(SimulationError, match=r"edge-edge lists.*radius \(0\.06 m\).*mean rest edge 0\.1"):
        det.grow()
    assert det.capacities == before and det.ee_edge.shape[0] == len(edges) * after["ee"]


def test_rest_neighbours_are_left_out(cloth, device):
    """detect(rest_radius=RR): pairs closer than RR in the rest shape (the flat grid before folding) are not
    contacts; every other pair within R still is, and min_dist counts only the kept pairs (same brute-force
    reference, with the rest-shape distance of each pair computed the same way on the flat grid)."""
    x, tris, edges, _ = cloth
    n = int(round(np.sqrt(len(x))))
    u, v = np.meshgrid(np.linspace(0, 1, n), np.linspace(0, 1, n), indexing="ij")
    rest = np.stack([u, v, np.zeros_like(u)], -1).reshape(-1, 3)
    rr = 0.1  # just over one grid spacing (1/11 m): the ring and the triangles just beyond it
    (vi, ti, dvt), (ei, fi, dee), _ = reference(x, tris, edges, R)
    (rvi, rti, rvt), (rei, rfi, ree), _ = reference(rest.astype(np.float32), tris, edges, R)
    assert (rvi == vi).all() and (rti == ti).all() and (rei == ei).all() and (rfi == fi).all()
    keep_vt, keep_ee = rvt >= rr, ree >= rr
    assert ((dvt < R) & ~keep_vt).sum() > 100 and ((dvt < R) & keep_vt).sum() > 100  # both kinds present
    det = SelfContactDetector(len(x), tris, edges, vertex_capacity=64, edge_capacity=64, device=device,
                              positions=x, rest=rest, panel=np.zeros(len(x), np.int32))
    det.detect(wp.array(x, dtype=wp.vec3, device=device), R, rest_radius=rr)
    got = det.lists_numpy()
    # pairs within AMBIG of rr in the rest shape may fall either way in float32: leave them out of both sets
    clear_vt = np.abs(rvt - rr) > AMBIG
    clear_ee = np.abs(ree - rr) > AMBIG
    vt_in = lambda m: (vi[m], ti[m], dvt[m])  # noqa: E731
    a, b, d = vt_in(keep_vt & clear_vt)
    check_lists(got["vt"], a, b, d, len(x), R)
    check_lists(got["tv"], b, a, d, len(tris), R)
    ee_in = keep_ee & clear_ee
    check_lists(got["ee"], ei[ee_in], fi[ee_in], dee[ee_in], len(edges), R)
    # nothing that is a rest neighbour is listed
    for vv, tt in zip(vi[~keep_vt & clear_vt], ti[~keep_vt & clear_vt]):
        assert tt not in set(got["vt"][vv].tolist())
    md = np.full(len(x), R)
    np.minimum.at(md, vi[keep_vt], dvt[keep_vt])
    for k in range(3):
        np.minimum.at(md, tris[ti[keep_vt], k], dvt[keep_vt])
    for k in range(2):
        np.minimum.at(md, edges[ei[keep_ee], k], dee[keep_ee])
    ambiguous = np.zeros(len(x), bool)
    for k in range(3):
        ambiguous[tris[ti[~clear_vt], k]] = True
    ambiguous[vi[~clear_vt]] = True
    ambiguous[edges[ei[~clear_ee]].ravel()] = True
    np.testing.assert_allclose(got["min_dist"][~ambiguous], np.minimum(md, R)[~ambiguous], atol=1e-5)
    with pytest.raises(ValueError, match="rest shape"):
        SelfContactDetector(len(x), tris, edges, device=device, positions=x).detect(
            wp.array(x, dtype=wp.vec3, device=device), R, rest_radius=rr)


def _face_normal_cosine(x, tris, vi, ti):
    """|cos| of the angle between each pair's separation (vertex minus closest point) and its face normal."""
    x = x.astype(np.float64)
    cp = trimesh.triangles.closest_point(x[tris[ti]], x[vi])
    sep = x[vi] - cp
    n = np.cross(x[tris[ti, 1]] - x[tris[ti, 0]], x[tris[ti, 2]] - x[tris[ti, 0]])
    return np.abs((sep * n).sum(1)) / np.maximum(np.linalg.norm(sep, axis=1) * np.linalg.norm(n, axis=1), 1e-300)


def test_rest_neighbours_over_the_face_are_kept(cloth, device):
    """detect(over_face_cos=C): a rest-neighbour vertex-triangle pair is listed after all when the vertex lies
    over the face (|cos| of separation and face normal ≥ C), on the crumpled cloth; on the flat rest shape
    itself no rest neighbour qualifies (separations lie in the plane). Pairs within 1e-3 of C are ambiguous."""
    x, tris, edges, _ = cloth
    n = int(round(np.sqrt(len(x))))
    u, v = np.meshgrid(np.linspace(0, 1, n), np.linspace(0, 1, n), indexing="ij")
    rest = np.stack([u, v, np.zeros_like(u)], -1).reshape(-1, 3)
    rr, c = 0.1, 0.9
    (vi, ti, dvt), _, _ = reference(x, tris, edges, R)
    (_, _, rvt), _, _ = reference(rest.astype(np.float32), tris, edges, R)
    near = (dvt < R - AMBIG) & (rvt < rr - AMBIG)  # rest neighbours within the radius now
    cos = _face_normal_cosine(x, tris, vi, ti)
    over = near & (cos > c + 1e-3)
    beside = near & (cos < c - 1e-3)
    assert over.sum() > 20 and beside.sum() > 20  # both kinds present (62 and 74 here)
    det = SelfContactDetector(len(x), tris, edges, vertex_capacity=64, edge_capacity=64, device=device,
                              positions=x, rest=rest, panel=np.zeros(len(x), np.int32))
    for fc, listed in ((0.0, set()), (c, set(zip(vi[over].tolist(), ti[over].tolist())))):
        det.detect(wp.array(x, dtype=wp.vec3, device=device), R, rest_radius=rr, over_face_cos=fc)
        got = det.lists_numpy()["vt"]
        for vv, tt in zip(vi[over], ti[over]):
            assert (tt in set(got[vv].tolist())) == ((vv, tt) in listed), (fc, vv, tt)
        for vv, tt in zip(vi[beside], ti[beside]):
            assert tt not in set(got[vv].tolist()), (fc, vv, tt)
    # the flat rest shape: every listed pair is a non-neighbour, with or without the exception
    det.detect(wp.array(rest.astype(np.float32), dtype=wp.vec3, device=device), R, rest_radius=rr, over_face_cos=c)
    got = det.lists_numpy()["vt"]
    assert sum(len(g) for g in got) == 0


@pytest.mark.parametrize("rest_radius, over_face, capacity", [(0.0, 0.0, 64), (0.1, 0.0, 64), (0.1, 0.9, 64),
                                                           (0.0, 0.0, 3)])
def test_tiled_search_gives_the_same_lists(cloth, device, rest_radius, over_face, capacity):
    """The tiled searches (CUDA's: a block of threads a query; off CUDA they run on Warp's CPU fallback of the
    block query: vertex_triangle_tiled_kernel, edge_edge_tiled_kernel) and the grouped ones (a query a group of
    primitives: vertex_triangle_group_kernel, edge_edge_group_kernel) against the one-thread searches on the
    crumpled cloth, also with the lists left unordered (``ordered=False``). The
    same lists (the one-thread vertex-triangle lists are in BVH order, the ordered tiled ones sorted, the unordered
    ones in their appends' order), the same min_dist bit for bit and the same overflow record; with capacity 3
    every kind of list overflows. The same again with the searches one thread a query written for CUDA's large
    meshes (``vt_threads``, ``ee_threads``: vertex_triangle_kernel, edge_edge_kernel, the CPU's default), alone and
    beside the grouped ones."""
    x, tris, edges, _ = cloth
    n = int(round(np.sqrt(len(x))))
    u, v = np.meshgrid(np.linspace(0, 1, n), np.linspace(0, 1, n), indexing="ij")
    rest = np.stack([u, v, np.zeros_like(u)], -1).reshape(-1, 3)
    got = []
    for tiled, grouped, ordered, vt_threads, ee_threads in (
            (False, False, True, False, False), (True, False, True, False, False), (True, False, False, False, False),
            (True, True, True, False, False), (True, True, False, False, False), (False, False, True, True, True),
            (True, True, True, True, False), (True, True, True, False, True)):
        det = SelfContactDetector(len(x), tris, edges, vertex_capacity=capacity, edge_capacity=capacity, device=device,
                                  positions=x, rest=rest, panel=np.zeros(len(x), np.int32), ordered=ordered)
        det.tiled, det.grouped, det.vt_threads, det.ee_threads = tiled, grouped, vt_threads, ee_threads
        det.detect(wp.array(x, dtype=wp.vec3, device=device), R, rest_radius=rest_radius, over_face_cos=over_face)
        lists = det.lists_numpy()
        got.append((lists, int(det.overflow.numpy()[0]), det.required.numpy().tolist()))
        det.release()
    (one, over1, req1) = got[0]
    for til, over2, req2 in got[1:]:
        assert (over1, req1) == (over2, req2)
        assert (over1 > 0 and min(req1) > capacity) if capacity < 64 else over1 == 0
        np.testing.assert_array_equal(one["min_dist"], til["min_dist"])
        assert (one["min_dist"] < R).sum() > len(x) // 4
        if capacity < 64:  # which pairs an overflowing list keeps depends on the order they were found in
            continue
        for kind in ("vt", "tv", "ee"):
            assert sum(len(a) for a in one[kind]) > 100
            for a, b in zip(one[kind], til[kind]):
                np.testing.assert_array_equal(np.sort(a), np.sort(b))
    # ordered lists are sorted; the unordered ones (ordered=False) hold the same entries in their appends' order
    if capacity == 64:
        for ordered, unordered in ((got[1], got[2]), (got[3], got[4])):
            assert all((np.diff(a) > 0).all() for k in ("vt", "tv", "ee") for a in ordered[0][k])
            assert any((np.diff(a) < 0).any() for a in unordered[0]["ee"])


def test_simulator_over_face_setting_reaches_the_detector(cloth, device):
    """Simulator(self_contact_over_face=C) lists the over-the-face rest neighbours that the default leaves out
    (the same brute-force pairs as above, with the simulator's search radius as both radii); a value outside
    [0, 1] is refused."""
    import clothsim as cs

    x, tris, edges, _ = cloth
    n = int(round(np.sqrt(len(x))))
    u, v = np.meshgrid(np.linspace(0, 1, n), np.linspace(0, 1, n), indexing="ij")
    uv = np.stack([u, v], -1).reshape(-1, 2)
    rest = np.column_stack([uv, np.zeros(len(uv))]).astype(np.float32)
    fabric = cs.Fabric(name="t", thickness=1e-3)
    r, c = 0.1, 0.9
    (vi, ti, dvt), _, _ = reference(x, tris, edges, r)
    (_, _, rvt), _, _ = reference(rest, tris, edges, r)
    near = (dvt < r - AMBIG) & (rvt < r - AMBIG)
    over = near & (_face_normal_cosine(x, tris, vi, ti) > c + 1e-3)
    assert over.sum() > 10
    listed = {}
    for fc in (0.0, c):
        cloth_ = cs.Cloth.from_mesh(x, tris, rest_uv=uv, fabric=fabric)
        sim = cs.Simulator(cloth_, device=device, self_collision=True, contact_margin=r - fabric.thickness,
                           self_contact_over_face=fc)
        sc = sim.solver.self_contacts
        sc.detect(sim.state.x, rebuild=True)
        while sc.detector.overflowed():  # the simulator's lists start short; step() grows them the same way
            sc.detector.grow()
            sc.detect(sim.state.x, rebuild=True)
        got = sc.detector.lists_numpy()["vt"]
        listed[fc] = [tt in set(got[vv].tolist()) for vv, tt in zip(vi[over], ti[over])]
        sim.release()
    assert not any(listed[0.0]) and all(listed[c])
    for bad in (-0.1, 1.5, float("nan")):
        with pytest.raises(cs.InputError, match="self_contact_over_face"):
            cs.Simulator(cs.Cloth.from_mesh(x, tris, rest_uv=uv, fabric=fabric), device=device, self_contact_over_face=bad)


def test_rank_lists_equal_the_insertion_sort():
    """The ranking list finish (rank_lists_kernel: several threads a list, each entry written to its rank; CUDA's
    until session 25, now rank_lists_warp_kernel, checked in tests/test_collision_gpu.py) against
    the CPU's insertion sort, launched on the CPU on the same appended lists: lists of every length from empty
    to past the capacity (an overflow, recorded with the length needed), entries distinct within a list and
    in random order. Same counts, same entries in the same order, same overflow record."""
    from clothsim.collision.contact_lists import finish_lists_kernel, rank_lists_kernel

    rng = np.random.default_rng(3)
    cap, lists = 7, 40
    need = rng.integers(0, cap + 4, lists).astype(np.int32)
    need[:cap + 2] = np.arange(cap + 2)  # every length 0 … cap + 1 at least once
    items = np.zeros((lists, cap), np.int32)
    for i, c in enumerate(need):
        items[i, : min(c, cap)] = rng.choice(1000, size=min(c, cap), replace=False)

    def run(lanes):
        count = wp.array(need, dtype=wp.int32, device="cpu")
        out = wp.zeros(lists * cap, dtype=wp.int32, device="cpu")
        appended = wp.array(items.ravel(), dtype=wp.int32, device="cpu")
        flags = [wp.zeros(1, dtype=wp.int32, device="cpu"), wp.zeros(3, dtype=wp.int32, device="cpu")]
        if lanes == 0:
            wp.launch(finish_lists_kernel, dim=lists, inputs=[cap, 2, count], outputs=[count, appended, *flags],
                      device="cpu")
            out = appended
        else:
            wp.launch(rank_lists_kernel, dim=lists * lanes, inputs=[cap, 2, lanes, count, count, appended],
                      outputs=[out, *flags], device="cpu")
        c = count.numpy()
        o = out.numpy().reshape(lists, cap)
        return c, [o[i, : c[i]].tolist() for i in range(lists)], [f.numpy().tolist() for f in flags]

    ref = run(0)
    assert ref[0].tolist() == np.minimum(need, cap).tolist()
    assert ref[1] == [sorted(items[i, : min(c, cap)].tolist()) for i, c in enumerate(need)]
    assert ref[2] == [[int((need > cap).sum())], [0, 0, int(need.max())]]
    for lanes in (1, 3, 8):
        got = run(lanes)
        assert got[0].tolist() == ref[0].tolist() and got[1] == ref[1] and got[2] == ref[2], lanes


def test_simulator_stops_cleanly_when_lists_cannot_grow(cloth, device, monkeypatch):
    """Contact lists that would outgrow one array (lowered here to 1000 entries, so the crumpled test cloth hits
    it in its first frame) stop step() with a SimulationError naming the frame and the lists; the state is
    the frame's start and the frame is not counted."""
    import clothsim as cs
    import clothsim.collision.self_contact as SC

    x, tris, edges, _ = cloth
    n = int(round(np.sqrt(len(x))))
    u, v = np.meshgrid(np.linspace(0, 1, n), np.linspace(0, 1, n), indexing="ij")
    uv = np.stack([u, v], -1).reshape(-1, 2)  # flat rest shape: the folded layers are contacts, not neighbours
    sim = cs.Simulator(cs.Cloth.from_mesh(x, tris, rest_uv=uv, fabric=cs.Fabric(name="t", thickness=1e-3)),
                       device=device, self_collision=True, contact_margin=0.25)  # a wide radius: long lists
    start = sim.positions()
    monkeypatch.setattr(SC, "MAX_LIST_ENTRIES", 1000)
    with pytest.raises(SimulationError, match=r"^frame 1 \(t = 0\.0167 s\): self-contact .* lists"):
        sim.step()
    assert sim.frame == 0
    np.testing.assert_array_equal(sim.positions(), start)
    monkeypatch.undo()
    sim.step()  # the lists can grow again: the frame runs
    assert sim.frame == 1


def test_grow_stops_at_the_largest_capacity_that_fits(cloth, device, monkeypatch):
    """grow() past MAX_LIST_ENTRIES: when doubling would overshoot one array but the longest list fits, the
    capacity becomes the largest that fits (MAX // primitives) and the lists are then complete; one entry less
    and grow() raises, naming the lists, with the capacities unchanged."""
    import clothsim.collision.self_contact as SC

    x, tris, edges, _ = cloth
    pos = wp.array(x, dtype=wp.vec3, device=device)

    def overflowed_detector():
        det = SelfContactDetector(len(x), tris, edges, vertex_capacity=2, edge_capacity=2, device=device,
                                  positions=x)
        det.detect(pos, R)
        assert det.overflowed()
        return det

    det = overflowed_detector()
    need = det.required.numpy().astype(np.int64)
    counts = np.array([det.vertex_count, det.triangle_count, det.edge_count], np.int64)
    k = int(np.argmax(need * counts))
    assert need[k] & (need[k] - 1), "the test needs a longest list that is not a power of two"
    limit = int((need * counts).max())  # list kind k fits exactly; doubling it would not
    monkeypatch.setattr(SC, "MAX_LIST_ENTRIES", limit)
    caps = det.grow()
    got_caps = np.array([caps["vt"], caps["tv"], caps["ee"]])
    assert got_caps[k] == limit // counts[k] >= need[k]
    assert (got_caps >= need).all() and (got_caps * counts <= limit).all()
    det.detect(pos, R)
    assert not det.overflowed()
    check_all_lists(det.lists_numpy(), cloth)
    det.release()

    det = overflowed_detector()
    before = det.capacities
    monkeypatch.setattr(SC, "MAX_LIST_ENTRIES", limit - 1)
    what = ("vertex-triangle", "triangle-vertex", "edge-edge")[k]
    with pytest.raises(SimulationError, match=f"self-contact {what} lists: a list needs {need[k]} entries"):
        det.grow()
    assert det.capacities == before
    det.release()


def test_threaded_detect_gives_the_same_lists(cloth):
    """CPU: detect(executor=, workers=) shares the search out: a worker updates the edge BVH beside the
    triangle BVH and the vertex-triangle search, then every thread takes chunks of the edge-edge search, each
    pair written to its lower edge's list, with the thread's own min_dist and counts, folded in afterwards.
    With lists that fit: the same lists, min_dist, overflow count and needed lengths as one thread, for one
    and for two workers. With lists that overflow (the frame is redone after grow()): the same overflow count,
    needed lengths (so the same grow()), min_dist and vertex-triangle lists; the edge-edge lists then hold
    pairs that fit, each a pair of the full lists."""
    from concurrent.futures import ThreadPoolExecutor

    x, tris, edges, _ = cloth
    pos = wp.array(x, dtype=wp.vec3, device="cpu")
    with ThreadPoolExecutor(max_workers=2) as pool:
        full = None
        for cap in (64, 2):
            got = []
            for ex, workers in ((None, 1), (pool, 1), (pool, 2)):
                det = SelfContactDetector(len(x), tris, edges, vertex_capacity=cap, edge_capacity=cap, device="cpu",
                                          positions=x)
                for rebuild in (False, True, False):  # the first detect() runs in one thread (it loads the kernels)
                    det.reset_overflow()
                    det.detect(pos, R, rebuild=rebuild, executor=ex, workers=workers)
                lists = det.lists_numpy()
                got.append(({k: [a.tolist() for a in lists[k]] for k in ("vt", "tv", "ee")}, lists["min_dist"].tolist(),
                            det.overflow.numpy().tolist(), det.required.numpy().tolist()))
                det.release()
            if cap == 64:
                assert got[0] == got[1] == got[2]
                assert got[0][2][0] == 0
                assert min(got[0][1]) < R  # pairs were found: min_dist came down from the radius
                full = got[0][0]["ee"]
                continue
            for g in got[1:]:
                assert g[1:] == got[0][1:]
                assert g[0]["vt"] == got[0][0]["vt"] and g[0]["tv"] == got[0][0]["tv"]
                for e, lst in enumerate(g[0]["ee"]):
                    assert len(lst) <= cap and set(lst) <= set(full[e]), e
            assert got[0][2][0] > 0 and max(got[0][3]) > cap


def test_group_order_makes_compact_groups_within_panels():
    """group_order (the grouped searches' groups): every point once, panel by panel, each panel padded with -1 to
    whole groups, and every group a small patch of one panel: on two 64 x 64 grids of 1 cm spacing whose boxes
    overlap (two panels, the second 3 points short), each group of 8 is a 2 x 4 block (span 3 cm; a run of the
    grid's index order spans 7 cm)."""
    n = 64
    u, v = np.meshgrid(np.arange(n) * 0.01, np.arange(n) * 0.01, indexing="ij")
    grid = np.stack([u, v, np.zeros_like(u)], -1).reshape(-1, 3)
    x = np.concatenate([grid, grid[:-3] + [0.3, 0.0, 0.0]])
    panel = np.repeat([0, 1], [n * n, n * n - 3])
    order = group_order(x, panel, 8)
    assert len(order) == 2 * n * n and (order[:-3] >= 0).all() and (order[-3:] == -1).all()
    assert sorted(order[:-3].tolist()) == list(range(len(x)))
    assert (panel[order[: n * n]] == 0).all() and (panel[order[n * n:-3]] == 1).all()
    groups = order.reshape(-1, 8)
    span = np.array([np.ptp(x[g[g >= 0]], axis=0).max() for g in groups])
    np.testing.assert_allclose(span[:-1], 0.03, atol=1e-9)  # the last group holds 5 points and 3 pads
    assert span[-1] <= 0.03 + 1e-9


def test_grouped_search_on_two_panels_with_a_seam():
    """The grouped searches (one traversal for a group of primitives; Warp's CPU fallback here) on two crumpled
    panels lying across each other, one vertex of each sewn to the other (a weld), with the rest filter: the same
    lists, entry for entry, and the same min_dist, bit for bit, as the one-thread searches."""
    x1, t1, _ = crumpled_cloth(12, seed=1)
    x2, t2, _ = crumpled_cloth(11, seed=2)
    x2 = (x2 @ np.array([[0, 1, 0], [-1, 0, 0], [0, 0, 1]], np.float32)) + np.array([1.0, 0.0, 0.015], np.float32)
    x = np.concatenate([x1, x2])
    tris = np.concatenate([t1, t2 + len(x1)])
    edges = unique_edges(tris)
    panel = np.repeat([0, 1], [len(x1), len(x2)]).astype(np.int32)
    weld = np.arange(len(x), dtype=np.int32)
    weld[len(x1) + 5] = 7  # a seam vertex of panel 1 sewn to vertex 7 of panel 0
    lists = []
    for tiled, grouped in ((False, False), (True, True)):
        det = SelfContactDetector(len(x), tris, edges, vertex_capacity=64, edge_capacity=64, device="cpu",
                                  positions=x, rest=x, panel=panel, weld=weld)
        det.tiled, det.grouped = tiled, grouped
        det.detect(wp.array(x, dtype=wp.vec3, device="cpu"), R, rest_radius=0.5 * R)
        assert not det.overflowed()
        lists.append(det.lists_numpy())
        if grouped:
            assert (det.vt_order.numpy() == -1).sum() == (-len(x1)) % 8 + (-len(x2)) % 8  # each panel padded
        det.release()
    one, grouped = lists
    tri_panel = panel[tris[:, 0]]
    across = sum(int((tri_panel[a] != panel[v]).sum()) for v, a in enumerate(one["vt"]))
    assert across > 50  # the panels lie across each other
    np.testing.assert_array_equal(one["min_dist"], grouped["min_dist"])
    for kind in ("vt", "tv", "ee"):
        assert sum(len(a) for a in one[kind]) > 100
        for a, b in zip(one[kind], grouped[kind]):
            np.testing.assert_array_equal(np.sort(a), np.sort(b))


@wp.kernel(enable_backward=False)
def _lower_kernel(values: wp.array(dtype=float), slots: int, dist: wp.array(dtype=float)):
    i = wp.tid()
    min_nonnegative(dist, i % slots, values[i])


def test_min_nonnegative_is_the_minimum_bit_for_bit(device):
    """``min_nonnegative`` (the searches' ``min_dist`` update: on CUDA an integer atomicMin on the float's bits)
    gives each entry the smallest of the values lowered into it, bit for bit, when thousands of threads lower the
    same few entries: distances spread over many binades, exact ties, subnormals and zero, and -0 and a negative
    value taken as +0. With ``--sim-device cuda:0`` this runs on the GPU."""
    rng = np.random.default_rng(5)
    slots = 7
    vals = (10.0 ** rng.uniform(-12, 1, 20000)).astype(np.float32)
    vals[::997] = np.float32(3.0e-3)  # ties
    vals[5] = np.float32(1e-40)  # subnormal
    vals[slots * 100 + 1] = np.float32(-0.0)
    vals[slots * 200 + 2] = np.float32(-2.5)
    vals[slots * 300 + 3] = np.float32(0.0)
    start = np.full(slots, 0.5, np.float32)
    dist = wp.array(start, dtype=float, device=device)
    wp.launch(_lower_kernel, dim=len(vals), inputs=[wp.array(vals, dtype=float, device=device), slots],
              outputs=[dist], device=device)
    want = start.copy()
    for k in range(slots):
        want[k] = min(want[k], np.maximum(vals[k::slots], np.float32(0.0)).min())
    got = dist.numpy()
    assert want[1] == 0.0 and want[2] == 0.0 and want[3] == 0.0 and want[5 % slots] <= 1e-40
    np.testing.assert_array_equal(got.view(np.uint32), (want + np.float32(0.0)).view(np.uint32))
