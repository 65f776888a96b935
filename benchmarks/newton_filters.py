"""Newton's default 2-ring self-contact filters, built in numpy (``use_fast_contact_filters``).

Newton's ``SolverVBD`` leaves out self-contact pairs within two edge rings (``particle_topological_contact_filter_
threshold = 2``) and builds those lists in Python, one primitive at a time (``newton/_src/geometry/
tri_mesh_collision.py``): 14 s of a 33 s build at N = 128 on the 2-core CPU, and the N = 1024 fold's build had not
finished after 7 minutes on the GPU machine. The builders here give the same CSR lists, entry for entry (checked
against Newton's at N = 8-128; ``tests/test_bench_newton_watch.py`` checks them against Newton's definition).
Only ``use_fast_contact_filters`` imports Newton.
"""

from __future__ import annotations

import numpy as np


def _ring_pairs(owner_ids, centers, off, vals):
    """For each (owner, center) pair, every (owner, vals[k]) with k in center's CSR row ``off``/``vals``."""
    counts = off[centers + 1] - off[centers]
    owners = np.repeat(owner_ids, counts)
    starts = np.repeat(off[centers], counts)
    local = np.arange(counts.sum(), dtype=np.int64) - np.repeat(np.cumsum(counts) - counts, counts)
    return owners, vals[starts + local]


def _csr_by_vertex(corners: np.ndarray, n_vertices: int):
    """CSR of the elements (rows of ``corners``) incident to each vertex: offsets (V+1,), element ids."""
    v = corners.ravel()
    elem = np.repeat(np.arange(corners.shape[0], dtype=np.int64), corners.shape[1])
    order = np.argsort(v, kind="stable")
    off = np.zeros(n_vertices + 1, dtype=np.int64)
    np.cumsum(np.bincount(v, minlength=n_vertices), out=off[1:])
    return off, elem[order]


def _one_ring(ends: np.ndarray, n_vertices: int):
    """Each vertex's incident edges (CSR offsets, edge ids) and the neighbour across each of them."""
    inc_off, inc_e = _csr_by_vertex(ends, n_vertices)
    at = np.repeat(np.arange(n_vertices), np.diff(inc_off))
    return inc_off, inc_e, np.where(ends[inc_e, 0] == at, ends[inc_e, 1], ends[inc_e, 0])


def _sorted_unique(key: np.ndarray) -> np.ndarray:
    """np.unique by sorting (numpy 2's hash-based unique was 5x slower on these arrays)."""
    key = np.sort(key)
    return key[np.concatenate(([True], key[1:] != key[:-1]))] if key.size else key


def _unique_csr(rows: np.ndarray, cols: np.ndarray, n_rows: int, n_cols: int):
    """Sorted, deduplicated (row, col) pairs as CSR (flat int32 values, int32 offsets), as Newton's set_to_csr."""
    key = _sorted_unique(rows.astype(np.int64) * n_cols + cols)
    r = key // n_cols
    offsets = np.zeros(n_rows + 1, dtype=np.int32)
    np.cumsum(np.bincount(r, minlength=n_rows), out=offsets[1:])
    return (key - r * n_cols).astype(np.int32), offsets


def edge_two_ring_filter(edge_ends: np.ndarray, n_vertices: int, chunk: int = 1 << 16):
    """Newton's 2-ring edge-edge filter (``build_edge_n_ring_edge_collision_filter(2, ...)`` then ``set_to_csr``)
    in numpy: for edge e = (a, b), every edge with an endpoint u in the one-ring of a or b (u not a or b), less the
    edges incident to a or b. Same CSR arrays, entry for entry (checked by ``_check_filters``)."""
    ends = np.asarray(edge_ends, dtype=np.int64)
    n_edges = ends.shape[0]
    inc_off, inc_e, other = _one_ring(ends, n_vertices)
    vals, offs = [], [np.zeros(1, np.int32)]
    base = 0
    for lo in range(0, n_edges, chunk):
        e = np.arange(lo, min(lo + chunk, n_edges), dtype=np.int64)
        a, b = ends[e, 0], ends[e, 1]
        o0, u0 = _ring_pairs(e, a, inc_off, other)
        o1, u1 = _ring_pairs(e, b, inc_off, other)
        own, u = np.concatenate([o0, o1]), np.concatenate([u0, u1])
        keep = (u != ends[own, 0]) & (u != ends[own, 1])
        own, u = own[keep], u[keep]
        key = _sorted_unique((own - lo) * n_vertices + u)
        own, u = key // n_vertices + lo, key % n_vertices
        own, f = _ring_pairs(own, u, inc_off, inc_e)
        fa, fb = ends[f, 0], ends[f, 1]
        ea, eb = ends[own, 0], ends[own, 1]
        keep = (fa != ea) & (fa != eb) & (fb != ea) & (fb != eb)
        v, o = _unique_csr(own[keep] - lo, f[keep], len(e), n_edges)
        vals.append(v)
        offs.append(o[1:] + base)
        base += int(o[-1])
    return np.concatenate(vals), np.concatenate(offs).astype(np.int32)


def vertex_two_ring_filter(edge_ends: np.ndarray, tris: np.ndarray, n_vertices: int, chunk: int = 1 << 16):
    """Newton's 2-ring vertex-triangle filter (``build_vertex_n_ring_tris_collision_filter(2, ...)``): for vertex v,
    every triangle of a one-ring neighbour, less v's own triangles. Same CSR arrays as Newton's."""
    ends = np.asarray(edge_ends, dtype=np.int64)
    tris = np.asarray(tris, dtype=np.int64)
    inc_off, _inc_e, other = _one_ring(ends, n_vertices)
    tri_off, tri_t = _csr_by_vertex(tris, n_vertices)
    vals, offs = [], [np.zeros(1, np.int32)]
    base = 0
    for lo in range(0, n_vertices, chunk):
        v = np.arange(lo, min(lo + chunk, n_vertices), dtype=np.int64)
        own, u = _ring_pairs(v, v, inc_off, other)
        keep = u != own
        own, t = _ring_pairs(own[keep], u[keep], tri_off, tri_t)
        keep = (tris[t, 0] != own) & (tris[t, 1] != own) & (tris[t, 2] != own)
        vv, o = _unique_csr(own[keep] - lo, t[keep], len(v), tris.shape[0])
        vals.append(vv)
        offs.append(o[1:] + base)
        base += int(o[-1])
    return np.concatenate(vals), np.concatenate(offs).astype(np.int32)


def use_fast_contact_filters() -> None:
    """Newton builds its default 2-ring self-contact filters in Python loops, one primitive at a time: 14 s of a
    33 s build at N = 128 on the 2-core CPU, and the N = 1024 fold's build had not finished after 7 minutes on the
    GPU machine. This replaces the two builders (threshold 2, no external map) with the numpy ones above; the lists
    are the same, so Newton's detection and results are unchanged. Other thresholds use Newton's own."""
    import warp as wp
    from newton._src.geometry import tri_mesh_collision as tmc

    cls = tmc.TriMeshCollisionDetector
    if getattr(cls, "_clothsim_fast_filters", False):
        return
    orig_edge, orig_vertex = cls._build_edge_edge_filter, cls._build_vertex_triangle_filter

    def build_edge(self, threshold, external_map, adjacency):
        if threshold != 2 or external_map is not None or adjacency is None:
            return orig_edge(self, threshold, external_map, adjacency)
        flat, off = edge_two_ring_filter(np.asarray(adjacency[0])[:, 2:4], self.model.particle_count)
        self.edge_filtering_list = wp.array(flat, dtype=wp.int32, device=self.device)
        self.edge_filtering_list_offsets = wp.array(off, dtype=wp.int32, device=self.device)

    def build_vertex(self, threshold, external_map, adjacency):
        if threshold != 2 or external_map is not None or adjacency is None:
            return orig_vertex(self, threshold, external_map, adjacency)
        flat, off = vertex_two_ring_filter(np.asarray(adjacency[0])[:, 2:4], self.model.tri_indices.numpy(),
                                           self.model.particle_count)
        self.vertex_triangle_filtering_list = wp.array(flat, dtype=wp.int32, device=self.device)
        self.vertex_triangle_filtering_list_offsets = wp.array(off, dtype=wp.int32, device=self.device)

    cls._build_edge_edge_filter, cls._build_vertex_triangle_filter = build_edge, build_vertex
    cls._clothsim_fast_filters = True
