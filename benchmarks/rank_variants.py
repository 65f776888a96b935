"""Ranking variants for ``detect_variants.py --only rank`` (CUDA): clothsim's ranking of the appended contact
lists (``rank_lists_warp_kernel``: a warp a list, sorting a list of up to 128 entries in registers by a bitonic
network since session 30, counting ranks above that), against ``count`` (every list ranked by counting, clothsim's
until session 29) and ``width`` = 8 or 16 lanes a list counting, so that a warp ranks several short lists at once
(session 29: on this CPU's fold at N = 128 after 30 frames the non-empty lists held 16 vertex–triangle, 8
triangle–vertex and 30 edge–edge entries on average). Counting ranks costs ⌈c/32⌉² × 32 shuffles a lane for a list
of c, the network 15 / 42 / 112 compare-exchanges for up to 32 / 64 / 128 (its index logic is checked in a numpy
model of the warp, ``bitonic_model``, for every c up to 128, and up to 512 for ``bitonic512``:
``python benchmarks/rank_variants.py``). ``bitonic512``
(session 31) extends the network to lists of up to 512 entries, 16 a lane in registers (the N = 1024 fold's
edge–edge lists reached 534; lists over 128 are ranked by counting in clothsim); its PTX for sm_90 holds no local
memory. Session 32 (H200, the same network swapped into clothsim's kernel, ``results/detect_variants_h200_s32_rank_bitonic512.*``):
slower than clothsim's at every size, even on short lists (N = 1024 edge–edge 0.748 → 1.691 ms a launch, N = 256
0.055 → 0.096), so clothsim keeps the 128-entry network. Each variant's output is checked entry for entry against clothsim's. H200, session 30 (``results/detect_variants_h200_s30_rank.*``,
before the network was taken up, named ``bitonic`` there and the counting one ``warp``): N = 256 edge–edge 0.346 →
0.316 ms, 8 lanes 0.994 ms, 16 lanes 0.515 ms.
"""

from __future__ import annotations

import numpy as np
import warp as wp

from clothsim.collision.contact_lists import rank_lists_warp_kernel, record_overflow, warp_rank_by_counting

wp.set_module_options({"enable_backward": False})


@wp.func_native(
    """
    #if defined(__CUDA_ARCH__)
    int r = 0;
    for (int j = 0; j < width; ++j) {
        r += __shfl_sync(0xffffffffu, others, j, width) < key;
    }
    return r;
    #else
    return 0;
    #endif
    """
)
def _group_count_less(others: int, key: int, width: int) -> int: ...


@wp.func_native(
    """
    #if defined(__CUDA_ARCH__)
    return __reduce_max_sync(0xffffffffu, v);
    #else
    return v;
    #endif
    """
)
def _warp_max(v: int) -> int: ...


@wp.kernel(module="unique", enable_backward=False)  # CUDA only (warp shuffles)
def rank_lists_group_kernel(capacity: int, kind: int, width: int, lists: int, need: wp.array(dtype=wp.int32),
                            count: wp.array(dtype=wp.int32), appended: wp.array(dtype=wp.int32),
                            items: wp.array(dtype=wp.int32), overflow: wp.array(dtype=wp.int32),
                            required: wp.array(dtype=wp.int32)):
    """clothsim's ``rank_lists_warp_kernel`` with ``width`` lanes (8, 16) a list, so a warp ranks 32 / width
    lists: each lane holds one entry of a chunk of ``width`` and counts the entries smaller than it as every chunk
    of its list passes through its lane group (shuffles of that width). The shuffles need every lane of the warp,
    so the loops run to the longest list of the warp (``__reduce_max_sync``; shorter lists' lanes hold the
    largest int, which counts for nothing). Launched over a whole number of warps."""
    tid = wp.tid()
    i = tid // width
    lane = tid - i * width
    c = int(0)
    if i < lists:
        c = wp.min(count[i], capacity)
        if lane == 0:
            record_overflow(need[i], capacity, kind, overflow, required)
            count[i] = c
    cmax = _warp_max(c)
    base = i * capacity
    a = int(0)
    while a < cmax:
        key = int(2147483647)
        if a + lane < c:
            key = appended[base + a + lane]
        r = int(0)
        b = int(0)
        while b < cmax:
            other = int(2147483647)
            if b + lane < c:
                other = appended[base + b + lane]
            r += _group_count_less(other, key, width)
            b += width
        if a + lane < c:
            items[base + r] = key
        a += width


@wp.func
def warp_list_start(tid: int, capacity: int, kind: int, need: wp.array(dtype=wp.int32),
                    count: wp.array(dtype=wp.int32), overflow: wp.array(dtype=wp.int32),
                    required: wp.array(dtype=wp.int32)):
    """A warp a list (launched over lists × 32): thread ``tid``'s lane, its list's length clamped to the capacity
    (lane 0 records an overflow and stores the clamped count) and the list's first entry, as in clothsim's
    ``rank_lists_warp_kernel``."""
    i = tid // 32
    lane = tid - i * 32
    c = wp.min(count[i], capacity)
    if lane == 0:
        record_overflow(need[i], capacity, kind, overflow, required)
        count[i] = c
    return lane, c, i * capacity


@wp.kernel(module="unique", enable_backward=False)  # CUDA only (warp shuffles)
def rank_lists_count_kernel(capacity: int, kind: int, need: wp.array(dtype=wp.int32),
                            count: wp.array(dtype=wp.int32), appended: wp.array(dtype=wp.int32),
                            items: wp.array(dtype=wp.int32), overflow: wp.array(dtype=wp.int32),
                            required: wp.array(dtype=wp.int32)):
    """clothsim's ``rank_lists_warp_kernel`` as it was until session 30: every list ranked by counting (no bitonic
    sort for lists of up to 128 entries)."""
    lane, c, base = warp_list_start(wp.tid(), capacity, kind, need, count, overflow, required)
    warp_rank_by_counting(appended, items, base, c, lane)


@wp.func_native(
    """
    #if defined(__CUDA_ARCH__)
    if (c > 512) return 0;
    if (c <= 1) {  // nothing to sort
        if (c == 1 && lane == 0) items.data[base] = appended.data[base];
        return 1;
    }
    const int INF = 0x7fffffff;
    int n = 32;
    while (n < c) n <<= 1;  // 32, 64, ..., 512 slots: K = n / 32 entries a lane
    const int K = n >> 5;
    int v[16];
    const int* src = appended.data + base;
    #pragma unroll
    for (int k = 0; k < 16; ++k) v[k] = (k < K && 32 * k + lane < c) ? src[32 * k + lane] : INF;
    // swaps between a lane's slots k and k | DK (DK a constant, k unrolled: v stays in registers)
    #define CLOTHSIM_BITONIC_SWAPS(DK) \\
        _Pragma("unroll") for (int k = 0; k < 16; ++k) { \\
            if ((k & (DK)) == 0 && k < K) { \\
                const bool up = ((32 * k + lane) & s) == 0; \\
                const int a = v[k], b = v[k | (DK)]; \\
                if ((a > b) == up) { v[k] = b; v[k | (DK)] = a; } \\
            } \\
        }
    for (int s = 2; s <= n; s <<= 1) {
        for (int d = s >> 1; d > 0; d >>= 1) {
            if (d == 32) { CLOTHSIM_BITONIC_SWAPS(1) }
            else if (d == 64) { CLOTHSIM_BITONIC_SWAPS(2) }
            else if (d == 128) { CLOTHSIM_BITONIC_SWAPS(4) }
            else if (d == 256) { CLOTHSIM_BITONIC_SWAPS(8) }
            else {
                const bool lower = (lane & d) == 0;
                #pragma unroll
                for (int k = 0; k < 16; ++k) {
                    if (k < K) {  // K is the same in every lane: all 32 take part in the shuffle
                        const int other = __shfl_xor_sync(0xffffffffu, v[k], d);
                        const bool up = ((32 * k + lane) & s) == 0;
                        v[k] = (lower == up) ? min(v[k], other) : max(v[k], other);
                    }
                }
            }
        }
    }
    #undef CLOTHSIM_BITONIC_SWAPS
    int* dst = items.data + base;
    #pragma unroll
    for (int k = 0; k < 16; ++k) if (k < K && 32 * k + lane < c) dst[32 * k + lane] = v[k];
    return 1;
    #else
    return 0;
    #endif
    """
)
def _warp_bitonic512(appended: wp.array(dtype=wp.int32), items: wp.array(dtype=wp.int32), base: int, c: int,
                     lane: int) -> int:
    """clothsim's ``_warp_bitonic`` for lists of up to 512 entries: K = 1, 2, ..., 16 entries a lane in registers
    (32·K slots), swaps between a lane's slots for strides of 32 and more; returns 0, writing nothing, for
    c > 512. Its index logic is :func:`bitonic_model`'s."""
    ...


@wp.kernel(module="unique", enable_backward=False)  # CUDA only (warp shuffles)
def rank_lists_bitonic512_kernel(capacity: int, kind: int, need: wp.array(dtype=wp.int32),
                                 count: wp.array(dtype=wp.int32), appended: wp.array(dtype=wp.int32),
                                 items: wp.array(dtype=wp.int32), overflow: wp.array(dtype=wp.int32),
                                 required: wp.array(dtype=wp.int32)):
    """clothsim's ``rank_lists_warp_kernel`` with the network for lists of up to 512 entries (``_warp_bitonic512``;
    the N = 1024 fold's edge–edge lists reached 534), counting ranks above that."""
    lane, c, base = warp_list_start(wp.tid(), capacity, kind, need, count, overflow, required)
    if _warp_bitonic512(appended, items, base, c, lane) == 0:
        warp_rank_by_counting(appended, items, base, c, lane)


def bitonic_model(values, max_entries: int = 128) -> list:
    """clothsim's ``contact_lists._warp_bitonic`` network (``max_entries`` 128) and ``_warp_bitonic512`` (512) in
    numpy, step for step (32 lanes × K slots, K the least power of two with 32·K >= c; shuffles as lane ^ d, swaps
    between a lane's slots j and j | d/32): the sorted list, for checking the index logic on a machine without a GPU."""
    c = len(values)
    assert c <= max_entries
    inf = 2**31 - 1
    k = 1
    while 32 * k < c:
        k *= 2
    v = np.full((max_entries // 32, 32), inf, np.int64)
    v.reshape(-1)[:c] = values  # slot j of lane l holds entry j * 32 + l
    lane = np.arange(32)
    s = 2
    while s <= 32 * k:
        d = s >> 1
        while d > 0:
            if d >= 32:  # swaps within a lane: slots j and j | d/32 (at d = 32 (0, 1), (2, 3); at 64 (0, 2), (1, 3))
                dk = d // 32
                for j, pj in ((j, j | dk) for j in range(k) if not j & dk):
                    if pj < k:
                        up = ((j * 32 + lane) & s) == 0
                        a, b = v[j].copy(), v[pj].copy()
                        swap = (a > b) == up
                        v[j], v[pj] = np.where(swap, b, a), np.where(swap, a, b)
            else:  # shuffles: lane l and lane l ^ d, the lower keeping the min where the run ascends
                for j in range(k):
                    other = v[j][lane ^ d]
                    up = ((j * 32 + lane) & s) == 0
                    lower = (lane & d) == 0
                    v[j] = np.where(lower == up, np.minimum(v[j], other), np.maximum(v[j], other))
            d >>= 1
        s <<= 1
    return v.reshape(-1)[:c].tolist()


def rank_group_variants(det, dev):
    """("rank_<kind>", "warp" | "lanes<W>_shfl" | "count", fn, check) for the vt, tv and ee lists as the last
    detection left them appended: clothsim's ranking (a warp a list), ``rank_lists_group_kernel`` with W = 8, 16
    and ``rank_lists_count_kernel``. The
    check reruns the variant into a list array filled with -7 and returns the entries ranked, or -1 (a
    MISMATCH in the table) unless every list equals clothsim's ranking, entry for entry."""
    from clothsim.collision.self_contact import EE, TV, VT

    out, ref = [], {}
    kinds = (("vt", VT, det.vt_capacity, det.vt_count, det.vt_append, det.vt_tri),
             ("tv", TV, det.tv_capacity, det.tv_count, det.tv_append, det.tv_vertex),
             ("ee", EE, det.ee_capacity, det.ee_count, det.ee_append, det.ee_edge))
    for name, kind, cap, count, appended, items in kinds:
        if appended is items:  # lists not appended apart (unordered): nothing to rank
            continue
        lists = count.shape[0]

        def warp(cap=cap, kind=kind, count=count, appended=appended, items=items, lists=lists):
            wp.launch(rank_lists_warp_kernel, dim=lists * 32, inputs=[cap, kind, count, count, appended],
                      outputs=[items, det.overflow, det.required], device=dev)

        def group(width, cap=cap, kind=kind, count=count, appended=appended, items=items, lists=lists):
            def fn():
                threads = (lists * width + 31) // 32 * 32
                wp.launch(rank_lists_group_kernel, dim=threads, inputs=[cap, kind, width, lists, count, count, appended],
                          outputs=[items, det.overflow, det.required], block_dim=128, device=dev)
            return fn

        def check(fn, name=name, count=count, items=items, first=False):
            def run():
                items.fill_(-7)
                fn()
                got = items.numpy().copy()
                if first:
                    ref[name] = got
                return int(count.numpy().sum()) if np.array_equal(got, ref.get(name)) else -1
            return run

        out.append((f"rank_{name}", "warp", warp, check(warp, first=True)))
        out += [(f"rank_{name}", f"lanes{w}_shfl", group(w), check(group(w))) for w in (8, 16)]

        def counting(cap=cap, kind=kind, count=count, appended=appended, items=items, lists=lists):
            wp.launch(rank_lists_count_kernel, dim=lists * 32, inputs=[cap, kind, count, count, appended],
                      outputs=[items, det.overflow, det.required], device=dev)

        out.append((f"rank_{name}", "count", counting, check(counting)))

        def bitonic512(cap=cap, kind=kind, count=count, appended=appended, items=items, lists=lists):
            wp.launch(rank_lists_bitonic512_kernel, dim=lists * 32, inputs=[cap, kind, count, count, appended],
                      outputs=[items, det.overflow, det.required], device=dev)

        out.append((f"rank_{name}", "bitonic512", bitonic512, check(bitonic512)))
    return out


if __name__ == "__main__":  # the network's index logic, on any machine
    rng = np.random.default_rng(0)
    for n in list(range(129)) * 3:
        vals = rng.choice(1 << 30, size=n, replace=False)
        assert bitonic_model(vals) == sorted(vals.tolist()), n
    print("bitonic_model sorts every length 0-128 (3 random lists each)")
    for n in range(513):
        vals = rng.choice(1 << 30, size=n, replace=False)
        assert bitonic_model(vals, 512) == sorted(vals.tolist()), n
    print("bitonic_model(max_entries=512) sorts every length 0-512")
