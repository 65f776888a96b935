"""benchmarks/fold_spread.py: runs of the fold from starts moved by a rounding-sized perturbation end apart by
a small, non-zero spread (the perturbation reaches the result, and a smooth fall does not amplify it much), and
a few-iteration run's error to the converged run stands far above that spread; bad options are refused before
anything runs."""

import json
import os
import subprocess
import sys

ROOT = os.path.join(os.path.dirname(__file__), "..")


def test_fold_spread_small_fold(tmp_path):
    out = tmp_path / "spread.json"
    cmd = [sys.executable, os.path.join(ROOT, "benchmarks", "fold_spread.py"), "--sizes", "8", "--iterations", "1",
           "--frames", "6", "--seeds", "2", "--ref-iterations", "30", "--json", str(out)]
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stderr[-3000:]
    case = json.loads(out.read_text())["cases"][0]
    assert case["N"] == 8
    ref, (pt,) = case["reference"], case["points"]
    for row in (ref, pt):
        # a 1e-6 m move of every start position: it reaches the result, and six frames (the fall and the landing)
        # keep it within a hundred times itself (the coarse sheet has not buckled yet)
        assert all(0.0 < d < 1e-4 for d in row["spread_m"]), row
        assert row["intersections"] == 0
    # one iteration against thirty: a truncation error orders of magnitude above the rounding spread
    assert pt["error_m"] > 100 * pt["spread_median_m"], pt
    assert "| 1 |" in r.stdout and "(reference)" in r.stdout


def test_fold_spread_refuses_bad_options(tmp_path):
    cmd = [sys.executable, os.path.join(ROOT, "benchmarks", "fold_spread.py"), "--seeds", "0",
           "--json", str(tmp_path / "x.json")]
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    assert r.returncode == 2 and "--seeds" in r.stderr
    assert not (tmp_path / "x.json").exists()
