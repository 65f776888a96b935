"""Accuracy-versus-time tables of benchmarks/sim_grid.py: for each Newton sweep point, the time clothsim needs
to reach its error (log-log interpolation on clothsim's (time, error) curve) and the ratio. Usable on a stored
JSON's sweep too (``reach_tables(json["comparisons"][i]["sweep"])``)."""

from __future__ import annotations

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
