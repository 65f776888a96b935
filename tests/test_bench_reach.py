"""benchmarks/reach.py: the time clothsim needs to reach each of Newton's errors (log-log interpolation on
clothsim's curve), and joining sweeps stored in several sim_grid JSONs into one curve."""

import importlib.util
import math
import os

import pytest

# loaded by path, not by putting benchmarks/ on sys.path: its render.py would shadow the render package for
# every test module collected after this one
_spec = importlib.util.spec_from_file_location(
    "bench_reach", os.path.join(os.path.dirname(__file__), "..", "benchmarks", "reach.py"))
_reach = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_reach)
merge_comparisons, time_to_reach = _reach.merge_comparisons, _reach.time_to_reach


def test_time_to_reach_interpolates_in_log_log():
    # errors 1e-2 at 10 ms and 1e-3 at 100 ms: 10^-2.5 is reached at 10^1.5 ms
    t, note = time_to_reach(10 ** -2.5, [10.0, 100.0], [1e-2, 1e-3])
    assert note == "" and t == pytest.approx(10 ** 1.5, rel=1e-12)
    assert time_to_reach(2e-2, [10.0, 100.0], [1e-2, 1e-3]) == (10.0, "<=")
    assert time_to_reach(1e-4, [10.0, 100.0], [1e-2, 1e-3]) == (None, "not reached")


def _point(it, ms, e_cs, e_nw, inter=0):
    return {"iterations": it, "ms_median": ms, "ms_p10": ms, "ms_p90": ms, "err_vs_clothsim_ref": e_cs,
            "err_vs_newton_ref": e_nw, "intersections": inter, "folded": 0.1}


def _result(cs, nw, gap=9.188e-3, frames=12, timed=30):
    return {"comparisons": [{"case": "fold", "N": 256, "frames": frames, "timed_frames": timed, "ref_iterations": 300,
                             "same_physics": {"rms_clothsim_vs_newton_m": gap}, "sweep": {"clothsim": cs, "newton": nw}}]}


def test_merge_joins_sweeps_and_recomputes_the_tables():
    a = _result([_point(1, 80.0, 1e-2, 9e-3, inter=5), _point(4, 100.0, 8e-3, 7e-3)],
                [_point(1, 250.0, 1.2e-2, 9e-3, inter=9), _point(4, 260.0, 1.1e-2, 8e-3)])
    b = _result([_point(4, 999.0, 1.0, 1.0), _point(32, 300.0, 4e-3, 3e-3)], [_point(32, 500.0, 5e-3, 4e-3)], timed=20)
    m = merge_comparisons([a, b], "fold", 256)
    assert [p["iterations"] for p in m["sweep"]["clothsim"]] == [1, 4, 32]
    assert m["sweep"]["clothsim"][1]["ms_median"] == 100.0  # the first file's point is kept
    assert m["timed_frames"] == [20, 30]
    rows = m["time_to_newton_error_vs_clothsim_ref"]
    assert [r["newton_iterations"] for r in rows] == [1, 4, 32]
    assert rows[0]["ratio"] == pytest.approx(80.0 / 250.0)
    # Newton's 32-iteration error 5e-3 lies between clothsim's 4 (8e-3, 100 ms) and 32 (4e-3, 300 ms)
    w = math.log(5e-3 / 8e-3) / math.log(4e-3 / 8e-3)
    assert rows[2]["clothsim_ms"] == pytest.approx(math.exp(math.log(100.0) + w * math.log(3.0)))
    clean = m["time_to_newton_error_vs_clothsim_ref_clean"]
    assert [r["newton_iterations"] for r in clean] == [4, 32]  # Newton's 1-iteration run ended tangled
    assert clean[0]["clothsim_ms"] == 100.0  # clothsim's tangled 1-iteration run does not count


def test_merge_refuses_different_references():
    a = _result([_point(1, 80.0, 1e-2, 9e-3)], [_point(1, 250.0, 1.2e-2, 9e-3)])
    with pytest.raises(ValueError, match="apart"):
        merge_comparisons([a, _result([], [], gap=9.3e-3)], "fold", 256)
    with pytest.raises(ValueError, match="frames"):
        merge_comparisons([a, _result([], [], frames=10)], "fold", 256)
    with pytest.raises(ValueError, match="N = 128"):
        merge_comparisons([a], "fold", 128)


def test_print_says_when_newtons_reference_dropped_pairs():
    """A Newton reference that dropped self-contact pairs (its fixed buffers) is not the same problem's converged
    solution: the printed comparison says so, naming the lists; a clean one gets no such line."""
    res = _result([_point(1, 80.0, 1e-2, 9e-3)], [_point(1, 250.0, 1.2e-2, 9e-3)])["comparisons"][0]
    res["same_physics"] |= {"rms_displacement_m": 0.1, "relative": 0.09}
    res["reference_intersections"] = {"clothsim": 0, "newton": 0}
    scene = type("S", (), {"kind": "fold", "n": 256})
    clean = {"vertex_triangle": {"longest": 20, "buffer": 32, "dropped_pairs": 0},
             "edge_edge": {"longest": 40, "buffer": 64, "dropped_pairs": 0}}
    for newton, expect in ((clean, None), (clean | {"vertex_triangle": {"longest": 74, "buffer": 32,
                                                                         "dropped_pairs": 2196269}}, "vertex_triangle 2196269")):
        lines = []
        _reach.print_compare(scene, res | {"reference_newton_contacts": {"newton": newton}}, lines.append)
        flagged = [s for s in lines if "NOT established" in s]
        assert (flagged == []) if expect is None else (len(flagged) == 1 and expect in flagged[0]
                                                        and "edge_edge" not in flagged[0])


def test_print_says_when_the_speed_cap_binds():
    """The comparison states the self-contact speed cap and whether free fall reaches it within the frames
    compared (1.44 m/s: at 0.147 s, inside a 0.2 s comparison, outside a 0.1 s one)."""
    res = _result([_point(1, 80.0, 1e-2, 9e-3)], [_point(1, 250.0, 1.2e-2, 9e-3)])["comparisons"][0]
    res["same_physics"] |= {"rms_displacement_m": 0.1, "relative": 0.09}
    res["reference_intersections"] = {"clothsim": 0, "newton": 0}
    scene = type("S", (), {"kind": "fold", "n": 256})
    for simulated, capped in ((0.2, True), (0.1, False)):
        lines = []
        cap = {"max_self_contact_speed_m_s": 1.44, "free_fall_reaches_it_s": 1.44 / 9.81, "simulated_s": simulated}
        _reach.print_compare(scene, res | {"speed_cap": cap}, lines.append)
        line = [s for s in lines if s.startswith("speed cap")]
        assert len(line) == 1 and "1.44 m/s" in line[0] and ("the fall is capped" in line[0]) == capped
        assert not [s for s in lines if s.startswith("Newton's cap")]  # results written before it was stored
        # Newton's own cap (0.425 x r a substep against clothsim's 0.4): a different cap that the fall reaches
        # means the two solvers were not given the same physics; the same cap, or one not reached, is fine
        for newton_cap, flagged in ((1.53, capped), (1.44, False)):
            lines = []
            _reach.print_compare(scene, res | {"speed_cap": cap | {"bound": 0.4,
                                 "newton_max_self_contact_speed_m_s": newton_cap}}, lines.append)
            line = [s for s in lines if s.startswith("Newton's cap")]
            assert len(line) == 1 and f"{newton_cap:.2f} m/s" in line[0]
            assert ("same physics NOT established" in line[0]) == flagged, line
