"""CUDA-only checks of the collision detectors (run with `pytest -m gpu` on the GPU machine).

* detect() is captured in a CUDA graph (wp.ScopedCapture) and replayed after the positions and
  the collider moved: the replayed lists equal an eager detect() bit for bit;
* two eager runs give bit-identical lists (each thread writes its own list in traversal order, the
  appended tv/ee lists are ranked into sorted order; min/overflow use order-free atomic min/max/add; the
  edge-edge search runs on a second stream, forked and joined inside the capture);
* the CUDA lists hold the same pairs as the CPU detector's (order may differ: the BVHs are built
  by different constructors, SAH on CPU, LBVH on CUDA).
No trimesh here (the GPU machine lacks it).
"""

import numpy as np
import pytest
import warp as wp

from clothsim.collision._arrays import unique_edges
from clothsim.collision.mesh_collider import ClothColliderContacts, MeshCollider
from clothsim.collision.self_contact import SelfContactDetector

pytestmark = pytest.mark.gpu
R = 0.06


def folded_grid(n=24, seed=0):
    rng = np.random.default_rng(seed)
    u, v = np.meshgrid(np.linspace(0, 1, n), np.linspace(0, 1, n), indexing="ij")
    x = np.stack([u, v, 0.02 * np.sin(7 * u) * np.cos(5 * v)], -1).reshape(-1, 3)
    fold = x[:, 0] > 0.5
    x[fold, 0] = 1.0 - x[fold, 0]
    x[fold, 2] += 0.03
    x += rng.normal(scale=0.004, size=x.shape)
    i, j = np.meshgrid(np.arange(n - 1), np.arange(n - 1), indexing="ij")
    a = (i * n + j).ravel()
    tris = np.concatenate([np.stack([a, a + n, a + n + 1], 1), np.stack([a, a + n + 1, a + 1], 1)]).astype(np.int32)
    return x.astype(np.float32), tris, unique_edges(tris)


def octahedron(scale=0.3):
    v = np.array([[1, 0, 0], [-1, 0, 0], [0, 1, 0], [0, -1, 0], [0, 0, 1], [0, 0, -1]], np.float32) * scale
    f = np.array([[0, 2, 4], [2, 1, 4], [1, 3, 4], [3, 0, 4], [2, 0, 5], [1, 2, 5], [3, 1, 5], [0, 3, 5]], np.int32)
    return v + np.float32([0.5, 0.5, 0.0]), f


def _snapshot(det, con):
    arrays = [det.vt_count, det.vt_tri, det.tv_count, det.tv_vertex, det.ee_count, det.ee_edge, det.min_dist,
              det.overflow, con.vertex_face, con.vertex_dist, con.vertex_normal, con.vertex_disp, con.ee_count,
              con.ee_edge, con.tv_count, con.tv_vertex]
    return [a.numpy().copy() for a in arrays]


def _sets(det):
    lists = det.lists_numpy()
    return {k: [frozenset(a.tolist()) for a in lists[k]] for k in ("vt", "tv", "ee")}


def test_detect_graph_capture_and_bitwise_determinism(device):
    x, tris, edges = folded_grid()
    cv, cf = octahedron()
    x2 = x + np.float32(0.003) * np.sin(np.arange(x.size, dtype=np.float32)).reshape(x.shape)

    det = SelfContactDetector(len(x), tris, edges, 256, 256, device=device, positions=x)
    col = MeshCollider(cv, cf, device=device)
    con = ClothColliderContacts(col, len(x), edges, triangles=tris, edge_capacity=32, triangle_capacity=8, device=device)
    pos = wp.array(x, dtype=wp.vec3, device=device)
    moved = wp.array(cv + np.float32([0.0, 0.0, 0.01]), dtype=wp.vec3, device=device)

    def step():
        det.reset_overflow()
        det.detect(pos, R)
        col.update_vertices(moved)
        con.detect(pos, R)

    step()  # load modules before capture
    with wp.ScopedCapture(device=device) as capture:
        step()
    pos.assign(x2)
    col.reset_vertices(cv)
    wp.capture_launch(capture.graph)
    replayed = _snapshot(det, con)
    col.reset_vertices(cv)
    step()
    eager = _snapshot(det, con)
    col.reset_vertices(cv)
    step()
    again = _snapshot(det, con)
    for a, b, c in zip(replayed, eager, again):
        np.testing.assert_array_equal(a, b)
        np.testing.assert_array_equal(b, c)
    assert replayed[7][0] == 0  # no overflow
    assert (replayed[8] >= 0).sum() > 0 and replayed[12].sum() > 0  # collider contacts exist

    cpu = SelfContactDetector(len(x), tris, edges, 256, 256, device="cpu", positions=x2)
    cpu.detect(wp.array(x2, dtype=wp.vec3, device="cpu"), R)
    assert _sets(cpu) == _sets(det)
    # the appended lists (tv, ee) are finished in sorted order on both devices (CUDA ranks them,
    # rank_lists_warp_kernel; the CPU sorts them in place): the same entries in the same order
    cl, gl = cpu.lists_numpy(), det.lists_numpy()
    for k in ("tv", "ee"):
        assert all(np.array_equal(a, b) for a, b in zip(cl[k], gl[k])), k
        assert all((np.diff(a) > 0).all() for a in gl[k]), k
    np.testing.assert_allclose(cpu.min_dist.numpy(), det.min_dist.numpy(), atol=1e-6)


def test_self_contact_solve_is_bitwise_deterministic(device, folded_cloth):
    """A cloth folding onto itself on the ground, simulated twice on CUDA: bit-identical positions.

    The solve updates one colour's vertices in parallel; a self-contact partner of the same colour is read
    at the iteration's start (clothsim.solver.self_collision), not while it is being written (a race: two
    runs differed). Two runs must agree exactly; the fold must also have brought layers into contact
    (pairs were found), or the test would not exercise the solve's contact blocks."""
    import clothsim as cs

    def run():
        sim = cs.Simulator(folded_cloth(), device=device, ground=0.0, self_collision=True)
        sim.step(30)
        pairs = int(sim.solver.self_contacts.detector.vt_count.numpy().sum())
        return sim.positions(), pairs

    a, pairs = run()
    b, _ = run()
    assert pairs > 0
    np.testing.assert_array_equal(a, b)


def test_unordered_lists_runs_differ_by_rounding(device, folded_cloth):
    """Simulator(deterministic=False) on CUDA: the self-contact lists are left in their appends' order (no ranking
    pass, no second list array). The fold above, twice, 30 frames: the runs' positions apart by rounding,
    amplified by the fold (RMS < 3 mm, at most 3 cm); prints the difference (README, "Physics model"). That the lists hold the same
    pairs as the ordered ones: tests/test_api.py::test_unordered_self_contact_lists (with --sim-device cuda:0)."""
    import clothsim as cs

    def run():
        sim = cs.Simulator(folded_cloth(), device=device, ground=0.0, self_collision=True, deterministic=False)
        sim.step(30)
        return sim

    a, b = run(), run()
    det = a.solver.self_contacts.detector
    assert det.vt_append is det.vt_tri and int(det.vt_count.numpy().sum()) > 0
    dx = np.linalg.norm(a.positions() - b.positions(), axis=1)
    rms, worst = float(np.sqrt((dx**2).mean())), float(dx.max())
    print(f"deterministic=False, 30 frames, two runs: RMS |dx| {rms:.3e} m, max {worst:.3e} m")
    # the pile amplifies the rounding chaotically: the largest gap varies from run to run (9.7e-4 m in session 27,
    # 5.4e-3 m in session 28), the RMS over the cloth much less
    assert rms < 3e-3 and worst < 3e-2, (rms, worst)
    a.release()
    b.release()


def test_warp_rank_lists_equal_the_insertion_sort():
    """CUDA's list finish (rank_lists_warp_kernel: a warp a list, sorted by the bitonic network in registers up
    to 128 entries, ranked by counting through shuffles above that) against the CPU's insertion sort
    on the same appended lists: every length from empty to past the capacity (an overflow, recorded with the
    length needed), across the 32-entry chunks and the network's limit (31, 32, 33, 64, 65, 128, 129, 256,
    257, 512, 513), entries distinct within a list, in random order and spread over the int32 range. Same counts,
    entries and order, same overflow record."""
    from clothsim.collision.contact_lists import finish_lists_kernel, rank_lists_warp_kernel

    rng = np.random.default_rng(5)
    cap, lists = 530, 700
    need = rng.integers(0, cap + 6, lists).astype(np.int32)
    need[:cap + 2] = np.arange(cap + 2)
    items = np.zeros((lists, cap), np.int32)
    for i, c in enumerate(need):
        items[i, : min(c, cap)] = rng.choice(2**31 - 2, size=min(c, cap), replace=False)

    def run(dev):
        count = wp.array(need, dtype=wp.int32, device=dev)
        appended = wp.array(items.ravel(), dtype=wp.int32, device=dev)
        out = wp.zeros(lists * cap, dtype=wp.int32, device=dev)
        flags = [wp.zeros(1, dtype=wp.int32, device=dev), wp.zeros(3, dtype=wp.int32, device=dev)]
        if dev == "cpu":
            wp.launch(finish_lists_kernel, dim=lists, inputs=[cap, 2, count], outputs=[count, appended, *flags],
                      device=dev)
            out = appended
        else:
            wp.launch(rank_lists_warp_kernel, dim=lists * 32, inputs=[cap, 2, count, count, appended],
                      outputs=[out, *flags], device=dev)
        c = count.numpy()
        o = out.numpy().reshape(lists, cap)
        return c.tolist(), [o[i, : c[i]].tolist() for i in range(lists)], [f.numpy().tolist() for f in flags]

    ref = run("cpu")
    assert ref[1] == [sorted(items[i, : min(c, cap)].tolist()) for i, c in enumerate(need)]
    assert run("cuda:0") == ref


def test_one_thread_and_half_warp_contact_solves_agree(device, folded_cloth, monkeypatch):
    """The solve with contact pairs in its two CUDA launch shapes: a half warp a vertex (every colour where the
    contact radius reaches clothsim.solver.vbd.TILE_CONTACT_RADIUS_EDGES median edges) and one thread a vertex
    (colours above TILE_MAX_VERTICES under that radius, forced here with a threshold of 0). The same sums in another order:
    the fold's 30 frames end apart by rounding that its buckling amplifies, bounded as for the unordered lists
    (RMS < 3 mm, at most 3 cm), and both with self-contact pairs and finite."""
    import clothsim as cs
    from clothsim.solver import vbd

    def run():
        sim = cs.Simulator(folded_cloth(), device=device, ground=0.0, self_collision=True)
        sim.step(30)
        pairs = int(sim.solver.self_contacts.detector.vt_count.numpy().sum())
        x = sim.positions()
        sim.release()
        return x, pairs

    tiled, pairs_t = run()
    monkeypatch.setattr(vbd, "TILE_MAX_CONTACT_VERTICES", 0)
    monkeypatch.setattr(vbd, "TILE_MAX_VERTICES", 0)
    untiled, pairs_u = run()
    assert pairs_t > 0 and pairs_u > 0
    assert np.isfinite(tiled).all() and np.isfinite(untiled).all()
    dx = np.linalg.norm(tiled - untiled, axis=1)
    rms, worst = float(np.sqrt((dx**2).mean())), float(dx.max())
    print(f"half warp against one thread a vertex, 30 frames: RMS |dx| {rms:.3e} m, max {worst:.3e} m")
    assert rms < 3e-3 and worst < 3e-2, (rms, worst)
