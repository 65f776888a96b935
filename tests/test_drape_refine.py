"""Coarse-to-fine draping (``Drape(scene, level=k, refine_from=r)`` / the scene's ``simulation.refine_from``):
sew and settle at a coarse level, refine level by level, check at the fine level.

The drape test runs the shipped straight skirt on the default mannequin at 40 mm, then 20 mm, on the CPU
(~45 s of CPU time on the 2-core machine). Its checks are the scene's own [simulation.checks] (scenes/README.md):
settled (kinetic energy <= 1e-4 J/kg and residual <= 0.05 for 5 consecutive frames), largest seam gap
<= 5 mm, no vertex deeper than 2 mm inside the body, zero cloth-body and cloth-cloth intersections: the
same numbers a one-level drape must meet.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

import numpy as np
import pytest

import clothsim as cs
from clothsim.scene import Drape, load_scene, parse_scene
from clothsim.scene.run import with_overrides

ROOT = Path(__file__).resolve().parents[1]
SKIRT = ROOT / "scenes" / "straight_skirt.toml"
CIRCLE = ROOT / "scenes" / "circle_skirt.toml"


def _with_refine(scene, refine_from):
    return scene.replace(simulation=dataclasses.replace(scene.simulation, refine_from=refine_from))


# ---------------------------------------------------------------------------------------------- scene key
def _scene_text(extra: str) -> str:
    text = "".join(ln for ln in SKIRT.read_text(encoding="utf-8").splitlines(keepends=True)
                   if not ln.startswith("refine_from"))  # the shipped scene's own key, replaced by extra
    return text.replace("[simulation]\n", "[simulation]\n" + extra + "\n", 1)


@pytest.mark.parametrize("value, expected", [("0", 0), ('"coarsest"', 0), ("1", 1), ("false", None), ("", None)])
def test_refine_from_key_parses(tmp_path, value, expected):
    p = tmp_path / "s.toml"
    p.write_text(_scene_text(f"refine_from = {value}" if value else "").replace("../assets", str(ROOT / "assets")), encoding="utf-8")
    assert parse_scene(p).simulation.refine_from == expected
    for shipped in sorted((ROOT / "scenes").glob("*.toml")):  # every shipped scene refines from 40 mm
        assert load_scene(shipped).simulation.refine_from == 0, shipped.name


@pytest.mark.parametrize("value, match", [('"finest"', "expected 'coarsest', false or a level index"),
                                          ("-1", r"expected an integer in \[0, 16\]"),
                                          ("1.5", "expected an integer")])
def test_bad_refine_from_names_the_key(tmp_path, value, match):
    p = tmp_path / "s.toml"
    p.write_text(_scene_text(f"refine_from = {value}").replace("../assets", str(ROOT / "assets")), encoding="utf-8")
    with pytest.raises(cs.InputError, match="simulation.refine_from") as e:
        parse_scene(p)
    assert e.match(match)


def test_refine_from_must_be_coarser_than_the_level():
    scene = with_overrides(load_scene(SKIRT), device="cpu")
    with pytest.raises(cs.InputError, match=r"simulation.refine_from: level 2 .* is not coarser than the garments' level 1"):
        Drape(scene, level=1, refine_from=2)
    with pytest.raises(cs.InputError, match="refine_from: expected 'coarsest' or a level index"):
        Drape(scene, level=1, refine_from="fine")


def test_scene_key_selects_coarse_to_fine_and_same_level_is_one_level():
    scene = with_overrides(_with_refine(load_scene(SKIRT), 0), device="cpu")
    with Drape(scene, level=1) as d:  # the scene's refine_from = 0: starts at level 0, ends at level 1
        assert (d.sim.level, d.fine_level, d.level) == (0, 1, 0)
        fine_n = sum(g.cloth.vertex_count for g in d.garments)
        assert d.positions().shape == (fine_n, 3)  # the fine level's vertices, mapped from level 0
        assert d.sim.particle_count < fine_n
    with Drape(scene, level=0) as d:  # refine_from equal to the level: an ordinary one-level drape
        assert d.fine_level is None and d.level == 0


# ---------------------------------------------------------------------------------------------- drape
@pytest.fixture(scope="module")
def refined(pytestconfig):
    scene = with_overrides(load_scene(SKIRT), device=pytestconfig.getoption("--sim-device"))
    sizes, levels_seen = set(), []
    with Drape(scene, level=1, refine_from=0) as d:
        fine_n = int(d.offsets[-1])

        def on_frame(st, dr):
            sizes.add(dr.positions().shape)
            levels_seen.append(dr.sim.level)

        r = d.run(on_frame=on_frame)
        x = d.positions()
    return r, sizes, levels_seen, fine_n, x


def test_coarse_to_fine_drape_passes_at_the_fine_level(refined):
    r, sizes, levels_seen, fine_n, x = refined
    for st in r.levels:
        print(f"\nlevel {st['level']} ({1e3 * st['edge_length_m']:g} mm, {st['vertices']} vertices): {st['frames']} "
              f"frames, settled {st['settled']} at {st['settle_frame']}, {st['step_s']:.1f} s stepping, switch "
              f"{st['switch_s']:.2f} s (max move {1e3 * st['switch_max_displacement_m']:.1f} mm), residual "
              f"{st['residual']:.3f}, seam gap {1e3 * st['seam_gap_m']:.2f} mm")
    print(f"final: {r.failures or 'passed'}; pen {1e3 * r.worst_penetration_m:.2f} mm, gap {1e3 * r.largest_seam_gap_m:.2f} mm")
    assert [s["level"] for s in r.levels] == [0, 1]
    assert [s["vertices"] for s in r.levels] == [470, 1750]  # the 40 and 20 mm straight skirt
    assert sum(s["frames"] for s in r.levels) == r.frames == len(r.history)
    assert levels_seen == [0] * r.levels[0]["frames"] + [1] * r.levels[1]["frames"]
    assert all(s["settled"] for s in r.levels), r.failures
    # the fine level is entered once the coarse one settled; it then needs at least settle_frames frames
    assert r.levels[1]["frames"] >= r.thresholds["settle_frames"]
    assert r.settled and r.stopped_by == "settled" and r.passed, r.failures
    assert r.largest_seam_gap_m <= r.thresholds["seam_gap"]
    assert r.worst_penetration_m <= r.thresholds["penetration"]
    assert r.cloth_intersections == 0 and all(g.body_intersections == 0 for g in r.garments)
    assert r.residual <= r.thresholds["residual"] and r.kinetic_energy <= r.thresholds["kinetic_energy"]
    assert all(g.level == 1 and g.vertices == 1750 for g in r.garments)
    # every frame (coarse ones mapped through the hierarchy) has the fine topology: one frame cache
    assert sizes == {(fine_n, 3)} and np.isfinite(x).all()
    # no visible jump at the switch: projection + relaxation move a vertex off T·x_coarse by at most the chord
    # sagitta κh²/8 (h = 40 mm, κ <= 1/(5 cm) on the mannequin: 4 mm) plus the skin offset (3 mm) plus the
    # relaxation's local smoothing; bound: a quarter of a coarse edge (10 mm)
    assert r.levels[1]["switch_max_displacement_m"] < 0.25 * 0.04
    # the switch made no cloth-cloth intersection (0 at the end implies 0 here: self-collision cannot undo one)
    assert (r.levels[0]["switch_intersections"], r.levels[1]["switch_intersections"]) == (-1, 0)
    d = r.to_dict()
    assert d["levels"][1]["level"] == 1 and d["stopped_by"] == "settled"


def test_run_scene_with_refine_from_writes_one_topology(tmp_path, device):
    """`clothsim simulate` (clothsim.scene.run.run_scene) with the scene key: 3 frames per level, then the
    frame cache has every frame at the final level's vertex count and report.json lists both levels."""
    import json

    from clothsim.scene.run import run_scene

    scene = with_overrides(_with_refine(load_scene(SKIRT), "coarsest"), device=device, frames=3)
    scene = scene.replace(garments=[dataclasses.replace(g, level=1) for g in scene.garments],
                          output=dataclasses.replace(scene.output, formats=("obj",)))
    result, files = run_scene(scene, tmp_path, progress=False)
    assert [s["frames"] for s in result.levels] == [3, 3] and result.stopped_by == "frame cap"
    z = np.load(files["frames"])
    assert z["positions"].shape == (7, 1750, 3) and list(z["frame"]) == list(range(7))  # frame 0 + 6 frames
    rep = json.loads(Path(files["report"]).read_text())
    assert [(s["level"], s["vertices"]) for s in rep["levels"]] == [(0, 470), (1, 1750)]
    assert not result.passed and result.failures[0].startswith("did not settle within 3 frames of the final level")


def test_circle_skirt_switch_leaves_no_cloth_intersection(device):
    """The 40 mm circle skirt after 30 frames has tight folds, some ending in a point at a coarse vertex (the
    vertex's fan folded sharply). Linear prolongation to 20 mm puts each fine triangle on the coarse ones, and
    a fine triangle whose corners lie in different triangles of that fan is a chord across a fold line;
    chords across neighbouring fold lines cross (7 pairs here; 5 after 90 frames in session 6, which the drape
    kept to the end). Drape.refine removes them (clothsim.scene.seams.untangle: local smoothing of the
    crossing triangles and their neighbours) and they stay removed while it steps. The smoothing is local: no
    vertex moves by more than half a coarse edge (20 mm).

    The coarse state is stored (tests/data/drape/circle_skirt_40mm_frame30.npz, the 40 mm drape's frame 30 on
    the CPU at commit 5326693): since session 13's colouring (7 colours where there were 10) the drape itself
    no longer folds that way (none at frames 20, 25, 30, 35, 40, 50, 60, 70 or 90), so it cannot make the
    case this test is about."""
    scene = with_overrides(load_scene(CIRCLE), device=device)
    state = np.load(ROOT / "tests" / "data" / "drape" / "circle_skirt_40mm_frame30.npz")
    with Drape(scene, level=1, refine_from=0) as d:
        for _ in range(30):  # sewn as in the stored run
            d.step()
        d.sim.set_positions(state["positions"])
        d.sim.set_velocities(state["velocities"])
        st = d.refine()
        print(f"\nswitch: {st.switch_intersections} intersections, untangling counts {st.untangle_counts}, "
              f"largest move {1e3 * st.untangle_max_move_m:.1f} mm")
        assert st.switch_intersections > 0
        if st.switch_intersections:
            assert st.untangle_counts[0] == st.switch_intersections and st.untangle_counts[-1] == 0
            assert 0 < st.untangle_max_move_m < 0.02
        assert d._cloth_intersections() == 0
        for _ in range(3):
            d.step()
        assert d._cloth_intersections() == 0


def test_contact_stiffness_per_vertex_area():
    """A scene's contact_stiffness holds at the coarsest level (40 mm); a level of edge h uses k·(h/0.04)², so a
    vertex presses into the body by the same weight/stiffness at every level (vertex mass ∝ h²). Exact: it is a
    product of the scene's number and a squared ratio of the hierarchy's edge lengths."""
    scene = with_overrides(_with_refine(load_scene(SKIRT), None), device="cpu")  # one level unless asked
    k = scene.simulation.contact_stiffness
    with Drape(scene, level=1) as d:
        assert d.sim.contact_stiffness == pytest.approx(k * 0.25, rel=1e-12)
    with Drape(scene, level=1, contact_per_area=False) as d:
        assert d.sim.contact_stiffness == k
    with Drape(scene, level=1, refine_from=0) as d:  # coarse-to-fine: each level its own
        assert d.sim.simulator.contact_stiffness == pytest.approx(k, rel=1e-12)
        d.refine()
        assert d.sim.simulator.contact_stiffness == pytest.approx(k * 0.25, rel=1e-12)


# ---------------------------------------------------------------------------------------------- per-level settings
def test_levels_key_parses_and_names_bad_entries(tmp_path):
    p = tmp_path / "s.toml"

    def parse(extra):
        p.write_text(_scene_text(extra).replace("../assets", str(ROOT / "assets")), encoding="utf-8")
        return parse_scene(p).simulation

    s = parse("levels = { 3 = { substeps = 20 }, 1 = { iterations = 6, substeps = 8 } }")
    assert s.levels == {3: {"substeps": 20}, 1: {"iterations": 6, "substeps": 8}}
    assert s.at_level(3) == (20, s.iterations) and s.at_level(1) == (8, 6)
    assert s.at_level(0) == (s.substeps, s.iterations) and s.at_level(0, substeps=5) == (5, s.iterations)
    assert s.at_level(3, substeps=5) == (20, s.iterations)  # the scene's own entry beats a caller's default
    for extra, match in [("levels = { fine = { substeps = 20 } }", r"simulation.levels.fine: expected a level index"),
                         ("levels = { 17 = { substeps = 20 } }", r"simulation.levels.17: expected a level index in \[0, 16\]"),
                         ("levels = { 3 = { substeps = 0 } }", r"simulation.levels.3.substeps: expected an integer in \[1, 1000\]"),
                         ("levels = { 3 = { substep = 20 } }", r"simulation.levels.3.substep: unknown key; did you mean 'substeps'"),
                         ("levels = { 3 = 20 }", r"simulation.levels.3: expected a table, got an integer"),
                         ("levels = 20", r"simulation.levels: expected a table of level index")]:
        with pytest.raises(cs.InputError, match=match):
            parse(extra)


def test_levels_key_sets_substeps_per_level_and_an_override_beats_it():
    """One-level drape: the level's entry; coarse-to-fine: drafts at half the scene's substeps unless their level
    has an entry, the final level its entry (else the scene's); an explicit with_overrides(substeps=) wins."""
    base = with_overrides(_with_refine(load_scene(SKIRT), None), device="cpu")
    sim = dataclasses.replace(base.simulation, levels={0: {"substeps": 3}, 1: {"substeps": 7, "iterations": 4}})
    scene = base.replace(simulation=sim)
    with Drape(scene, level=0) as d:
        assert (d.sim.substeps, d.sim.iterations) == (3, sim.iterations)
    with Drape(scene, level=2, refine_from=0) as d:
        assert (d.sim.simulator.substeps, d.sim.simulator.iterations) == (3, sim.iterations)
        d.refine()
        assert (d.sim.simulator.substeps, d.sim.simulator.iterations) == (7, 4)
        d.refine()
        assert (d.sim.simulator.substeps, d.sim.simulator.iterations) == (sim.substeps, sim.iterations)
    forced = with_overrides(scene, substeps=2)
    assert forced.simulation.levels == {0: {}, 1: {"iterations": 4}}
    with Drape(forced, level=0) as d:
        assert d.sim.substeps == 2


def test_sweep_key_sets_the_sweep_per_scene_and_per_level(tmp_path):
    """``sweep`` (clothsim.Simulator's) in [simulation] and in a [simulation.levels] entry: the level's entry
    wins where given; a bad value names the key and the choices."""
    p = tmp_path / "s.toml"

    def parse(extra):
        p.write_text(_scene_text(extra).replace("../assets", str(ROOT / "assets")), encoding="utf-8")
        return parse_scene(p).simulation

    s = parse('sweep = "jacobi"\nlevels = { 2 = { sweep = "gauss-seidel" } }')
    assert (s.sweep, s.sweep_at(0), s.sweep_at(2), s.sweep_at(None)) == ("jacobi", "jacobi", "gauss-seidel", "jacobi")
    assert parse("").sweep_at(1) == "gauss-seidel"
    for extra, match in [('sweep = "red-black"', r"simulation.sweep: .*gauss-seidel.*jacobi"),
                         ('levels = { 1 = { sweep = 2 } }', r"simulation.levels.1.sweep")]:
        with pytest.raises(cs.InputError, match=match):
            parse(extra)
    base = with_overrides(_with_refine(load_scene(SKIRT), None), device="cpu")
    scene = base.replace(simulation=dataclasses.replace(base.simulation, sweep="jacobi",
                                                        levels={1: {"sweep": "gauss-seidel"}}))
    with Drape(scene, level=0) as d:
        assert d.sim.sweep == "jacobi"
    with Drape(scene, level=1, refine_from=0) as d:
        assert d.sim.simulator.sweep == "jacobi"
        d.refine()
        assert d.sim.simulator.sweep == "gauss-seidel"


def test_chebyshev_keys_reach_the_simulators(tmp_path):
    p = tmp_path / "s.toml"
    p.write_text(_scene_text("chebyshev_rho = 0.9\nchebyshev_delay = 1").replace("../assets", str(ROOT / "assets")),
                 encoding="utf-8")
    s = parse_scene(p).simulation
    assert (s.chebyshev_rho, s.chebyshev_delay) == (0.9, 1)
    p.write_text(_scene_text("chebyshev_rho = 1.5").replace("../assets", str(ROOT / "assets")), encoding="utf-8")
    with pytest.raises(cs.InputError, match="simulation.chebyshev_rho"):
        parse_scene(p)
    base = with_overrides(_with_refine(load_scene(SKIRT), None), device="cpu")
    scene = base.replace(simulation=dataclasses.replace(base.simulation, chebyshev_rho=0.9, chebyshev_delay=1))
    with Drape(scene, level=0) as d:
        assert (d.sim.chebyshev_rho, d.sim.chebyshev_delay) == (0.9, 1)
    with Drape(scene, level=1, refine_from=0) as d:
        assert (d.sim.simulator.chebyshev_rho, d.sim.simulator.chebyshev_delay) == (0.9, 1)
