"""Self-contact candidate lists for the cloth (vertex–triangle, triangle–vertex, edge–edge).

:class:`SelfContactDetector` finds, for a query radius R [m], every pair of non-adjacent
primitives closer than R and writes them to fixed-capacity per-primitive lists, on the device,
without host round trips (so ``detect()`` can be captured in a CUDA graph). Two BVH queries per
detection: one per vertex against the triangles (the vt lists, and the tv lists: each pair is appended to
both) and one per
edge against the edges, each pair tested once by its lower edge and appended to both lists. On CUDA a block of
threads traverses the BVH together (``wp.tile_bvh_query_aabb``: a pile's tens of candidates tested in parallel),
once for a group of ``GROUP_SIZE`` primitives that are neighbours in the rest shape (``grouped``; each thread
tests its candidate against the whole group), except on meshes of ``VT_THREAD_MIN_VERTICES`` vertices
(``EE_THREAD_MIN_EDGES`` edges) or more, where one thread a query fills the GPU (``vt_threads``, ``ee_threads``);
the edge–edge search runs on a second stream beside the vertex–triangle one;
on the CPU one thread a query (a one-thread search writes its vt lists in BVH traversal order, no appends). Appended lists
are put in order afterwards, so every list is the same run to run: on the CPU sorted in place
(``finish_lists_kernel``); on CUDA the appends go to lists of their own (``vt_append``, ``tv_append``,
``ee_append``) and a warp a list writes each entry to its rank in the final list
(``rank_lists_warp_kernel``; both kernels in :mod:`.contact_lists`), unless ``ordered=False``.
A list array holds at most ``MAX_LIST_ENTRIES`` entries (primitives × capacity):
:meth:`SelfContactDetector.grow` stops at the largest capacity that fits and, past that, raises
:class:`clothsim.errors.SimulationError`.

Array layouts (all int32 / float32 wp.arrays on the detector's device):

=====================  ===============  ==============================================================
name                   shape            meaning
=====================  ===============  ==============================================================
``vt_count``           (N,)             number of stored triangles near vertex v (<= ``vt_capacity``)
``vt_tri``             (N * Kv,)        ``vt_tri[v * Kv + k]``, k < vt_count[v]: triangle index
``tv_count``           (M,)             number of stored vertices near triangle t (<= ``tv_capacity``)
``tv_vertex``          (M * Kt,)        ``tv_vertex[t * Kt + k]``: vertex index
``ee_count``           (E,)             number of stored edges near edge e (<= ``ee_capacity``)
``ee_edge``            (E * Ke,)        ``ee_edge[e * Ke + k]``: edge index (both (e, f) and (f, e) are stored)
``min_dist``           (N,)             [m] smallest distance from any primitive containing v (v itself,
                                        a triangle of v, an edge of v) to a non-adjacent primitive, among
                                        all pairs found (stored or not); R if none
``overflow``           (1,)             number of lists that needed more than their capacity since the last
                                        :meth:`reset_overflow` (0 = nothing dropped)
``required``           (3,)             longest list needed (vt, tv, ee) since the last reset
=====================  ===============  ==============================================================

"Near" means distance < R between the closest points: point–triangle distance for vt/tv,
segment–segment distance for ee. Adjacent pairs are excluded: a vertex of the triangle (vt, tv),
the same edge or an edge sharing a vertex (ee).
"""

from __future__ import annotations

import threading

import numpy as np
import warp as wp

from ..cpu_threads import taker
from ._arrays import MAX_LIST_ENTRIES, as_index_array, as_vec3_array, grown_capacities, query_block_dim
from .contact_lists import (add_counts_kernel, clamp_lists_kernel, edge_edge_scatter_kernel, finish_lists_kernel,
                            merge_side_kernel, rank_lists_warp_kernel)
from .self_contact_kernels import (GROUP_SIZE, TILE_LANES, copy_points_kernel, edge_bounds_kernel,
                                   edge_edge_group_kernel, edge_edge_half_kernel, edge_edge_kernel,
                                   edge_edge_tiled_kernel, pack_edges_kernel, pack_triangles_kernel,
                                   triangle_bounds_kernel, vertex_triangle_group_kernel, vertex_triangle_kernel,
                                   vertex_triangle_tiled_kernel)

VT, TV, EE = 0, 1, 2
# CPU, threaded detect(): the edge-edge search in this many chunks per thread, taken in turn (the fold at
# N = 64: a thread's share of the search varies with where the cloth lies in layers)
EE_CHUNKS_PER_THREAD = 8
# CPU: edges per leaf of the edge BVH (a shallower tree, each leaf's boxes tested in a row: the piled fold's
# edge-edge search at N = 64, 30 frames, 26.1 -> 23.4 ms in one thread, benchmarks/detect_variants.py; on the
# H200 leaves of 2 or 4 were slower, 2.3 -> 3.0 ms at N = 128, so CUDA keeps 1)
CPU_EDGE_LEAF = 4
# CUDA: meshes of at least this many vertices (edges) search vertex-triangle (edge-edge) pairs with one thread a
# query (vertex_triangle_kernel, edge_edge_kernel, the CPU's searches), smaller ones with a block a group of queries: with
# hundreds of thousands of queries the GPU is full without sharing a query between threads. H200, the fold after 8
# frames (benchmarks/detect_variants.py, results/detect_variants_h200_s33_threads.*): the whole detection 21.26 ->
# 16.43 ms at N = 1024 (vertex-triangle 6.18 -> 3.45, edge-edge 15.25 -> 12.66), 3.38 -> 2.53 ms at N = 512 (the
# edge-edge search alone there: vertex-triangle 0.87 grouped, 0.91 one thread a vertex); the fold's frame over 12
# frames 326 -> 277 ms at 1 iteration and 585 -> 532 at 4 (N = 1024), 57.7 -> 48.5 and 124.3 -> 115.0 (N = 512)
# (results/ab_frame_h200_s33_threads.*). At N = 256 in a pile one thread a query was 3x slower than a block a
# query (session 17). Read when a detector is made (benchmarks/sim_grid.py --vt-thread-min-vertices,
# --ee-thread-min-edges)
VT_THREAD_MIN_VERTICES = 1 << 19
EE_THREAD_MIN_EDGES = 1 << 19


# --------------------------------------------------------------------------------------
# groups for the grouped searches


def group_order(x: np.ndarray, panel: np.ndarray, group: int = GROUP_SIZE) -> np.ndarray:
    """Indices of the points ``x`` ``(K, 3)`` panel by panel, each panel's along a 3D Morton curve (10 bits an axis
    over the cube on its bounding box's longest side), each panel padded with -1 to whole groups of ``group``:
    every run of ``group`` is a compact patch of one panel."""
    panel = np.asarray(panel, np.int64)
    parts = []
    for p in np.unique(panel):
        idx = np.flatnonzero(panel == p)
        xp = x[idx]
        lo = xp.min(axis=0)
        span = max(float((xp.max(axis=0) - lo).max()), 1e-12)  # one scale for all axes: cubic cells
        q = np.clip(((xp - lo) / span * 1023.0).astype(np.int64), 0, 1023)
        code = np.zeros(len(idx), np.int64)
        for bit in range(10):
            for axis in range(3):
                code |= ((q[:, axis] >> bit) & 1) << (3 * bit + axis)
        parts += [idx[np.argsort(code, kind="stable")].astype(np.int32), np.full((-len(idx)) % group, -1, np.int32)]
    return np.concatenate(parts) if parts else np.zeros(0, np.int32)


# --------------------------------------------------------------------------------------
# detector


class SelfContactDetector:
    """Fixed-capacity self-contact lists of one cloth mesh (or several, concatenated).

    Args:
        positions_capacity: number of cloth vertices N; ``detect()`` reads ``positions[0:N]``.
        triangles: ``(M, 3)`` vertex indices (numpy int, wp.array2d int32 or ``(M,)`` wp.vec3i).
        edges: ``(E, 2)`` vertex indices of the undirected edges (numpy int, wp.array2d int32 or ``(E,)`` wp.vec2i).
        vertex_capacity: Kv, triangles stored per vertex (vt lists).
        edge_capacity: Ke, edges stored per edge (ee lists).
        device: Warp device (default: Warp's default device).
        triangle_capacity: Kt, vertices stored per triangle (tv lists); default Kv.
        positions: optional ``(N, 3)`` positions [m] to build the BVHs now. Without them the BVHs
            are built by the first :meth:`detect` (which then allocates; do it before graph capture).
        ordered: put the appended lists in order (default), so they are the same run to run; False leaves them in
            the order the appends arrived in, which on CUDA varies run to run (one pass less a list kind).

    The triangle, vertex and edge BVHs are built once and refitted by every :meth:`detect`, or
    re-split in place (``detect(..., rebuild=True)`` or :meth:`rebuild`) when the cloth has deformed
    far from the shape they were built on: a refitted tree's boxes grow as the cloth crumples and
    every query visits more of them (the solver rebuilds once per frame). Call :meth:`release` to free everything.
    """

    def __init__(
        self,
        positions_capacity: int,
        triangles,
        edges,
        vertex_capacity: int = 16,
        edge_capacity: int = 16,
        device=None,
        *,
        triangle_capacity: int | None = None,
        positions=None,
        weld=None,
        rest=None,
        panel=None,
        ordered: bool = True,
    ):
        self.device = wp.get_device(device)
        # appended lists put in order (the same run to run; on CUDA a ranking pass a list kind), or left in the
        # order the appends arrived in (CUDA: that order varies run to run; the CPU's appends come in one order)
        self.ordered = bool(ordered)
        self.vertex_count = int(positions_capacity)
        self.triangles = as_index_array(triangles, 3, self.device)
        self.edges = as_index_array(edges, 2, self.device)
        self.triangle_count = self.triangles.shape[0]
        self.edge_count = self.edges.shape[0]
        if self.vertex_count <= 0 or self.triangle_count == 0:
            raise ValueError("SelfContactDetector needs at least one vertex and one triangle")
        self.vt_capacity = int(vertex_capacity)
        self.tv_capacity = int(triangle_capacity if triangle_capacity is not None else vertex_capacity)
        self.ee_capacity = int(edge_capacity)
        if min(self.vt_capacity, self.tv_capacity, self.ee_capacity) < 1:
            raise ValueError("list capacities must be >= 1")

        n, m, e, dev = self.vertex_count, self.triangle_count, self.edge_count, self.device
        self.points = wp.zeros(n, dtype=wp.vec3, device=dev)  # [m] the mesh's own copy of the positions
        self.triangle_lowers = wp.zeros(m, dtype=wp.vec3, device=dev)
        self.triangle_uppers = wp.zeros(m, dtype=wp.vec3, device=dev)
        self.edge_lowers = wp.zeros(max(e, 1), dtype=wp.vec3, device=dev)
        self.edge_uppers = wp.zeros(max(e, 1), dtype=wp.vec3, device=dev)
        self.vt_count = wp.zeros(n, dtype=wp.int32, device=dev)
        self.tv_count = wp.zeros(m, dtype=wp.int32, device=dev)
        self.ee_count = wp.zeros(e, dtype=wp.int32, device=dev)
        self.min_dist = wp.zeros(n, dtype=float, device=dev)
        # weld[v]: representative of the vertices sewn to v (seams); primitives that share a
        # representative are adjacent, never in contact (a closed seam is not a collision)
        weld_np = np.arange(n, dtype=np.int32) if weld is None else np.asarray(weld, dtype=np.int32)
        if weld_np.shape != (n,) or weld_np.min(initial=0) < 0 or weld_np.max(initial=0) >= n:
            raise ValueError(f"weld must be {n} vertex indices")
        self.weld = wp.array(weld_np, dtype=wp.int32, device=dev)
        # the searches run tiled (a block of TILE_LANES threads a query: vertex_triangle_tiled_kernel,
        # edge_edge_tiled_kernel) on CUDA, one thread a query on the CPU; a test may set ``tiled`` on the CPU
        # to run the tiled kernels there (Warp's CPU fallback of the block query). They read a primitive's
        # vertices and their weld ids in 16-byte loads:
        self.tiled = dev.is_cuda
        # tiled searches for a group of GROUP_SIZE primitives at a time (one BVH traversal a group, not one a
        # primitive: vertex_triangle_group_kernel, edge_edge_group_kernel; a test may set ``grouped`` on the CPU
        # too); the groups (vt_order, ee_order) are made by build() when grouped
        self.grouped = dev.is_cuda
        self.vt_order = self.ee_order = None
        # the searches with one thread a query on CUDA for large meshes (a test may set them on the CPU)
        self.vt_threads = dev.is_cuda and n >= VT_THREAD_MIN_VERTICES
        self.ee_threads = dev.is_cuda and e >= EE_THREAD_MIN_EDGES
        self.edge_info = wp.zeros(max(e, 1), dtype=wp.vec4i, device=dev)
        self.tri_info = wp.zeros(m, dtype=wp.vec4i, device=dev)
        self.tri_weld = wp.zeros(m, dtype=wp.vec4i, device=dev)
        if e:
            wp.launch(pack_edges_kernel, dim=e, inputs=[self.edges, self.weld], outputs=[self.edge_info], device=dev)
        wp.launch(pack_triangles_kernel, dim=m, inputs=[self.triangles, self.weld],
                  outputs=[self.tri_info, self.tri_weld], device=dev)
        # rest-shape neighbour filter (detect(rest_radius > 0)): rest positions [m] (a panel's 2D pattern
        # coordinates, or the 3D rest shape) and the panel (connected piece) of each vertex
        self.has_rest = rest is not None
        rest_np = np.zeros((n, 3), np.float32) if rest is None else np.asarray(rest, dtype=np.float32)
        panel_np = np.zeros(n, np.int32) if panel is None else np.asarray(panel, dtype=np.int32)
        if rest_np.shape != (n, 3) or not np.isfinite(rest_np).all():
            raise ValueError(f"rest must be {n} finite 3D rest positions")
        if panel_np.shape != (n,):
            raise ValueError(f"panel must be {n} panel ids")
        self.rest = wp.array(rest_np, dtype=wp.vec3, device=dev)
        self.last_radius = 0.0  # [m] of the last detect() (for the message of an impossible grow())
        self.panel = wp.array(panel_np, dtype=wp.int32, device=dev)
        self.overflow = wp.zeros(1, dtype=wp.int32, device=dev)
        self.required = wp.zeros(3, dtype=wp.int32, device=dev)
        # CUDA: the edge-edge search runs on a stream of its own beside the vertex-triangle one (detect());
        # CPU, given an executor: in a worker thread, with its own min_dist and overflow record
        self._side = wp.Stream(dev) if dev.is_cuda else None
        # CPU, given an executor: the threads' own min_dist (one per worker; this thread writes min_dist), the
        # (zero) overflow record merge_side_kernel reads beside them, the lower-edge lists and the recorded
        # launches of the edge chunks (_detect_threads)
        self._side_mins, self._side_needs = [], []
        self._ee_need = None
        self._side_flags = ([wp.zeros(1, dtype=wp.int32, device=dev), wp.zeros(3, dtype=wp.int32, device=dev)]
                            if dev.is_cpu else [])
        self._half_edge = self._half_count = None
        self._chunk_launches = None
        self._threads_ready = False  # the first CPU detect() runs in one thread (it loads the kernels)
        self._allocate_lists()
        self.triangle_bvh = None
        self.edge_bvh = None
        if positions is not None:
            self.build(positions)

    # -- buffers

    def _allocate_lists(self):
        dev = self.device
        self.vt_tri = wp.zeros(self.vertex_count * self.vt_capacity, dtype=wp.int32, device=dev)
        self.tv_vertex = wp.zeros(self.triangle_count * self.tv_capacity, dtype=wp.int32, device=dev)
        self.ee_edge = wp.zeros(self.edge_count * self.ee_capacity, dtype=wp.int32, device=dev)
        # where the atomic appends go: on CUDA lists of their own, ranked into vt_tri / tv_vertex / ee_edge
        # (rank_lists_warp_kernel); on the CPU the lists themselves, sorted in place (finish_lists_kernel; the CPU's
        # one-thread vertex-triangle search writes the vertices' lists in BVH order, no appends)
        if dev.is_cuda and self.ordered:
            self.vt_append = wp.zeros_like(self.vt_tri)
            self.tv_append = wp.zeros_like(self.tv_vertex)
            self.ee_append = wp.zeros_like(self.ee_edge)
        else:
            self.vt_append, self.tv_append, self.ee_append = self.vt_tri, self.tv_vertex, self.ee_edge

    @property
    def capacities(self) -> dict:
        """Current list capacities: {"vt": Kv, "tv": Kt, "ee": Ke}."""
        return {"vt": self.vt_capacity, "tv": self.tv_capacity, "ee": self.ee_capacity}

    def memory_bytes(self) -> int:
        """Bytes held in this detector's wp.arrays (not counting the BVH nodes)."""
        arrays = (
            self.points, self.edge_lowers, self.edge_uppers,
            self.triangle_lowers, self.triangle_uppers,
            self.vt_count, self.tv_count, self.ee_count, self.min_dist, self.weld, self.rest, self.panel,
            self.overflow, self.required, self.vt_tri, self.tv_vertex, self.ee_edge, self.triangles, self.edges,
            *((self.vt_append, self.tv_append, self.ee_append) if self.vt_append is not self.vt_tri else ()),
            *self._side_mins, *self._side_flags,
            self.edge_info, self.tri_info, self.tri_weld, self.vt_order, self.ee_order,
            *self._side_needs, self._half_edge, self._half_count, self._ee_need,
        )  # fmt: skip
        return sum(a.capacity for a in arrays if a is not None)

    def release(self):
        """Free every device buffer (idempotent). The detector is unusable afterwards."""
        for name in (
            "triangle_bvh", "edge_bvh", "points", "edge_lowers",
            "triangle_lowers", "triangle_uppers",
            "edge_uppers", "vt_count", "tv_count", "ee_count", "min_dist", "weld", "rest", "panel", "overflow",
            "required",
            "vt_tri", "tv_vertex", "ee_edge", "vt_append", "tv_append", "ee_append", "triangles", "edges", "_half_edge",
            "edge_info", "tri_info", "tri_weld", "vt_order", "ee_order",
            "_half_count", "_ee_need", "_chunk_launches",
        ):  # fmt: skip
            setattr(self, name, None)
        self._side = None
        self._side_flags = []
        self._side_mins, self._side_needs = [], []

    # -- acceleration structures

    def _update_bounds(self, positions: wp.array):
        wp.launch(copy_points_kernel, dim=self.vertex_count, inputs=[positions], outputs=[self.points],
                  device=self.device)
        wp.launch(triangle_bounds_kernel, dim=self.triangle_count, inputs=[self.points, self.triangles],
                  outputs=[self.triangle_lowers, self.triangle_uppers], device=self.device)
        if self.edge_count:
            wp.launch(edge_bounds_kernel, dim=self.edge_count, inputs=[self.points, self.edges],
                      outputs=[self.edge_lowers, self.edge_uppers], device=self.device)

    def build(self, positions):
        """Build the three BVHs on ``positions`` ``(N, 3)`` [m] (allocates; once, outside graph capture)."""
        pos = self._check_positions(as_vec3_array(positions, self.device))
        self._update_bounds(pos)
        self.triangle_bvh = wp.Bvh(self.triangle_lowers, self.triangle_uppers)
        if self.grouped:
            self._group_orders(pos)
        self.edge_bvh = (wp.Bvh(self.edge_lowers, self.edge_uppers, leaf_size=CPU_EDGE_LEAF if self.device.is_cpu else 1)
                         if self.edge_count else None)

    def _group_orders(self, positions: wp.array):
        """The grouped searches' groups (:func:`group_order`): vertices, and edges by their midpoints, panel by
        panel along a Morton curve through the rest shape (the build positions without one), each panel padded
        with -1 to whole groups of GROUP_SIZE. Neighbours in the rest shape stay neighbours however the cloth
        folds, so a group's box stays about as small as its patch of cloth."""
        x = (self.rest.numpy() if self.has_rest else positions.numpy()[: self.vertex_count]).astype(np.float64)
        panel = self.panel.numpy()
        e = self.edges.numpy().reshape(-1, 2)
        self.vt_order = wp.array(group_order(x, panel), dtype=wp.int32, device=self.device)
        self.ee_order = (wp.array(group_order(0.5 * (x[e[:, 0]] + x[e[:, 1]]), panel[e[:, 0]]), dtype=wp.int32,
                                  device=self.device) if self.edge_count else None)

    def rebuild(self):
        """Re-split the three BVHs on the bounds of the last :meth:`detect`, in place (no allocation)."""
        self.triangle_bvh.rebuild()
        if self.edge_bvh is not None:
            self.edge_bvh.rebuild()

    def _check_positions(self, positions: wp.array) -> wp.array:
        if positions.shape[0] < self.vertex_count:
            raise ValueError(f"positions has {positions.shape[0]} entries, the detector needs {self.vertex_count}")
        if positions.device != self.device:
            raise ValueError(f"positions live on {positions.device}, the detector on {self.device}")
        return positions

    # -- detection

    def detect(self, positions: wp.array, query_radius: float, rebuild: bool = False, rest_radius: float = 0.0,
               over_face_cos: float = 0.0, executor=None, workers: int = 1):
        """Refit (or, with ``rebuild``, re-split) the BVHs to ``positions`` and fill every list for pairs
        closer than ``query_radius`` [m].

        ``rest_radius`` [m] > 0 (needs ``rest`` at construction) also leaves out rest neighbours: pairs whose
        primitives lie closer than ``rest_radius`` in the rest shape of the same panel. With the search radius
        as ``rest_radius`` these are the flat cloth's own neighbours (e.g. a vertex and the triangles just
        beyond its ring), which a fold can bring into contact only by bending tighter than the radius; Newton's ``SolverVBD`` leaves out two topological rings for
        the same reason (``particle_topological_contact_filter_threshold``).

        ``over_face_cos`` > 0 keeps a rest-neighbour vertex–triangle pair after all when the vertex has come
        over the face: the separation from the closest point makes an angle with the face normal whose
        cosine is at least ``over_face_cos``. In a flat or gently curved sheet the separation of neighbours
        lies in the surface (cosine near 0); a hairpin fold tighter than the radius brings a vertex over a
        neighbouring face, which is then a contact (and bounds the vertex's move) instead of passing
        through. 0 (the default) leaves every rest neighbour out. Edge–edge pairs are not affected.

        ``executor`` (CPU; a ``concurrent.futures.Executor`` with at least ``workers`` threads): the work is
        shared between this thread and ``workers`` of the executor's. One worker updates the edge BVH while this
        thread updates the triangle BVH and runs the vertex–triangle search; then every thread takes chunks of
        the edge–edge search (``EE_CHUNKS_PER_THREAD`` each, in turn, until none is left), each pair written to
        its lower edge's list and into its own ``min_dist``, and the two-sided lists are made from those
        (``edge_edge_scatter_kernel``). The lists and ``min_dist`` are the same, bit for bit, as one thread's.

        ``positions``: ``wp.array(dtype=wp.vec3)`` with at least N entries, on the detector's device.
        Launches kernels only (no host synchronisation, no allocation once built), so it can be
        captured in a CUDA graph; ``query_radius`` is then fixed into the graph. ``overflow`` and
        ``required`` accumulate until :meth:`reset_overflow`. Do not capture it on the CPU: Warp
        1.19's CPU graph capture does not record a BVH refit or rebuild (it runs once, at capture time).
        """
        # CPU with worker threads (after a first detect in one thread, which loads the kernels): the searches
        # and the BVH updates shared out (_detect_threads)
        threaded = (self._side is None and executor is not None and bool(self.edge_count) and self._threads_ready
                    and self.triangle_bvh is not None)
        if self.triangle_bvh is None:
            self.build(positions)
        elif threaded:
            self._check_positions(positions)
        else:
            self._check_positions(positions)
            self._update_bounds(positions)
            if rebuild:
                self.rebuild()
            else:
                self.triangle_bvh.refit()
                if self.edge_bvh is not None:
                    self.edge_bvh.refit()
        r = float(query_radius)
        self.last_radius = r
        rr = float(rest_radius)
        if rr > 0.0 and not self.has_rest:
            raise ValueError("rest_radius > 0 needs the rest shape: SelfContactDetector(..., rest=, panel=)")
        dev = self.device
        flags = [self.overflow, self.required]
        filt = [self.weld, self.rest, self.panel, rr, r]
        # min_dist starts at the radius and every kernel lowers it by atomic min; the appended lists
        # start empty (memsets: capturable)
        self.min_dist.fill_(r)
        self.tv_count.zero_()
        self.ee_count.zero_()
        if self._side is None:
            if threaded:
                self._detect_threads(positions, rebuild, filt, float(over_face_cos), flags, executor, max(1, int(workers)))
                return
            self._vertex_triangle_lists(filt, float(over_face_cos), flags)
            self._edge_edge_lists(filt, flags, self.min_dist)
            self._threads_ready = executor is not None
            return
        # CUDA: the two searches share nothing but min_dist (atomic min) and the overflow counters (atomic
        # add, max), which give the same result in any order, so the edge-edge search runs on a second
        # stream beside the vertex-triangle one (forked and joined by events: also inside a graph capture)
        main = wp.get_stream(dev)
        with wp.ScopedStream(self._side, sync_enter=True):
            self._edge_edge_lists(filt, flags, self.min_dist)
        self._vertex_triangle_lists(filt, float(over_face_cos), flags)
        main.wait_stream(self._side)

    def _detect_threads(self, positions, rebuild, filt, over_face_cos, flags, executor, workers):
        """detect() on the CPU in this thread and ``workers`` of ``executor``'s (see detect()'s docstring)."""
        dev = self.device
        self._ensure_half_lists(workers)
        wp.launch(copy_points_kernel, dim=self.vertex_count, inputs=[positions], outputs=[self.points], device=dev)
        chunks = self._edge_chunks(filt, workers)
        self._ee_need.zero_()
        for m, need in zip(self._side_mins[:workers], self._side_needs[:workers]):
            m.fill_(filt[-1])
            need.zero_()
        take = taker()  # each chunk goes to one thread
        edges_ready = threading.Event()

        def side(t):
            if t == 0:
                try:
                    wp.launch(edge_bounds_kernel, dim=self.edge_count, inputs=[self.points, self.edges],
                              outputs=[self.edge_lowers, self.edge_uppers], device=dev)
                    self.edge_bvh.rebuild() if rebuild else self.edge_bvh.refit()
                finally:
                    edges_ready.set()
            else:
                edges_ready.wait()
            take(chunks[t + 1])

        jobs = [executor.submit(side, t) for t in range(workers)]
        try:
            wp.launch(triangle_bounds_kernel, dim=self.triangle_count, inputs=[self.points, self.triangles],
                      outputs=[self.triangle_lowers, self.triangle_uppers], device=dev)
            self.triangle_bvh.rebuild() if rebuild else self.triangle_bvh.refit()
            self._vertex_triangle_lists(filt, over_face_cos, flags)
            edges_ready.wait()
            take(chunks[0])
        finally:
            for job in jobs:
                job.result()
        for m, need in zip(self._side_mins[:workers], self._side_needs[:workers]):
            wp.launch(merge_side_kernel, dim=self.vertex_count, inputs=[m, *self._side_flags],
                      outputs=[self.min_dist, *flags], device=dev)
            wp.launch(add_counts_kernel, dim=self.edge_count, inputs=[need], outputs=[self._ee_need], device=dev)
        wp.launch(edge_edge_scatter_kernel, dim=self.edge_count,
                  inputs=[self.ee_capacity, self._half_count, self._half_edge],
                  outputs=[self.ee_count, self.ee_edge, self._ee_need], device=dev)
        self._finish(self.ee_capacity, EE, self._ee_need, self.ee_count, self.ee_append, self.ee_edge, flags)

    def prepare_threads(self, workers: int):
        """CPU: allocate now what detect(executor=, workers=) needs (else its first threaded call does)."""
        if self.device.is_cpu and self.edge_count:
            self._ensure_half_lists(int(workers))

    def _ensure_half_lists(self, workers):
        """CPU, threaded detect(): the lower-edge lists, the lengths the lists need, and per worker a min_dist
        and an upper-edge count (allocated by prepare_threads() or the first threaded detect(), again after
        grow())."""
        dev, e = self.device, self.edge_count
        if self._half_edge is None or self._half_edge.shape[0] != e * self.ee_capacity:
            self._half_edge = wp.zeros(e * self.ee_capacity, dtype=wp.int32, device=dev)
            self._half_count = wp.zeros(e, dtype=wp.int32, device=dev)
            self._ee_need = wp.zeros(e, dtype=wp.int32, device=dev)
            self._chunk_launches = None
        while len(self._side_mins) < workers:
            self._side_mins.append(wp.zeros(self.vertex_count, dtype=float, device=dev))
            self._side_needs.append(wp.zeros(e, dtype=wp.int32, device=dev))
            self._chunk_launches = None

    def _edge_chunks(self, filt, workers):
        """Per thread (this one first, then each worker), the recorded launches of ``edge_edge_half_kernel``
        over the edge chunks, each writing its thread's counts and min_dist. Kept while the BVH, radii and
        capacity stay."""
        key = (self.edge_bvh.id, float(filt[3]), float(filt[4]), self.ee_capacity, workers)
        if self._chunk_launches is not None and self._chunk_launches[0] == key:
            return self._chunk_launches[1]
        n = min(self.edge_count, (workers + 1) * EE_CHUNKS_PER_THREAD)
        bounds = [(self.edge_count * k) // n for k in range(n + 1)]
        own = [(self._ee_need, self.min_dist), *zip(self._side_needs[:workers], self._side_mins[:workers])]
        weld, rest, panel, rr, r = filt
        chunks = [[wp.launch(edge_edge_half_kernel, dim=b1 - b0,
                             inputs=[self.edge_bvh.id, self.points, self.edge_info, rest, panel, rr, r, self.ee_capacity, b0],
                             outputs=[self._half_count, self._half_edge, need, m], device=self.device, record_cmd=True)
                   for b0, b1 in zip(bounds, bounds[1:])] for need, m in own]
        self._chunk_launches = (key, chunks)
        return chunks

    def _finish(self, capacity, kind, need, count, appended, items, flags):
        dev = self.device
        if not self.ordered:
            wp.launch(clamp_lists_kernel, dim=count.shape[0], inputs=[capacity, kind, need],
                      outputs=[count, *flags], device=dev)
        elif dev.is_cuda:
            wp.launch(rank_lists_warp_kernel, dim=count.shape[0] * 32, inputs=[capacity, kind, need, count, appended],
                      outputs=[items, *flags], device=dev)
        else:
            wp.launch(finish_lists_kernel, dim=count.shape[0], inputs=[capacity, kind, need],
                      outputs=[count, items, *flags], device=dev)

    def _vertex_triangle_lists(self, filt, over_face_cos, flags):
        dev = self.device
        if self.vt_threads or not self.tiled:  # one thread a vertex, its list in BVH order; appends to the triangles'
            wp.launch(vertex_triangle_kernel, dim=self.vertex_count,
                      inputs=[self.triangle_bvh.id, self.points, self.tri_info, self.tri_weld, *filt, over_face_cos,
                              self.vt_capacity, self.tv_capacity],
                      outputs=[self.vt_count, self.vt_tri, self.min_dist, self.tv_count, self.tv_append, *flags],
                      device=dev, block_dim=query_block_dim(dev, self.vertex_count))
            self._finish(self.tv_capacity, TV, self.tv_count, self.tv_count, self.tv_append, self.tv_vertex, flags)
            return
        # tiled: appends to both sides' lists, put in order into vt_tri and tv_vertex
        caps = [self.vt_capacity, self.tv_capacity]
        outputs = [self.vt_count, self.vt_append, self.min_dist, self.tv_count, self.tv_append]
        self.vt_count.zero_()
        if self.grouped:  # a block a group of vertices (vertex_triangle_group_kernel)
            if self.vt_order is None:  # grouped set after build() (a test on the CPU)
                self._group_orders(self.points)
            wp.launch_tiled(vertex_triangle_group_kernel, dim=[self.vt_order.shape[0] // GROUP_SIZE],
                            inputs=[self.triangle_bvh.id, self.points, self.triangle_lowers, self.triangle_uppers,
                                    self.vt_order, GROUP_SIZE, self._lanes(), self.tri_info, self.tri_weld, *filt,
                                    over_face_cos, *caps],
                            outputs=outputs, block_dim=TILE_LANES, device=dev)
        else:  # a block a vertex (vertex_triangle_tiled_kernel)
            wp.launch_tiled(vertex_triangle_tiled_kernel, dim=[self.vertex_count],
                            inputs=[self.triangle_bvh.id, self.points, self.tri_info, self.tri_weld, *filt,
                                    over_face_cos, *caps],
                            outputs=outputs, block_dim=TILE_LANES, device=dev)
        self._finish(self.vt_capacity, VT, self.vt_count, self.vt_count, self.vt_append, self.vt_tri, flags)
        self._finish(self.tv_capacity, TV, self.tv_count, self.tv_count, self.tv_append, self.tv_vertex, flags)

    def _edge_edge_lists(self, filt, flags, min_dist):
        if not self.edge_count:
            return
        dev = self.device
        weld, rest, panel, rr, r = filt
        inputs = [self.edge_bvh.id, self.points, self.edge_info, rest, panel, rr, r, self.ee_capacity]
        if self.ee_threads or not self.tiled:  # one thread an edge (edge_edge_kernel)
            wp.launch(edge_edge_kernel, dim=self.edge_count, inputs=inputs,
                      outputs=[self.ee_count, self.ee_append, min_dist], device=dev,
                      block_dim=query_block_dim(dev, self.edge_count))
        elif self.grouped:  # a block a group of edges (edge_edge_group_kernel)
            if self.ee_order is None:
                self._group_orders(self.points)
            wp.launch_tiled(edge_edge_group_kernel, dim=[self.ee_order.shape[0] // GROUP_SIZE],
                            inputs=[self.edge_bvh.id, self.points, self.edge_lowers, self.edge_uppers, self.ee_order,
                                    GROUP_SIZE, self._lanes(), self.edge_info, rest, panel, rr, r, self.ee_capacity],
                            outputs=[self.ee_count, self.ee_append, min_dist], block_dim=TILE_LANES, device=dev)
        else:  # a block an edge (edge_edge_tiled_kernel)
            wp.launch_tiled(edge_edge_tiled_kernel, dim=[self.edge_count], inputs=inputs,
                            outputs=[self.ee_count, self.ee_append, min_dist], block_dim=TILE_LANES, device=dev)
        self._finish(self.ee_capacity, EE, self.ee_count, self.ee_count, self.ee_append, self.ee_edge, flags)

    def _lanes(self) -> int:
        """Threads a tiled block runs with: TILE_LANES on CUDA; Warp's CPU fallback runs a block as one thread."""
        return TILE_LANES if self.device.is_cuda else 1

    def reset_overflow(self):
        """Zero ``overflow`` and ``required`` (a memset: capturable)."""
        self.overflow.zero_()
        self.required.zero_()

    def overflowed(self) -> bool:
        """Whether any list overflowed since the last reset (reads one int back to the host)."""
        return int(self.overflow.numpy()[0]) > 0

    def grow(self) -> dict:
        """Enlarge the lists after an overflow; returns the new capacities. Reallocates (recapture graphs).

        Each list kind that overflowed is doubled until it holds the longest list seen since the
        last reset; if none is known to have overflowed, every capacity is doubled. A capacity whose
        doubling would take the array past ``MAX_LIST_ENTRIES`` gets the largest that fits instead, if that
        holds the longest list and is larger than before; else a SimulationError. Resets the overflow
        counters; list contents are invalid until the next :meth:`detect`.
        """
        req = self.required.numpy()
        counts = (self.vertex_count, self.triangle_count, self.edge_count)
        caps = grown_capacities(
            [self.vt_capacity, self.tv_capacity, self.ee_capacity], req, counts, MAX_LIST_ENTRIES,
            [f"self-contact {w}" for w in ("vertex-triangle", "triangle-vertex", "edge-edge")],
            lambda: (f"The contact radius ({self.last_radius:.4g} m) spans many mesh edges (mean rest edge "
                     f"{self.mean_edge():.3g} m), so cloth in layers lists hundreds of pairs per primitive: lower the "
                     "fabric's thickness or the contact margin, or use a coarser mesh."))
        self.vt_capacity, self.tv_capacity, self.ee_capacity = caps
        self._allocate_lists()
        if self._half_edge is not None:  # the threaded search's lower-edge lists, at the new capacity
            self._ensure_half_lists(len(self._side_mins))
        self.reset_overflow()
        return self.capacities

    def mean_edge(self) -> float:
        """[m] mean edge length of the rest shape (of the last positions without one); NaN without edges."""
        if not self.edge_count:
            return float("nan")
        x = (self.rest if self.has_rest else self.points).numpy().astype(np.float64)
        e = self.edges.numpy().reshape(-1, 2)
        return float(np.linalg.norm(x[e[:, 0]] - x[e[:, 1]], axis=1).mean())

    # -- host views (tests, debugging)

    def lists_numpy(self) -> dict:
        """Host copies: {"vt": [array of triangle ids per vertex], "tv": [...], "ee": [...], "min_dist": (N,)}."""

        def split(count, flat, cap):
            c = count.numpy()
            f = flat.numpy().reshape(len(c), cap) if len(c) else np.zeros((0, cap), np.int32)
            return [f[i, : c[i]].copy() for i in range(len(c))]

        return {
            "vt": split(self.vt_count, self.vt_tri, self.vt_capacity),
            "tv": split(self.tv_count, self.tv_vertex, self.tv_capacity),
            "ee": split(self.ee_count, self.ee_edge, self.ee_capacity),
            "min_dist": self.min_dist.numpy(),
        }
