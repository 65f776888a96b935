"""The self-contact lists' bookkeeping, beside the searches that fill them (clothsim.collision.self_contact).

* :func:`record_overflow`: a list that needed more than its capacity is counted, with the length it needs;
* ``triangle_vertex_scatter_kernel``: the triangle–vertex lists as the vertex–triangle lists inverted
  (atomic appends);
* putting appended lists in order, so they are the same run to run and on both devices: on the CPU an
  in-place insertion sort (``finish_lists_kernel``: Warp runs a CPU launch's threads in index order, so the
  appends arrive nearly sorted); on CUDA ``rank_lists_warp_kernel``, a warp a list writing each entry to
  its rank in a second array;
* ``clamp_lists_kernel``: the same bookkeeping without the ordering (``ordered=False``: faster on CUDA, not
  bit-identical run to run there);
* ``edge_edge_scatter_kernel``: on the CPU, the two-sided edge–edge lists from the lower-edge lists that
  several threads searched;
* ``merge_side_kernel``: on the CPU, a worker thread's own minimum distances and overflow record, kept apart
  while it searched, folded into the detector's.
"""

from __future__ import annotations

import warp as wp

wp.set_module_options({"enable_backward": False})  # forward code only

# rank_lists_kernel (CUDA's ranking until session 25, kept for benchmarks/detect_variants.py and as the
# CPU-testable form of the same ranks): threads per list
RANK_LANES = 8


@wp.func
def record_overflow(count: int, capacity: int, kind: int, overflow: wp.array(dtype=wp.int32), required: wp.array(dtype=wp.int32)):
    """A list of kind ``kind`` (0 vt, 1 tv, 2 ee) needed ``count`` entries: past ``capacity``, count the overflow
    and raise the longest length needed."""
    if count > capacity:
        wp.atomic_add(overflow, 0, 1)
        wp.atomic_max(required, kind, count)


@wp.func
def clamp_list(i: int, capacity: int, kind: int, need: wp.array(dtype=wp.int32), count: wp.array(dtype=wp.int32),
               overflow: wp.array(dtype=wp.int32), required: wp.array(dtype=wp.int32)):
    """List i of an appended kind: record an overflow of the length it needs and clamp its count to the
    capacity; returns the clamped count."""
    record_overflow(need[i], capacity, kind, overflow, required)
    c = wp.min(count[i], capacity)
    count[i] = c
    return c


@wp.kernel
def triangle_vertex_scatter_kernel(
    vt_capacity: int,
    vt_count: wp.array(dtype=wp.int32),
    vt_tri: wp.array(dtype=wp.int32),
    capacity: int,
    tv_count: wp.array(dtype=wp.int32),
    tv_vertex: wp.array(dtype=wp.int32),
):
    """The triangle-vertex lists are the vertex-triangle lists inverted: each (v, t) pair appended to t's list
    (tv_count zeroed before; the order is fixed afterwards by ``finish_lists_kernel``)."""
    v = wp.tid()
    for k in range(vt_count[v]):
        t = vt_tri[v * vt_capacity + k]
        slot = wp.atomic_add(tv_count, t, 1)
        if slot < capacity:
            tv_vertex[t * capacity + slot] = v


@wp.kernel
def edge_edge_scatter_kernel(
    capacity: int,
    half_count: wp.array(dtype=wp.int32),
    half_edge: wp.array(dtype=wp.int32),
    ee_count: wp.array(dtype=wp.int32),
    ee_edge: wp.array(dtype=wp.int32),
    need: wp.array(dtype=wp.int32),
):
    """CPU, after the edge–edge search ran in several threads (``edge_edge_half_kernel``: each pair (e, f),
    e < f, in e's list only): each stored pair appended to e's list and to f's, as ``edge_edge_kernel``
    appends them (ee_count zeroed before; the order is fixed afterwards by ``finish_lists_kernel``), and e's
    own pairs, stored or not, added to the length its list needs (``need`` holds the pairs as upper edge)."""
    e = wp.tid()
    c = half_count[e]
    need[e] = need[e] + c
    for k in range(wp.min(c, capacity)):
        f = half_edge[e * capacity + k]
        slot = wp.atomic_add(ee_count, e, 1)
        if slot < capacity:
            ee_edge[e * capacity + slot] = f
        slot = wp.atomic_add(ee_count, f, 1)
        if slot < capacity:
            ee_edge[f * capacity + slot] = e


@wp.kernel
def add_counts_kernel(src: wp.array(dtype=wp.int32), dst: wp.array(dtype=wp.int32)):
    """dst += src (CPU: a worker thread's counts folded into the detector's)."""
    i = wp.tid()
    dst[i] = dst[i] + src[i]


@wp.kernel
def finish_lists_kernel(
    capacity: int,
    kind: int,
    need: wp.array(dtype=wp.int32),
    count: wp.array(dtype=wp.int32),
    items: wp.array(dtype=wp.int32),
    overflow: wp.array(dtype=wp.int32),
    required: wp.array(dtype=wp.int32),
):
    """A list filled by atomic appends: record an overflow of the length it needs (``need``: the appends
    counted, or, for lists inverted from other lists, every pair found), clamp the count to the capacity and
    sort the entries (insertion sort; lists are short), so the lists are the same run to run whatever the
    order of the appends."""
    i = wp.tid()
    c = clamp_list(i, capacity, kind, need, count, overflow, required)
    base = i * capacity
    for k in range(1, c):
        key = items[base + k]
        j = k - 1
        while j >= 0:
            if items[base + j] <= key:
                break
            items[base + j + 1] = items[base + j]
            j -= 1
        items[base + j + 1] = key


@wp.kernel
def clamp_lists_kernel(
    capacity: int,
    kind: int,
    need: wp.array(dtype=wp.int32),
    count: wp.array(dtype=wp.int32),
    overflow: wp.array(dtype=wp.int32),
    required: wp.array(dtype=wp.int32),
):
    """:func:`finish_lists_kernel` without the ordering (``SelfContactDetector(ordered=False)``): record an
    overflow and clamp the count; the entries stay in the order their appends arrived in (on CUDA that order
    varies run to run)."""
    clamp_list(wp.tid(), capacity, kind, need, count, overflow, required)


@wp.kernel
def rank_lists_kernel(
    capacity: int,
    kind: int,
    lanes: int,
    need: wp.array(dtype=wp.int32),
    count: wp.array(dtype=wp.int32),
    appended: wp.array(dtype=wp.int32),
    items: wp.array(dtype=wp.int32),
    overflow: wp.array(dtype=wp.int32),
    required: wp.array(dtype=wp.int32),
):
    """CUDA's :func:`finish_lists_kernel`: ``lanes`` threads per list write each appended entry straight to its
    sorted place in ``items`` (its rank: the entries of the list smaller than it; a list holds each entry
    once), reading ``appended`` only. An insertion sort, one thread a list, shifts entries in global memory
    and a warp waits for its longest list (H200, tangled fold N = 256: 62 ms a frame). Same lists, entry
    for entry, as the insertion sort (the CPU's)."""
    tid = wp.tid()
    i = tid // lanes
    lane = tid - i * lanes
    c = wp.min(count[i], capacity)  # lane 0 may have clamped count already: the same c either way
    if lane == 0:
        record_overflow(need[i], capacity, kind, overflow, required)
        count[i] = c
    base = i * capacity
    k = lane
    while k < c:
        key = appended[base + k]
        r = int(0)
        for j in range(c):
            if appended[base + j] < key:
                r += 1
        items[base + r] = key
        k += lanes


@wp.func_native(
    """
    #if defined(__CUDA_ARCH__)
    int r = 0;
    for (int j = 0; j < n; ++j) {
        r += __shfl_sync(0xffffffffu, others, j) < key;
    }
    return r;
    #else
    return 0;
    #endif
    """
)
def _warp_count_less(others: int, key: int, n: int) -> int: ...


@wp.kernel(module="unique", enable_backward=False)  # CUDA only (warp shuffles): a module of its own
def rank_lists_warp_kernel(
    capacity: int,
    kind: int,
    need: wp.array(dtype=wp.int32),
    count: wp.array(dtype=wp.int32),
    appended: wp.array(dtype=wp.int32),
    items: wp.array(dtype=wp.int32),
    overflow: wp.array(dtype=wp.int32),
    required: wp.array(dtype=wp.int32),
):
    """:func:`rank_lists_kernel` with a warp (32 threads, launched over lists × 32) a list: each lane
    holds one entry of a chunk of 32 in a register and counts the entries smaller than it as every chunk of the
    list passes through the warp by shuffles (``_warp_count_less``), so a list of c entries costs ⌈c/32⌉² × 32
    register compares a lane instead of c²/8 global loads (a piled fold's lists grow to tens of entries:
    H200, N = 256, 1 iteration, 775 µs a launch, a quarter of the frame's kernel time). The loops run the same
    trips in every lane of a warp (the list's length), as the shuffles need. Same lists, entry for entry."""
    tid = wp.tid()
    i = tid // 32
    lane = tid - i * 32
    c = wp.min(count[i], capacity)  # lane 0 may have clamped count already: the same c either way
    if lane == 0:
        record_overflow(need[i], capacity, kind, overflow, required)
        count[i] = c
    base = i * capacity
    a = int(0)
    while a < c:
        key = int(2147483647)
        if a + lane < c:
            key = appended[base + a + lane]
        r = int(0)
        b = int(0)
        while b < c:
            other = int(2147483647)
            if b + lane < c:
                other = appended[base + b + lane]
            r += _warp_count_less(other, key, wp.min(32, c - b))
            b += 32
        if a + lane < c:
            items[base + r] = key
        a += 32


@wp.kernel
def merge_side_kernel(
    side_min: wp.array(dtype=float),
    side_overflow: wp.array(dtype=wp.int32),
    side_required: wp.array(dtype=wp.int32),
    min_dist: wp.array(dtype=float),
    overflow: wp.array(dtype=wp.int32),
    required: wp.array(dtype=wp.int32),
):
    """CPU, after the edge-edge search ran in a thread of its own with its own min_dist and overflow record
    (Warp's CPU atomics are plain reads and writes, safe in one thread only): fold them into the detector's.
    A minimum and a maximum give the same result in any order."""
    v = wp.tid()
    min_dist[v] = wp.min(min_dist[v], side_min[v])
    if v == 0:
        overflow[0] = overflow[0] + side_overflow[0]
        for k in range(3):
            required[k] = wp.max(required[k], side_required[k])
