"""benchmarks/newton_side.py's count of the self-contact pairs Newton drops: its lists have a fixed length per
primitive, its detection counts every pair but stores only what fits. The counting kernel runs without Newton
(plain Warp arrays standing in for Newton's count and buffer-size arrays)."""

import importlib.util
import os
import sys

import numpy as np
import warp as wp

# newton_side imports its material mapping as a top-level module (benchmarks/ is on the path where it runs); load
# that by file too rather than putting benchmarks/ on sys.path (its render.py would shadow the render package)
_mspec = importlib.util.spec_from_file_location(
    "newton_mapping", os.path.join(os.path.dirname(__file__), "..", "benchmarks", "newton_mapping.py"))
sys.modules.setdefault("newton_mapping", importlib.util.module_from_spec(_mspec))
if not hasattr(sys.modules["newton_mapping"], "newton_parameters"):
    _mspec.loader.exec_module(sys.modules["newton_mapping"])
_spec = importlib.util.spec_from_file_location(
    "bench_newton_side", os.path.join(os.path.dirname(__file__), "..", "benchmarks", "newton_side.py"))
_ns = importlib.util.module_from_spec(_spec)
sys.modules[_spec.name] = _ns  # its dataclasses look their module up
_spec.loader.exec_module(_ns)
_fspec = importlib.util.spec_from_file_location(
    "bench_newton_filters", os.path.join(os.path.dirname(__file__), "..", "benchmarks", "newton_filters.py"))
_nf = importlib.util.module_from_spec(_fspec)
_fspec.loader.exec_module(_nf)


def test_dropped_pairs_are_counted_per_list_and_summed_over_launches():
    counts = [np.array([3, 70, 64, 0, 65], np.int32), np.array([1, 2], np.int32)]
    caps = [np.full(5, 64, np.int32), np.array([1, 1], np.int32)]
    longest = wp.zeros(3, dtype=wp.int32, device="cpu")
    dropped = wp.zeros(3, dtype=wp.float64, device="cpu")
    kernel = _ns._watch_kernel()
    for _substep in range(2):  # two substeps with the same lists: drops add up, the longest is a maximum
        for slot, c, b in ((0, counts[0], caps[0]), (2, counts[1], caps[1])):
            wp.launch(kernel, dim=len(c), inputs=[wp.array(c, device="cpu"), wp.array(b, device="cpu"), slot],
                      outputs=[longest, dropped], device="cpu")
    assert longest.numpy().tolist() == [70, 0, 2]
    # list 0: 70 - 64 and 65 - 64 past the buffer, twice; list 2: 2 - 1, twice
    assert dropped.numpy().tolist() == [14.0, 0.0, 2.0]


def _reference_filters(ends, tris, n_vertices):
    """Newton's 2-ring filters by their definition (tri_mesh_collision.py, threshold 2), with Python sets: edge
    (a, b) leaves out every edge with an endpoint in the one-ring of a or b (other than a, b), less the edges at a
    or b; vertex v leaves out every triangle of its one-ring neighbours, less its own triangles."""
    ring = [set() for _ in range(n_vertices)]
    at = [set() for _ in range(n_vertices)]
    tri_at = [set() for _ in range(n_vertices)]
    for e, (a, b) in enumerate(ends):
        ring[a].add(b), ring[b].add(a), at[a].add(e), at[b].add(e)
    for t, corners in enumerate(tris):
        for v in corners:
            tri_at[v].add(t)
    edge_sets = []
    for a, b in ends:
        s = set()
        for u in (ring[a] | ring[b]) - {a, b}:
            s |= at[u]
        edge_sets.append(sorted(s - at[a] - at[b]))
    vert_sets = []
    for v in range(n_vertices):
        s = set()
        for u in ring[v] - {v}:
            s |= tri_at[u]
        vert_sets.append(sorted(s - tri_at[v]))
    return edge_sets, vert_sets


def _csr(rows):
    return (np.array([x for r in rows for x in r], np.int32),
            np.concatenate([[0], np.cumsum([len(r) for r in rows])]).astype(np.int32))


def test_fast_contact_filters_equal_newtons_definition():
    """newton_filters' numpy builders of Newton's self-contact filters give the lists Newton's definition gives, in
    its CSR layout (rows sorted), on the benchmark grid and on a closed irregular mesh, across chunk boundaries.
    (Against Newton's own builder where Newton is installed: out of CI, checked at N = 8-128.)"""
    import trimesh

    sphere = trimesh.creation.icosphere(subdivisions=2)
    _v, grid = _ns.grid_mesh(9, 1.0)
    for tris in (np.asarray(grid), np.asarray(sphere.faces)):
        nv = int(tris.max()) + 1
        ends = _ns.interior_edges(tris)[:, 2:4]
        want_e, want_v = _reference_filters(ends, tris, nv)
        for chunk in (7, 1 << 16):
            fe, oe = _nf.edge_two_ring_filter(ends, nv, chunk=chunk)
            fv, ov = _nf.vertex_two_ring_filter(ends, tris, nv, chunk=chunk)
            for (f, o), want in (((fe, oe), want_e), ((fv, ov), want_v)):
                wf, wo = _csr(want)
                assert np.array_equal(o, wo) and np.array_equal(f, wf)
        assert len(fe) > 0 and len(fv) > 0


def test_newton_self_contact_detection_sets_its_speed_cap(monkeypatch):
    """Newton 1.8's SolverVBD truncates each vertex's move since its last self-contact detection at 0.425 of the
    search radius. By default it detects twice a substep (before and after the truncated first guess), so a
    dropped sheet can move two bounds a substep: at 1 iteration it levels off near one bound's speed, at 100 at
    twice it (2-core CPU: 0.384, 0.414, 0.742, 0.765 m/s at 1, 10, 30, 100 iterations). With one detection
    (self_contact_detection="pre-init", as clothsim detects) it levels off at one bound's speed at every
    iteration count. NewtonCloth.max_self_contact_speed() gives the most each allows. Free fall would be at
    9.81 m/s² x 0.4 s = 3.9 m/s. Needs the newton package (skipped without it, as in CI)."""
    import pytest

    pytest.importorskip("newton")
    monkeypatch.setitem(sys.modules, "newton_filters", _nf)  # NewtonCloth imports it from beside itself
    with pytest.raises(ValueError, match="self_contact_detection"):
        _ns.NewtonCloth(np.zeros((3, 3)), np.array([[0, 1, 2]]), np.array([], int), _ns.BenchMaterial(),
                        self_contact_detection="every-iteration")
    monkeypatch.setitem(sys.modules, "newton_side", _ns)  # benchmarks/newton_cap.py's own import of it
    cspec = importlib.util.spec_from_file_location(
        "bench_newton_cap", os.path.join(os.path.dirname(__file__), "..", "benchmarks", "newton_cap.py"))
    cap_mod = importlib.util.module_from_spec(cspec)
    cspec.loader.exec_module(cap_mod)
    one_bound = 0.425 * 0.0015 / (_ns.FRAME_DT / 10)  # 0.3825 m/s
    for mode, iterations, bounds_reached, bounds_allowed in (
            ("pre-init", 1, 1.0, 1.0), ("pre-init", 100, 1.0, 1.0),
            ("pre-post-init", 1, 1.0, 2.0), ("pre-post-init", 100, 2.0, 2.0)):
        speed, allowed = cap_mod.fall_speed(mode, iterations)
        assert allowed == pytest.approx(bounds_allowed * one_bound)
        assert speed == pytest.approx(bounds_reached * one_bound, rel=0.03), (mode, iterations)
