"""Reference-image tests: small scenes from stored meshes rendered and compared per pixel with the
PNGs in tests/data/render/ (see render/reference_images.py).

Regenerate the references on purpose (after a deliberate change of the look), look at them, commit:

    .venv/bin/python -m render.reference_images --regenerate

Tolerances. The references were made with Mesa llvmpipe; the same driver reproduces them exactly
(difference 0), so the bounds are there for other drivers and Mesa/LLVM versions, whose legal
freedoms are (a) MSAA sample positions and coverage at silhouette edges, (b) float rounding in
shadow-map comparisons along penumbra boundaries and (c) 1-2 levels of 8-bit rounding after the
sRGB encode. (a) and (b) touch only edge/penumbra pixels: a one-pixel-wide ring around the garment
of 160 x 128 px is ~3% of the image, so at most 2% of pixels may differ by more than 8 levels
(8/255 is ~3%: far above rounding, below a visible change of colour); the mean absolute difference
over all channels must stay under 1.0 level (a global shift of colour or exposure by 1% alone would
move the mean by ~1.3 levels over the garment's third of the frame). A failing comparison writes
actual, expected and the difference image to test-artifacts/render/.
"""

from __future__ import annotations

import imageio.v3 as iio
import numpy as np
import pytest

from render import Material, Renderer
from render.reference_images import SCENES, compare_images, reference_path, render_scene, save_failure

THRESHOLD = 8          # levels of 255
MAX_OVER = 0.02        # fraction of pixels over THRESHOLD
MAX_MEAN = 1.0         # mean |difference| in levels


@pytest.fixture(scope="module")
def renderer():
    with Renderer() as r:
        yield r


@pytest.mark.parametrize("name", sorted(SCENES))
def test_matches_reference(renderer, name):
    actual = render_scene(name, renderer)
    expected = iio.imread(reference_path(name))
    diff = compare_images(actual, expected, THRESHOLD)
    if not diff.ok(MAX_OVER, MAX_MEAN):
        where = save_failure(name, actual, expected, diff)
        pytest.fail(f"{name}: {diff.over} px ({100 * diff.over_fraction:.2f}%) differ by > {THRESHOLD}, "
                    f"max {diff.max}, mean {diff.mean:.2f}; images in {where}")


def test_comparison_catches_a_colour_change(renderer):
    """The comparison is not blind: navy (#1f2d4d) vs a navy 6 levels lighter per channel must fail it."""
    meshes, cam, s = SCENES["navy_front"].build()
    lighter = [m.with_material(Material.fabric("#253353")) if m.name == "cloth" else m for m in meshes]
    actual = renderer.render(lighter, cam, s)
    diff = compare_images(actual, iio.imread(reference_path("navy_front")), THRESHOLD)
    assert not diff.ok(MAX_OVER, MAX_MEAN), diff


def test_transparent_reference_has_alpha_and_shadow():
    """The transparent scene: background alpha 0 in the corners, opaque garment, a floor shadow that
    is partly transparent black (alpha strictly between 0 and 255 under the garment's side)."""
    img = iio.imread(reference_path("red_three_quarter_transparent"))
    assert img.shape[2] == 4
    assert (img[:4, :4, 3] == 0).all()
    alpha = img[..., 3]
    assert (alpha == 255).mean() > 0.1
    partial = (alpha > 10) & (alpha < 200)          # anti-aliased garment edges and the floor shadow
    black = img[..., :3].max(axis=-1) < 8            # the shadow is black with alpha (straight alpha)
    edge = np.abs(img[..., 0].astype(int) - img[..., 1]) > 60   # the red garment's edge pixels
    assert (partial & black).sum() > 300, (partial & black).sum()   # a shadow, not a few stray pixels
    assert (partial & ~black & ~edge).sum() < 0.1 * partial.sum()   # no grey floor / halo
