"""The self-contact lists' bookkeeping, beside the searches that fill them (clothsim.collision.self_contact).

* :func:`record_overflow`: a list that needed more than its capacity is counted, with the length it needs;
* putting appended lists in order, so they are the same run to run and on both devices: on the CPU an
  in-place insertion sort (``finish_lists_kernel``: Warp runs a CPU launch's threads in index order, so the
  appends arrive nearly sorted); on CUDA ``rank_lists_warp_kernel``, a warp a list sorting it into a second
  array (a bitonic network in registers up to 128 entries, counting ranks above that);
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


@wp.func
def warp_rank_by_counting(appended: wp.array(dtype=wp.int32), items: wp.array(dtype=wp.int32), base: int, c: int,
                          lane: int):
    """A warp writes each of the c entries at ``appended[base:]`` to its rank in ``items[base:]``: each lane holds
    one entry of a chunk of 32 in a register and counts the entries smaller than it as every chunk of the list
    passes through the warp by shuffles (``_warp_count_less``), ⌈c/32⌉² × 32 register compares a lane. The loops
    run the same trips in every lane (c must be the same in all), as the shuffles need."""
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


@wp.func_native(
    """
    #if defined(__CUDA_ARCH__)
    if (c > 128) return 0;
    if (c <= 1) {  // nothing to sort
        if (c == 1 && lane == 0) items.data[base] = appended.data[base];
        return 1;
    }
    const int INF = 0x7fffffff;
    const int K = c <= 32 ? 1 : (c <= 64 ? 2 : 4);
    int v0 = INF, v1 = INF, v2 = INF, v3 = INF;
    const int* src = appended.data + base;
    if (lane < c) v0 = src[lane];
    if (32 + lane < c) v1 = src[32 + lane];
    if (64 + lane < c) v2 = src[64 + lane];
    if (96 + lane < c) v3 = src[96 + lane];
    const int n = 32 * K;
    auto cmpx = [](int& a, int& b, bool up) { if ((a > b) == up) { int t = a; a = b; b = t; } };
    auto shfl = [lane](int& x, int i, int s, int d) {
        int other = __shfl_xor_sync(0xffffffffu, x, d);
        bool up = (i & s) == 0;
        bool lower = (lane & d) == 0;
        x = (lower == up) ? min(x, other) : max(x, other);
    };
    for (int s = 2; s <= n; s <<= 1) {
        for (int d = s >> 1; d > 0; d >>= 1) {
            if (d == 32) {
                cmpx(v0, v1, (lane & s) == 0);
                if (K > 2) cmpx(v2, v3, ((64 + lane) & s) == 0);
            } else if (d == 64) {
                cmpx(v0, v2, (lane & s) == 0);
                cmpx(v1, v3, ((32 + lane) & s) == 0);
            } else {
                shfl(v0, lane, s, d);
                if (K > 1) shfl(v1, 32 + lane, s, d);
                if (K > 2) { shfl(v2, 64 + lane, s, d); shfl(v3, 96 + lane, s, d); }
            }
        }
    }
    int* dst = items.data + base;
    if (lane < c) dst[lane] = v0;
    if (32 + lane < c) dst[32 + lane] = v1;
    if (64 + lane < c) dst[64 + lane] = v2;
    if (96 + lane < c) dst[96 + lane] = v3;
    return 1;
    #else
    return 0;
    #endif
    """
)
def _warp_bitonic(appended: wp.array(dtype=wp.int32), items: wp.array(dtype=wp.int32), base: int, c: int,
                  lane: int) -> int:
    """A warp sorts the list of c <= 128 entries at ``appended[base:]`` into ``items[base:]`` (a bitonic network
    over 32·K slots, K = 1, 2, 4 entries a lane in registers, padded with the largest int; shuffles across lanes,
    swaps within a lane). c must be the same in every lane; returns 0, writing nothing, for c > 128."""
    ...


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
    """:func:`rank_lists_kernel` with a warp (32 threads, launched over lists × 32) a list: a list of up to 128
    entries is sorted in registers by a bitonic network (``_warp_bitonic``, session 30: H200, N = 256 piled fold,
    edge–edge lists 0.346 → 0.316 ms a launch, the fold's frame 0.993 of counting's), a longer one ranked by
    counting (``warp_rank_by_counting``: ⌈c/32⌉² × 32 register compares a lane instead of c²/8 global loads; H200,
    N = 256, 1 iteration, 775 µs a launch of ``rank_lists_kernel``, a quarter of the frame's kernel
    time). Same lists, entry for entry."""
    tid = wp.tid()
    i = tid // 32
    lane = tid - i * 32
    c = wp.min(count[i], capacity)  # lane 0 may have clamped count already: the same c either way
    if lane == 0:
        record_overflow(need[i], capacity, kind, overflow, required)
        count[i] = c
    base = i * capacity
    if _warp_bitonic(appended, items, base, c, lane) == 0:  # longer than 128 entries
        warp_rank_by_counting(appended, items, base, c, lane)


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
