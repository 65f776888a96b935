"""Self-contact search variants on a piled fold, side by side in one run: time per launch and pairs found.

The fold of ``sim_grid.py`` (N × N, 1 m, 6 mm contact) is stepped ``--frames`` frames into its pile-up; then,
on the detector's own points, bounds, edges and filters, each variant of the edge–edge and vertex–triangle
search is launched ``--repeats`` times (median reported). Every variant must find the same number of pairs as
the solver's own kernel (printed; a mismatch is flagged), so the table compares speed at equal output. The variants'
own kernels live in ``detect_kernels.py``.

Variants: ``prod`` (the solver's kernels), ``box`` (the same box query, pair test through a function),
``sphere`` / ``capsule`` (Warp's sphere and capsule BVH queries), ``packed`` (edge endpoints and their weld
ids in one vec4i load), ``leafK`` (BVH leaves of K primitives), ``cubql`` (Warp's cuBQL constructor),
``tiled`` (a block of 32 threads traverses one query together: ``wp.tile_bvh_query_aabb``). Session 33:
``prod_untiled`` / ``ordered_untiled`` (the solver's one-thread-a-query path, the CPU's, run on CUDA) and
``thread_append`` (the grouped search's test and appends with one thread a vertex, as Newton queries); with
clothsim's one-thread searches for large meshes (``SelfContactDetector.vt_threads`` / ``ee_threads``, from
``VT_THREAD_MIN_VERTICES`` / ``EE_THREAD_MIN_EDGES``): ``prod_grouped`` / ``ordered_grouped`` with both off (the
search before), ``prod_vt_threads`` / ``prod_ee_threads`` / ``ordered_threads`` with them on; the run checks that
the default gives the same list entries and ``min_dist`` bit for bit as the grouped search. ``detect``: the
whole detection with its lists put in order (``ordered``) and left in their appends' order (``unordered``,
``Simulator(deterministic=False)``; timed last, it reallocates the lists).

Session 27 tried one query a triangle for both searches (each vertex and edge searched for by one triangle that
owns it): the same pairs, but on the H200 9.0x slower at N = 256 (5.7 → 50.8 ms) and 6.0x at N = 128
(`results/detect_variants_h200_s27_by_triangle.json`): in a pile the candidates grow with the query box's
volume, and a triangle pair brings up to nine edge pairs to test, most of them apart.

Session 28: ``tiled_sorted`` launches the per-primitive queries along a Morton curve of the rest shape (little
change), and ``groupG`` traverses once for G primitives close in the rest shape, each thread testing the
candidate handed to it against every primitive of the group: with G = 8 the edge–edge search 4.25 → 2.20 ms at
N = 256 on the H200 (`results/detect_variants_h200_s28_flip.json`, measured with kernels of this script that
recorded pairs only; ``groupG`` now launches clothsim's own kernels with groups of G, lists unranked), kept as clothsim's CUDA search
(``vertex_triangle_group_kernel``, ``edge_edge_group_kernel``; ``prod`` here, ``prod_per_edge`` /
``prod_per_vertex`` / ``ordered_per_primitive`` one query a primitive, and the run checks that both give the same
lists). The other way round, each thread one primitive of a group of 32 and every candidate shown to all threads
in turn (``wp.tile_extract``), gave the same lists but a slower detection (6.51 → 9.21 ms at N = 256,
`results/detect_variants_h200_s28_grouped.json`) and was not kept. Session 29: ``min_dist`` is lowered by an integer atomic min
on its bits (``min_nonnegative``) where it was Warp's float atomic min (a compare-and-swap loop):
``group8_floatmin`` (the old way, a kernel of this script) against ``group8_intmin`` (clothsim's), which must
give the same ``min_dist`` bit for bit (flagged otherwise). H200, N = 256: edge–edge 3.78 → 2.40 ms
(`results/detect_variants_h200_s29.json`, measured before clothsim took it up, the float one named group8_mindist there). ``rank_vt`` / ``rank_tv`` /
``rank_ee`` (``--only rank``, CUDA): clothsim's ranking of the appended lists, a warp a list (``warp``: a bitonic
sort in registers up to 128 entries since session 30), against 8 or 16 lanes a list (``lanesW_shfl``) and counting
ranks only (``count``, clothsim's until session 29; `rank_variants.py`), each checked entry for entry against
clothsim's; on this CPU's fold at N = 128 after 30 frames the non-empty lists held 16 (vertex–triangle), 8
(triangle–vertex) and 30 (edge–edge) entries on average. H200 (`results/detect_variants_h200_s30_rank.*`).

    python benchmarks/detect_variants.py --device cuda:0 --sizes 128,256 --frames 20 --json out/detect_variants.json
"""

from __future__ import annotations

import argparse
import os
import sys
import time

import numpy as np
import warp as wp

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from rank_variants import rank_group_variants  # noqa: E402
from sim_grid import ClothsimRunner, Scene, initial_guess_for, material_from, parse_args, save_json  # noqa: E402

import clothsim.collision.self_contact_kernels as det_kernels  # noqa: E402
from clothsim.collision.self_contact import group_order  # noqa: E402

from detect_kernels import (ee_box, ee_capsule, ee_group_floatmin, ee_packed, ee_tiled, ee_tiled_packed,  # noqa: E402
                            ee_tiled_sorted, pack_edges, pack_triangles, vt_box, vt_sphere, vt_thread_append,
                            vt_tiled, vt_tiled_packed, vt_tiled_sorted)

TILE = 32
TILED_ON_CPU = bool(os.environ.get("DETECT_TILED_ON_CPU"))  # Warp's CPU fallback of the tiled query (a check)


def timed(fn, device, repeats):
    fn()
    wp.synchronize_device(device)
    ts = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        wp.synchronize_device(device)
        ts.append((time.perf_counter() - t0) * 1e3)
    return float(np.median(ts))


def run_size(cs, a, n):
    from clothsim.collision._arrays import MAX_LIST_ENTRIES, query_block_dim

    sa = parse_args(["--device", a.device] + a.sim_grid_args)
    mat = material_from(sa)
    scene = Scene(cs, "fold", n, 1.0, mat)
    runner = ClothsimRunner(cs, scene, mat, a.device, sa.substeps, initial_guess_for(sa, "fold"), sa.chebyshev_rho,
                            sa.membrane_hessian, chebyshev_cap=sa.chebyshev_cap)
    runner.build(a.iterations)
    for _ in range(a.frames):
        runner.step()
    wp.synchronize_device(a.device)
    solver = runner.sim.solver
    det = solver.self_contacts.detector
    dev = det.device
    det.tiled = det.tiled or TILED_ON_CPU
    det.grouped = det.grouped or TILED_ON_CPU
    det.detect(solver.x_prev, det.last_radius, rebuild=True, rest_radius=det.last_radius)
    r = det.last_radius
    rr = r  # the solver's rest radius is its search radius
    ne, nv = det.edge_count, det.vertex_count
    # room for variants that find more pairs than the detector, within one array's 2**31 entries (N = 1024)
    cap = max(min(4 * max(det.ee_capacity, det.vt_capacity), MAX_LIST_ENTRIES // max(ne, nv)),
              det.ee_capacity, det.vt_capacity)
    count_e = wp.zeros(ne, dtype=wp.int32, device=dev)
    items_e = wp.zeros(ne * cap, dtype=wp.int32, device=dev)
    count_v = wp.zeros(nv, dtype=wp.int32, device=dev)
    items_v = wp.zeros(nv * cap, dtype=wp.int32, device=dev)
    packed = wp.zeros(ne, dtype=wp.vec4i, device=dev)
    wp.launch(pack_edges, ne, inputs=[det.edges, det.weld], outputs=[packed], device=dev)
    bvhs = {"own": (det.edge_bvh, det.triangle_bvh)}  # the detector's (CPU: edge leaves of CPU_EDGE_LEAF)
    for name, kw in (("leaf2", {"leaf_size": 2}), ("leaf4", {"leaf_size": 4}), ("cubql", {"constructor": "cubql"})):
        try:
            bvhs[name] = (wp.Bvh(det.edge_lowers, det.edge_uppers, **kw),
                          wp.Bvh(det.triangle_lowers, det.triangle_uppers, **kw))
        except Exception as exc:  # a constructor this device or build lacks
            print(f"  BVH {name}: {exc}")
    bd_e, bd_v = query_block_dim(dev, ne), query_block_dim(dev, nv)
    common_e = [det.points, det.edges, det.weld, packed, det.rest, det.panel, rr, r, cap]
    common_v = [det.points, det.triangles, det.weld, det.rest, det.panel, rr, r, cap]

    tri4 = wp.zeros(det.triangle_count, dtype=wp.vec4i, device=dev)
    weld4 = wp.zeros(det.triangle_count, dtype=wp.vec4i, device=dev)
    wp.launch(pack_triangles, det.triangle_count, inputs=[det.triangles, det.weld], outputs=[tri4, weld4], device=dev)
    packed_e = [det.points, packed, det.rest, det.panel, rr, r, cap]
    packed_v = [det.points, tri4, weld4, det.weld, det.rest, det.panel, rr, r, cap]

    def ee(kernel, bvh, args=None, tiled=False, block=TILE):
        def fn():
            count_e.zero_()
            args_ = [bvh.id, *(args or common_e)]
            if tiled:
                wp.launch_tiled(kernel, dim=[ne], inputs=args_, outputs=[count_e, items_e], block_dim=block, device=dev)
            else:
                wp.launch(kernel, ne, inputs=args_, outputs=[count_e, items_e], block_dim=bd_e, device=dev)
        return fn

    def vt(kernel, bvh, tiled=False, args=None, block=TILE):
        def fn():
            count_v.zero_()
            args_ = [bvh.id, *(args or common_v)]
            if tiled:
                wp.launch_tiled(kernel, dim=[nv], inputs=args_, outputs=[count_v, items_v], block_dim=block, device=dev)
            else:
                wp.launch(kernel, nv, inputs=args_, outputs=[count_v, items_v], block_dim=bd_v, device=dev)
        return fn

    def prod_ee():
        det.ee_count.zero_()
        det._edge_edge_lists([det.weld, det.rest, det.panel, rr, r], [det.overflow, det.required], det.min_dist)

    def prod_vt():
        det.tv_count.zero_()
        det._vertex_triangle_lists([det.weld, det.rest, det.panel, rr, r], 0.0, [det.overflow, det.required])

    from clothsim.collision.contact_lists import rank_lists_kernel
    from clothsim.collision.self_contact import EE

    def prod_ee_kernel():  # the solver's edge-edge search without putting the lists in order
        det.ee_count.zero_()
        if det.tiled:
            wp.launch_tiled(det_kernels.edge_edge_tiled_kernel, dim=[ne],
                            inputs=[det.edge_bvh.id, det.points, det.edge_info, det.rest, det.panel, rr, r, det.ee_capacity],
                            outputs=[det.ee_count, det.ee_append, det.min_dist], block_dim=det_kernels.TILE_LANES, device=dev)

    def rank_ee(lanes):
        def fn():
            wp.launch(rank_lists_kernel, dim=ne * lanes, inputs=[det.ee_capacity, EE, lanes, det.ee_count, det.ee_count,
                                                                 det.ee_append], outputs=[det.ee_edge, det.overflow, det.required], device=dev)
        return fn

    def with_attrs(fn, **attrs):  # the solver's search with some of the detector's switches set
        def run():
            old = {k: getattr(det, k) for k in attrs}
            for k, v in attrs.items():
                setattr(det, k, v)
            try:
                fn()
            finally:
                for k, v in old.items():
                    setattr(det, k, v)
        return run

    def per_primitive(fn):  # the solver's search with one query a primitive (before session 28's groups)
        return with_attrs(fn, grouped=False)

    def untiled(fn):  # the solver's CPU path on CUDA: one thread a query
        return with_attrs(fn, tiled=False)

    def vt_thread():  # session 33: the grouped search's appends, one thread a vertex, into the unranked lists
        det.vt_count.zero_()
        det.tv_count.zero_()
        wp.launch(vt_thread_append, dim=nv,
                  inputs=[tb.id, det.points, det.tri_info, det.tri_weld, det.weld, det.rest, det.panel, rr, r, 0.0,
                          det.vt_capacity, det.tv_capacity],
                  outputs=[det.vt_count, det.vt_append, det.min_dist, det.tv_count, det.tv_append], block_dim=bd_v,
                  device=dev)

    eb, tb = bvhs["own"]
    variants = [("ee", "prod", prod_ee, lambda: int(det.ee_count.numpy().sum())),
                ("ee", "prod_per_edge", per_primitive(prod_ee), lambda: int(det.ee_count.numpy().sum())),
                ("ee", "prod_untiled", untiled(prod_ee), lambda: int(det.ee_count.numpy().sum())),
                ("ee", "prod_grouped", with_attrs(prod_ee, ee_threads=False), lambda: int(det.ee_count.numpy().sum())),
                ("ee", "prod_ee_threads", with_attrs(prod_ee, ee_threads=True),
                 lambda: int(det.ee_count.numpy().sum()))]
    pairs_e = lambda: int(count_e.numpy().sum())  # noqa: E731
    pairs_v = lambda: int(count_v.numpy().sum())  # noqa: E731
    if det.tiled:
        variants.append(("ee", "prod_kernel", prod_ee_kernel, lambda: int(det.ee_count.numpy().sum())))
        variants += [("rank", f"ee_lanes{k}", rank_ee(k), lambda: int(det.ee_count.numpy().sum())) for k in (8, 16, 32)]
    if dev.is_cuda:  # session 29: a warp a list (clothsim's) against 8 or 16 lanes a list, on each kind of list
        variants += rank_group_variants(det, dev)
    variants += [("ee", "box", ee(ee_box, eb), pairs_e), ("ee", "capsule", ee(ee_capsule, eb), pairs_e),
                 ("ee", "packed", ee(ee_packed, eb, [det.points, packed, det.rest, det.panel, rr, r, cap]), pairs_e)]
    variants += [("ee", name, ee(ee_box, bvhs[name][0]), pairs_e) for name in ("leaf2", "leaf4", "cubql") if name in bvhs]
    if dev.is_cuda or TILED_ON_CPU:
        variants.append(("ee", "tiled", ee(ee_tiled, eb, tiled=True), pairs_e))
        variants += [("ee", f"tiled_packed{b}", ee(ee_tiled_packed, eb, packed_e, tiled=True, block=b), pairs_e)
                     for b in (16, 32, 64)]
    variants += [("vt", "prod", prod_vt, lambda: int(det.vt_count.numpy().sum())),
                 ("vt", "prod_per_vertex", per_primitive(prod_vt), lambda: int(det.vt_count.numpy().sum())),
                 ("vt", "prod_untiled", untiled(prod_vt), lambda: int(det.vt_count.numpy().sum())),
                 ("vt", "prod_grouped", with_attrs(prod_vt, vt_threads=False), lambda: int(det.vt_count.numpy().sum())),
                 ("vt", "prod_vt_threads", with_attrs(prod_vt, vt_threads=True), lambda: int(det.vt_count.numpy().sum())),
                 ("vt", "box", vt(vt_box, tb), pairs_v), ("vt", "sphere", vt(vt_sphere, tb), pairs_v)]
    variants += [("vt", name, vt(vt_box, bvhs[name][1]), pairs_v) for name in ("leaf2", "leaf4", "cubql") if name in bvhs]
    variants.append(("vt", "thread_append", vt_thread, lambda: int(det.vt_count.numpy().sum())))
    if dev.is_cuda or TILED_ON_CPU:
        variants.append(("vt", "tiled", vt(vt_tiled, tb, tiled=True), pairs_v))
        variants += [("vt", f"tiled_packed{b}", vt(vt_tiled_packed, tb, tiled=True, args=packed_v, block=b), pairs_v)
                     for b in (16, 32, 64)]
    # session 28: queries launched along a Morton curve of the rest shape, and one traversal a group of G
    # primitives close in the rest shape, each thread testing its candidate against the whole group
    rest_np = det.rest.numpy().astype(np.float64)
    e_np = det.edges.numpy().reshape(-1, 2)
    mid = 0.5 * (rest_np[e_np[:, 0]] + rest_np[e_np[:, 1]])
    lanes = TILE if dev.is_cuda else 1
    zeros_e, zeros_v = np.zeros(len(mid), np.int32), np.zeros(len(rest_np), np.int32)
    if dev.is_cuda or TILED_ON_CPU:
        order_e = wp.array(group_order(mid, zeros_e, 1), dtype=wp.int32, device=dev)
        order_v = wp.array(group_order(rest_np, zeros_v, 1), dtype=wp.int32, device=dev)
        variants.append(("ee", "tiled_sorted", ee(ee_tiled_sorted, eb, [det.points, packed, order_e, *packed_e[2:]],
                                                   tiled=True), pairs_e))
        variants.append(("vt", "tiled_sorted", vt(vt_tiled_sorted, tb, tiled=True,
                                                   args=[det.points, det.triangles, det.weld, order_v, *common_v[3:]]),
                         pairs_v))
        for g in (2, 4, 8, 16):
            oe = wp.array(group_order(mid, zeros_e, g), dtype=wp.int32, device=dev)
            ov = wp.array(group_order(rest_np, zeros_v, g), dtype=wp.int32, device=dev)

            def ee_g(oe=oe, g=g):  # clothsim's kernel with groups of g, into the detector's unranked lists
                det.ee_count.zero_()
                wp.launch_tiled(det_kernels.edge_edge_group_kernel, dim=[oe.shape[0] // g],
                                inputs=[eb.id, det.points, det.edge_lowers, det.edge_uppers, oe, g, lanes,
                                        det.edge_info, det.rest, det.panel, rr, r, det.ee_capacity],
                                outputs=[det.ee_count, det.ee_append, det.min_dist], block_dim=TILE, device=dev)

            def vt_g(ov=ov, g=g):
                det.vt_count.zero_()
                det.tv_count.zero_()
                wp.launch_tiled(det_kernels.vertex_triangle_group_kernel, dim=[ov.shape[0] // g],
                                inputs=[tb.id, det.points, det.triangle_lowers, det.triangle_uppers, ov, g, lanes,
                                        det.tri_info, det.tri_weld, det.weld, det.rest, det.panel, rr, r, 0.0,
                                        det.vt_capacity, det.tv_capacity],
                                outputs=[det.vt_count, det.vt_append, det.min_dist, det.tv_count, det.tv_append],
                                block_dim=TILE, device=dev)

            variants.append(("ee", f"group{g}", ee_g, lambda: int(det.ee_count.numpy().sum())))
            if g == 8:  # clothsim's kernel (integer atomic min) against the float atomic min, min_dist compared
                def ee_float(oe=oe, g=g):
                    det.ee_count.zero_()
                    det.min_dist.fill_(r)
                    wp.launch_tiled(ee_group_floatmin, dim=[oe.shape[0] // g],
                                    inputs=[eb.id, det.points, det.edge_lowers, det.edge_uppers, oe, g, lanes,
                                            det.edge_info, det.rest, det.panel, rr, r, det.ee_capacity],
                                    outputs=[det.ee_count, det.ee_append, det.min_dist], block_dim=TILE, device=dev)

                def ee_int(oe=oe, g=g):  # group8 with min_dist reset likewise
                    det.min_dist.fill_(r)
                    ee_g(oe, g)

                kept = {}

                def float_pairs():  # keeps the float atomics' min_dist for the integer ones to match bit for bit
                    kept["min_dist"] = det.min_dist.numpy().copy()
                    return int(det.ee_count.numpy().sum())

                def int_pairs():  # -1 (flagged as a mismatch) unless min_dist is the float atomics', bit for bit
                    same = "min_dist" in kept and np.array_equal(kept["min_dist"], det.min_dist.numpy())
                    return int(det.ee_count.numpy().sum()) if same else -1

                variants.append(("ee", "group8_floatmin", ee_float, float_pairs))
                variants.append(("ee", "group8_intmin", ee_int, int_pairs))
            variants.append(("vt", f"group{g}", vt_g, lambda: int(det.vt_count.numpy().sum())))
    # the whole detection (bounds, refit, searches, lists put in order) against the same with the lists left in
    # their appends' order (Simulator(deterministic=False)); pairs = vertex-triangle + edge-edge list entries
    def pairs_both():
        return int(det.vt_count.numpy().sum()) + int(det.ee_count.numpy().sum())

    def detect():
        det.detect(det.points, r, rest_radius=rr)

    def unordered():
        if det.ordered:  # reallocates the lists (no separate append arrays)
            det.ordered = False
            det._allocate_lists()
        detect()

    # the grouped search (CUDA's default) and one query a primitive must give the same lists, entry for entry
    lists = []
    for fn in (detect, per_primitive(detect)):
        fn()
        lists.append([arr.numpy().copy() for arr in (det.vt_count, det.vt_tri, det.tv_count, det.tv_vertex,
                                                     det.ee_count, det.ee_edge, det.min_dist)])
    same = all(np.array_equal(x, y) for x, y in zip(*lists))
    print(f"  N = {n} lists of the grouped and the per-primitive search identical: {same}", flush=True)
    # session 33: the default (one thread a query from VT_THREAD_MIN_VERTICES / EE_THREAD_MIN_EDGES) against the
    # grouped search: min_dist bit for bit, every list the same entries (a one-thread vt list is in BVH order)
    views = []
    for fn in (detect, with_attrs(detect, vt_threads=False, ee_threads=False)):
        fn()
        views.append(det.lists_numpy())
    same_min = bool(np.array_equal(views[0]["min_dist"], views[1]["min_dist"]))
    same_sets = all(np.array_equal(np.sort(x), np.sort(y)) for k in ("vt", "tv", "ee")
                    for x, y in zip(views[0][k], views[1][k]))
    print(f"  N = {n} vt_threads {det.vt_threads}, ee_threads {det.ee_threads}: against the grouped search min_dist "
          f"bit-identical: {same_min}; the same list entries: {same_sets}", flush=True)
    same = same and same_min and same_sets
    variants = [("detect", "ordered", detect, pairs_both),
                ("detect", "ordered_per_primitive", per_primitive(detect), pairs_both),
                ("detect", "ordered_untiled", untiled(detect), pairs_both),
                ("detect", "ordered_grouped", with_attrs(detect, vt_threads=False, ee_threads=False), pairs_both),
                ("detect", "ordered_threads", with_attrs(detect, vt_threads=True, ee_threads=True), pairs_both)] + variants
    variants.append(("detect", "unordered", unordered, pairs_both))  # last: it reallocates the lists
    if a.only:
        only = a.only.split(",")
        variants = [v for v in variants if v[0] in only or v[0].split("_")[0] in only]  # "rank": rank_vt, ...
    rows = []
    ref = {}
    for kind, name, fn, pairs in variants:
        try:
            ms = timed(fn, dev, a.repeats)
        except Exception as exc:
            print(f"  {kind} {name}: failed: {exc}")
            continue
        p = pairs()
        ref.setdefault(kind, p)
        rows.append({"N": n, "search": kind, "variant": name, "ms": ms, "pairs": p, "same_pairs": p == ref[kind],
                     "lists_identical": same})
        print(f"  N = {n} {kind} {name:8s} {ms:8.3f} ms  pairs {p}{'' if p == ref[kind] else '  MISMATCH'}", flush=True)
    runner.sim.release()
    return rows


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 epilog="Any other option is sim_grid.py's and sets up the fold (e.g. --thickness, "
                                        "--contact-margin for N = 1024).")
    ap.add_argument("--device", default="cuda:0")
    ap.add_argument("--sizes", default="128,256")
    ap.add_argument("--frames", type=int, default=20, help="fold frames stepped before the searches are timed")
    ap.add_argument("--iterations", type=int, default=2)
    ap.add_argument("--repeats", type=int, default=21)
    ap.add_argument("--only", default=None, help="comma list of search kinds to time (detect, search, ee, vt, rank)")
    ap.add_argument("--json", default=None)
    a, rest = ap.parse_known_args(argv)
    a.sim_grid_args = rest
    wp.config.quiet = True
    import clothsim as cs

    rows = []
    for n in (int(s) for s in a.sizes.split(",")):
        rows += run_size(cs, a, n)
    print("\n| N | search | variant | ms | pairs |\n|---:|---|---|---:|---:|")
    for r in rows:
        print(f"| {r['N']} | {r['search']} | {r['variant']} | {r['ms']:.3f} | {r['pairs']}{'' if r['same_pairs'] else ' (differs)'} |")
    if a.json:
        save_json(a.json, {"device": a.device, "warp": wp.__version__, "frames": a.frames, "rows": rows})


if __name__ == "__main__":
    main()
