"""Ranking variants for ``detect_variants.py --only rank`` (CUDA): clothsim's ranking of the appended contact
lists, a warp a list (``rank_lists_warp_kernel``), against ``width`` = 8 or 16 lanes a list, so that a warp ranks
several short lists at once (session 29: on this CPU's fold at N = 128 after 30 frames the non-empty lists held 16
vertex–triangle, 8 triangle–vertex and 30 edge–edge entries on average), and a warp a list sorting it in registers
by a bitonic network (``bitonic``: up to 128 entries, 4 a lane; longer lists ranked as clothsim does). Counting
ranks costs ⌈c/32⌉² × 32 shuffles a lane for a list of c, the network 15 / 42 / 112 compare-exchanges for up to
32 / 64 / 128 (its index logic is checked in a numpy model of the warp, ``bitonic_model``, for every c up to 128:
``python benchmarks/rank_variants.py``). Each variant's output is checked entry for entry against clothsim's.
"""

from __future__ import annotations

import numpy as np
import warp as wp

from clothsim.collision.contact_lists import _warp_count_less, rank_lists_warp_kernel, record_overflow

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


@wp.kernel(module="unique", enable_backward=False)  # CUDA only (warp shuffles)
def rank_lists_bitonic_kernel(capacity: int, kind: int, need: wp.array(dtype=wp.int32),
                              count: wp.array(dtype=wp.int32), appended: wp.array(dtype=wp.int32),
                              items: wp.array(dtype=wp.int32), overflow: wp.array(dtype=wp.int32),
                              required: wp.array(dtype=wp.int32)):
    """clothsim's ``rank_lists_warp_kernel`` (a warp a list, launched over lists × 32) with lists of up to 128
    entries sorted by ``_warp_bitonic``; longer ones ranked by counting, as there."""
    tid = wp.tid()
    i = tid // 32
    lane = tid - i * 32
    c = wp.min(count[i], capacity)
    if lane == 0:
        record_overflow(need[i], capacity, kind, overflow, required)
        count[i] = c
    base = i * capacity
    if _warp_bitonic(appended, items, base, c, lane) == 0:
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


def bitonic_model(values) -> list:
    """``_warp_bitonic``'s network in numpy, step for step (32 lanes × K slots; shuffles as lane ^ d, swaps
    between a lane's slots): the sorted list, for checking the index logic on a machine without a GPU."""
    c = len(values)
    inf = 2**31 - 1
    k = 1 if c <= 32 else (2 if c <= 64 else 4)
    v = np.full((4, 32), inf, np.int64)
    v.reshape(-1)[:c] = values  # slot j of lane l holds entry j * 32 + l
    lane = np.arange(32)
    s = 2
    while s <= 32 * k:
        d = s >> 1
        while d > 0:
            if d >= 32:  # swaps within a lane: slots (0, 1), (2, 3) at d = 32; (0, 2), (1, 3) at d = 64
                for j, pj in ((0, 1), (2, 3)) if d == 32 else ((0, 2), (1, 3)):
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
    """("rank_<kind>", "warp" | "lanes<W>_shfl" | "bitonic", fn, check) for the vt, tv and ee lists as the last
    detection left them appended: clothsim's ranking (a warp a list), ``rank_lists_group_kernel`` with W = 8, 16
    and ``rank_lists_bitonic_kernel``. The
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

        def bitonic(cap=cap, kind=kind, count=count, appended=appended, items=items, lists=lists):
            wp.launch(rank_lists_bitonic_kernel, dim=lists * 32, inputs=[cap, kind, count, count, appended],
                      outputs=[items, det.overflow, det.required], device=dev)

        out.append((f"rank_{name}", "bitonic", bitonic, check(bitonic)))
    return out


if __name__ == "__main__":  # the network's index logic, on any machine
    rng = np.random.default_rng(0)
    for n in list(range(129)) * 3:
        vals = rng.choice(1 << 30, size=n, replace=False)
        assert bitonic_model(vals) == sorted(vals.tolist()), n
    print("bitonic_model sorts every length 0-128 (3 random lists each)")
