"""Reference-image scenes for the renderer tests, the comparison, and their regeneration.

The scenes are built from STORED meshes (``tests/data/render/cloth_drape.obj``, a trimesh
icosphere, which is generated exactly from integers), never from live simulation, so physics
changes do not move them. Regenerate the stored PNGs on purpose (after a deliberate change to the
look) with::

    python -m render.reference_images --regenerate        # writes tests/data/render/ref_*.png

and look at every image before committing them.
"""

from __future__ import annotations

import argparse
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import numpy as np

REPO = Path(__file__).resolve().parent.parent
DATA = REPO / "tests" / "data" / "render"
ARTIFACTS = REPO / "test-artifacts" / "render"


def cloth_mesh():
    """The stored drape (cotton square over a sphere, 1024 vertices, 1922 triangles, UVs in metres)."""
    import trimesh

    m = trimesh.load(DATA / "cloth_drape.obj", process=False, maintain_order=True)
    return np.asarray(m.vertices, np.float32), np.asarray(m.faces, np.int32), np.asarray(m.visual.uv, np.float32)


def sphere_mesh(radius: float = 0.245, center=(0.0, 0.25, 0.0), subdivisions: int = 3):
    import trimesh

    s = trimesh.creation.icosphere(subdivisions=subdivisions, radius=radius)
    return np.asarray(s.vertices + np.asarray(center), np.float32), np.asarray(s.faces, np.int32)


@dataclass(frozen=True)
class RefScene:
    name: str
    build: Callable[[], tuple]   # -> (meshes, camera, settings)


def _drape_on_ball(material, avatar_material=None, view="front", **settings):
    from . import Material, MeshItem, RenderSettings, standard_view

    v, t, uv = cloth_mesh()
    sv, st = sphere_mesh()
    meshes = [MeshItem(v, t, material, uvs=uv, name="cloth"),
              MeshItem(sv, st, avatar_material or Material.skin(), name="ball")]
    lo, hi = v.min(0), v.max(0)
    s = RenderSettings(**{"width": 160, "height": 128, "shadow_map_size": 1024, "contact_map_size": 256, **settings})
    cam = standard_view(view, lo, hi, aspect=s.width / s.height)
    return meshes, cam, s


def _scenes() -> list[RefScene]:
    # The twill is magnified (64 texels over ~100 px): texture minification (mip selection,
    # anisotropic filtering) is implementation-defined and differs between Mesa and NVIDIA.
    from . import Material

    return [
        RefScene("navy_front", lambda: _drape_on_ball(Material.fabric("navy"))),
        RefScene("red_three_quarter_transparent",
                 lambda: _drape_on_ball(Material.fabric("red"), view="three_quarter", transparent=True)),
        RefScene("twill_ghost_left", lambda: _drape_on_ball(
            Material.fabric("#ffffff").replace(base_texture=DATA / "twill_base.png", normal_map=DATA / "twill_normal.png",
                                               uv_scale=(1.0, 1.0)),
            avatar_material=Material.hidden(), view="left")),
        RefScene("silk_filmic_back", lambda: _drape_on_ball(
            Material(base_color="#d9c7a7", roughness=0.35, sheen_color="#ffffff", sheen_roughness=0.3, name="silk"),
            view="back", tonemap="filmic")),
    ]


SCENES = {s.name: s for s in _scenes()}


def render_scene(name: str, renderer) -> np.ndarray:
    meshes, cam, settings = SCENES[name].build()
    return renderer.render(meshes, cam, settings)


def reference_path(name: str) -> Path:
    return DATA / f"ref_{name}.png"


@dataclass(frozen=True)
class ImageDiff:
    """Per-pixel absolute difference statistics over all channels (RGBA), in 8-bit levels."""

    max: int
    mean: float
    over: int          # pixels where any channel differs by more than the threshold
    over_fraction: float
    threshold: int

    def ok(self, max_over_fraction: float, max_mean: float) -> bool:
        return self.over_fraction <= max_over_fraction and self.mean <= max_mean


def compare_images(actual: np.ndarray, expected: np.ndarray, threshold: int) -> ImageDiff:
    if actual.shape != expected.shape:
        raise AssertionError(f"image shape {actual.shape} != reference shape {expected.shape}")
    d = np.abs(actual.astype(np.int16) - expected.astype(np.int16))
    per_pixel = d.max(axis=-1)
    over = int((per_pixel > threshold).sum())
    return ImageDiff(max=int(d.max()), mean=float(d.mean()), over=over,
                     over_fraction=over / per_pixel.size, threshold=threshold)


def save_failure(name: str, actual: np.ndarray, expected: np.ndarray, diff: ImageDiff) -> Path:
    """Write actual, expected and an amplified difference image under test-artifacts/render/."""
    import imageio.v3 as iio

    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    iio.imwrite(ARTIFACTS / f"{name}_actual.png", actual)
    iio.imwrite(ARTIFACTS / f"{name}_expected.png", expected)
    d = np.abs(actual.astype(np.int16) - expected.astype(np.int16)).max(axis=-1)
    vis = np.clip(d * (255.0 / max(diff.threshold, 1)) / 4.0, 0, 255).astype(np.uint8)
    iio.imwrite(ARTIFACTS / f"{name}_diff.png", vis)
    (ARTIFACTS / f"{name}_diff.json").write_text(json.dumps(diff.__dict__, indent=2))
    return ARTIFACTS


def main(argv=None) -> None:
    import imageio.v3 as iio

    from . import Renderer

    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--regenerate", action="store_true", help="overwrite tests/data/render/ref_*.png")
    p.add_argument("names", nargs="*", help="scenes (default: all)")
    args = p.parse_args(argv)
    names = args.names or list(SCENES)
    with Renderer() as r:
        for name in names:
            img = render_scene(name, r)
            if args.regenerate:
                iio.imwrite(reference_path(name), img)
                print(f"wrote {reference_path(name)}")
            else:
                ref = iio.imread(reference_path(name))
                print(name, compare_images(img, ref, 8))


if __name__ == "__main__":
    main()
