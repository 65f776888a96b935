"""Accuracy-versus-time tables of benchmarks/sim_grid.py: for each Newton sweep point, the time clothsim needs
to reach its error (log-log interpolation on clothsim's (time, error) curve) and the ratio; and the markdown of
one comparison (``print_compare``). Usable on a stored JSON's sweep too
(``reach_tables(json["comparisons"][i]["sweep"])``)."""

from __future__ import annotations

import itertools
import math


def time_to_reach(err_target, times, errs):
    """Time on the (time, error) curve where error first reaches err_target (log-log interpolation).

    Returns (time, note): note '' when interpolated, '<=' when the cheapest point already beats the
    target, 'not reached' (time None) when no point reaches it.
    """
    pts = sorted(zip(times, errs))
    if pts[0][1] <= err_target:
        return pts[0][0], "<="
    for (t0, e0), (t1, e1) in zip(pts, pts[1:]):
        if e1 <= err_target < e0:
            if e0 <= 0 or e1 <= 0:
                return t1, ""
            w = (math.log(err_target) - math.log(e0)) / (math.log(e1) - math.log(e0))
            return math.exp(math.log(t0) + w * (math.log(t1) - math.log(t0))), ""
    return None, "not reached"


def reach_tables(sweep: dict) -> dict:
    """For each Newton sweep point, the clothsim time to reach its error (against either reference) and the
    ratio; ``..._clean`` keeps only runs that end with no intersections on both sides (the issue's fair
    baseline: a run that ends tangled has not reached anything). Also usable on a stored JSON's sweep.

    With a second clothsim curve (``--jacobi``) there is a table per curve (suffix ``_jacobi``) and one for
    the faster of the two at each Newton point (``_best``): a user picks the sweep for the accuracy needed."""
    out = {}
    variants = [v for v in sweep if v.startswith("clothsim")]
    for v in variants:
        suffix = "" if v == "clothsim" else "_" + v.split("_", 1)[1]
        out |= {k + suffix: t for k, t in _reach_tables(sweep[v], sweep["newton"]).items()}
    if len(variants) > 1:
        for key in [k for k in out if k.startswith("time_to_newton_error") and k.count("_ref") == 1 and
                    (k.endswith("_ref") or k.endswith("_clean"))]:
            rows = []
            for i, r in enumerate(out[key]):
                cands = [out[key + ("" if v == "clothsim" else "_" + v.split("_", 1)[1])][i] for v in variants]
                cands = [c | {"clothsim_variant": v} for c, v in zip(cands, variants) if c["clothsim_ms"] is not None]
                rows.append(min(cands, key=lambda c: c["clothsim_ms"]) if cands else r)
            out[key + "_best"] = rows
    return out


def _reach_tables(cs_sweep: list, nw_sweep: list) -> dict:
    out = {}
    for clean in (False, True):
        cs_pts = [p for p in cs_sweep if not clean or p["intersections"] == 0]
        nw_pts = [p for p in nw_sweep if not clean or p["intersections"] == 0]
        for ref in ("clothsim", "newton"):
            key = f"err_vs_{ref}_ref"
            reach = []
            for p in nw_pts:
                t, note = (time_to_reach(p[key], [q["ms_median"] for q in cs_pts], [q[key] for q in cs_pts])
                           if cs_pts else (None, "not reached"))
                reach.append({"newton_iterations": p["iterations"], "newton_ms": p["ms_median"],
                              "error_m": p[key], "clothsim_ms": t, "note": note,
                              "ratio": (t / p["ms_median"]) if t is not None else None})
            out[f"time_to_newton_error_vs_{ref}_ref" + ("_clean" if clean else "")] = reach
    return out


def fmt(x, nd=1):
    return "-" if x is None else f"{x:.{nd}f}"


def print_compare(scene, res, pr):
    sp = res["same_physics"]
    pr(f"\n### {scene.kind}, N = {scene.n}: clothsim vs Newton SolverVBD ({res['frames']} frames, "
       f"{res['ref_iterations']} iterations)\n")
    pr(f"same physics: RMS(clothsim ref - Newton ref) = {sp['rms_clothsim_vs_newton_m']:.3e} m "
       f"(RMS displacement {sp['rms_displacement_m']:.3e} m, relative {fmt(sp['relative'], 3)}); "
       f"intersections at the end: clothsim {res['reference_intersections']['clothsim']}, "
       f"Newton {res['reference_intersections']['newton']}\n")
    dropped = {k: v["dropped_pairs"] for k, v in res.get("reference_newton_contacts", {}).get("newton", {}).items()
               if v["dropped_pairs"]}
    if dropped:  # its converged solution is then of a problem with contacts missing
        pr("same physics NOT established: Newton's reference dropped self-contact pairs its buffers could not hold ("
           + ", ".join(f"{k} {n}" for k, n in dropped.items()) + "; sim_grid.py --newton-vertex-buffer / "
           "--newton-edge-buffer)\n")
    if "speed_cap" in res:
        c = res["speed_cap"]
        binds = c["free_fall_reaches_it_s"] < c["simulated_s"]
        pr(f"speed cap: self contact bounds every vertex to {c['max_self_contact_speed_m_s']:.2f} m/s "
           f"({c.get('bound', 0.4):g} x search radius a substep); free fall reaches it after "
           f"{c['free_fall_reaches_it_s']:.3f} s of the {c['simulated_s']:.3f} s compared"
           + (": the fall is capped\n" if binds else "\n"))
        newton_cap = c.get("newton_max_self_contact_speed_m_s")
        if newton_cap is not None:
            same = abs(newton_cap - c["max_self_contact_speed_m_s"]) <= 1e-3 * newton_cap
            pr(f"Newton's cap: {newton_cap:.2f} m/s" + (" (the same)\n" if same else
               (" (a different cap, and the fall reaches it: same physics NOT established; "
                "--self-contact-bound 0.425 with --newton-self-contact-detection pre-init matches them)\n" if binds
                else " (different, but not reached)\n")))
    if "sensitivity" in res:
        se = res["sensitivity"]
        pr(f"sensitivity: clothsim's reference started {se['perturbation_m']:g} m off ends "
           f"{se['rms_vs_clothsim_ref_m']:.3e} m from it (no error below this is meaningful)\n")
    if res.get("error_starts", 1) > 1:
        pr(f"errors: the mean over {res['error_starts']} error runs of each solver, from the start and from starts "
           f"moved by 1e-6 m; intersections: the most any of them ends with\n")
    if res.get("timed_frames", res["frames"]) != res["frames"]:
        pr(f"time per frame over the first {res['timed_frames']} frames; errors after {res['frames']}\n")
    pr("| solver | iterations | ms/frame (median) | p10 | p90 | error vs clothsim ref [m] | error vs Newton ref [m] "
       "| intersections | folded |")
    pr("|---|---:|---:|---:|---:|---:|---:|---:|---:|")
    for name in res["sweep"]:
        for p in res["sweep"][name]:
            pr(f"| {name} | {p['iterations']} | {p['ms_median']:.1f} | {p['ms_p10']:.1f} | {p['ms_p90']:.1f} | "
               f"{p['err_vs_clothsim_ref']:.3e} | {p['err_vs_newton_ref']:.3e} | {p['intersections']} | "
               f"{p['folded']:.2f} |")
    variants = [("", "")] + [(f"_{v.split('_', 1)[1]}", f" ({v.split('_', 1)[1]} sweep)") for v in res["sweep"]
                              if v.startswith("clothsim_")]
    if len(variants) > 1:
        variants.append(("_best", " (the faster clothsim sweep at each point)"))
    for (suffix, what), (ref, clean) in itertools.product(
            variants, (("clothsim", False), ("newton", False), ("clothsim", True), ("newton", True))):
        table = f"time_to_newton_error_vs_{ref}_ref" + ("_clean" if clean else "") + suffix
        if table not in res:  # --references-only, or a JSON from before the clean tables
            continue
        pr(f"\nerror measured against the {ref} reference{what}"
           + (", only runs that end with no intersections (both solvers)" if clean else "") + ":\n")
        pr("| Newton iterations | Newton ms/frame | Newton error [m] | clothsim ms/frame to reach it "
           "| ratio clothsim/Newton |")
        pr("|---:|---:|---:|---:|---:|")
        for r in res[table]:
            t = "not reached" if r["clothsim_ms"] is None else f"{r['note']}{r['clothsim_ms']:.1f}".replace("<=", "≤ ")
            pr(f"| {r['newton_iterations']} | {r['newton_ms']:.1f} | {r['error_m']:.3e} | {t} | "
               f"{fmt(r['ratio'], 2)} |")


def merge_comparisons(results: list[dict], case: str, n: int) -> dict:
    """One comparison (``case``, N) from several sim_grid JSONs whose sweeps cover different iteration counts
    (a curve too long for one device call): the sweeps are joined (a point already present is kept from the
    first file) and the tables recomputed. Refused unless every file compared the same references: same
    frames and reference iterations, and the same reference gap (RMS clothsim ref − Newton ref) to 4 digits."""
    comps = []
    for i, r in enumerate(results):
        found = [c for c in r.get("comparisons", []) if c.get("case") == case and c.get("N") == n]
        if not found:
            raise ValueError(f"file {i + 1} has no comparison for case {case!r}, N = {n}")
        comps.append(found[0])
    first = comps[0]
    for i, c in enumerate(comps[1:], 2):
        for key in ("frames", "ref_iterations"):
            if c[key] != first[key]:
                raise ValueError(f"file {i}: {key} = {c[key]}, file 1 has {first[key]}")
        a, b = (x["same_physics"]["rms_clothsim_vs_newton_m"] for x in (first, c))
        if f"{a:.3e}" != f"{b:.3e}":
            raise ValueError(f"file {i}: references {b:.3e} m apart, file 1's {a:.3e} m: not the same references")
    merged = {k: v for k, v in first.items() if not k.startswith("time_to_newton_error")}
    merged["sweep"] = {}
    for c in comps:
        for solver, pts in c["sweep"].items():
            have = {p["iterations"] for p in merged["sweep"].setdefault(solver, [])}
            merged["sweep"][solver] += [p for p in pts if p["iterations"] not in have]
    for pts in merged["sweep"].values():
        pts.sort(key=lambda p: p["iterations"])
    merged["timed_frames"] = sorted({c.get("timed_frames", c["frames"]) for c in comps})
    return merged | reach_tables(merged["sweep"])


def main(argv=None):
    import argparse
    import json
    import os
    import tempfile
    from types import SimpleNamespace

    ap = argparse.ArgumentParser(description="Join the accuracy-versus-time sweeps of several sim_grid.py JSONs "
                                 "(same case, N and references) into one curve and print its tables.")
    ap.add_argument("files", nargs="+", help="sim_grid.py --json outputs")
    ap.add_argument("--case", default="fold")
    ap.add_argument("--n", type=int, required=True, help="N of the comparison")
    ap.add_argument("--json", default=None, help="write the merged comparison here")
    a = ap.parse_args(argv)
    results = []
    for f in a.files:
        with open(f) as fh:
            results.append(json.load(fh))
    res = merge_comparisons(results, a.case, a.n)
    timed = res.pop("timed_frames")
    res["timed_frames"] = timed[0] if len(timed) == 1 else res["frames"]
    print_compare(SimpleNamespace(kind=a.case, n=a.n), res, print)
    if len(timed) > 1:
        print(f"\ntimed over the first {', '.join(map(str, timed))} frames in the files joined (each point: its "
              "own file's); per point, its file's runs")
    res["timed_frames"] = timed
    if a.json:
        d = os.path.dirname(os.path.abspath(a.json))
        fd, tmp = tempfile.mkstemp(dir=d, suffix=".tmp")
        with os.fdopen(fd, "w") as fh:
            json.dump({"merged_from": a.files, "comparisons": [res]}, fh, indent=1)
        os.replace(tmp, a.json)


if __name__ == "__main__":
    main()
