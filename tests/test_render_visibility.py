"""The visibility-buffer path (shading="visibility", render/visibility.py, shaders/visibility.*)
against the forward path on the same scenes, against the stored reference images, and the "auto"
choice.

Why the images agree, and the bounds. Forward shading runs the fragment shader once per pixel per
covering triangle, at the pixel centre (attributes extrapolated on the triangle's plane), writes
each covered sample's 8-bit colour, and the resolve averages the samples. The visibility pass
finds the same triangles per sample by id, intersects the camera ray through the pixel centre with
each one's plane (the same point, up to float rounding, ~1e-7 relative) and runs the same shading
code; it averages the samples' colours in float and rounds once. So interior and edge pixels agree
to 1-2 levels (the forward resolve rounds each sample to 8 bits first), except where a float-level
difference flips a shadow-map comparison on a penumbra boundary (one of 12 PCF taps: at most ~1/12
of the key light, measured max 4 levels). Untextured: at most 0.1% of pixels over 8 levels and a
mean under 0.05 levels (measured 0-0.01% and 0.012).

Textures: textureGrad with the ray differentials as derivatives, as mesh.frag's implicit lookups
take them from the pixel quad. On llvmpipe the compute pass samples through a sampler without
anisotropic filtering (llvmpipe's anisotropic filter reads quad derivatives, which a compute shader
does not have: wrong texels), while the forward pass filters anisotropically (up to 8 taps along
the footprint's long axis); they differ where the footprint is long, on steep folds of a minified
texture. Measured: the 4x-repeated twill on the folded sheet 4.0% of pixels over 8 levels, mean
0.7; the magnified twill of the reference scene 1.0%, mean 0.29. Bound 6% and mean 1.2 (a wrong
texture, wrong uvs or a missing texture move the mean by > 10 levels on these white/blue twills);
the reference scene keeps the reference bounds. On a GPU both passes filter anisotropically and
the untextured bounds are expected (run this file there).
"""

from __future__ import annotations

import numpy as np
import pytest

from render import Material, MeshItem, Renderer, RenderSettings, standard_view
from render.reference_images import DATA, SCENES, cloth_mesh, compare_images, reference_path, sphere_mesh

from test_render_deferred import _sheet
from test_render_reference import MAX_MEAN, MAX_OVER, THRESHOLD


@pytest.fixture(scope="module")
def renderer():
    with Renderer() as r:
        yield r


def _base(**kw):
    # lighting and shadow lookups per pixel in the forward reference (shading_rate, shadow_sampling)
    return dict(width=160, height=128, shadow_map_size=1024, contact_map_size=256, shading_rate="pixel",
                shadow_sampling="pixel", **kw)


def _scene(look):
    """(meshes, camera, settings overrides, textured) of a named test look."""
    v, t, uv = _sheet()
    if look == "navy_sheet":
        return [MeshItem(v, t, Material.fabric("navy"), uvs=uv, name="sheet")], v, {}, False
    if look == "twill_sheet_transparent":
        mat = Material.fabric("#ffffff").replace(base_texture=DATA / "twill_base.png",
                                                 normal_map=DATA / "twill_normal.png", uv_scale=(4.0, 4.0))
        return [MeshItem(v, t, mat, uvs=uv, name="sheet")], v, {"transparent": True}, True
    cv, ct, cuv = cloth_mesh()
    sv, st = sphere_mesh()
    avatar = Material.hidden() if look == "ghost_drape" else Material.skin()
    return ([MeshItem(cv, ct, Material.fabric("red"), uvs=cuv, name="cloth"), MeshItem(sv, st, avatar, name="ball")],
            cv, {}, False)


@pytest.mark.parametrize("look", ["navy_sheet", "twill_sheet_transparent", "drape_on_ball", "ghost_drape"])
def test_visibility_matches_forward(renderer, look):
    meshes, v, extra, textured = _scene(look)
    cam = standard_view("three_quarter", v.min(0), v.max(0), aspect=160 / 128)
    fwd = renderer.render(meshes, cam, RenderSettings(shading="forward", **_base(**extra)))
    vis = renderer.render(meshes, cam, RenderSettings(shading="visibility", **_base(**extra)))
    assert renderer.frame_info["shading"] == "visibility"
    d = compare_images(vis, fwd, THRESHOLD)
    print(f"{look}: {d}")
    max_over, max_mean = (0.06, 1.2) if textured and renderer.software_raster else (0.001, 0.05)
    assert d.over_fraction <= max_over and d.mean <= max_mean, d
    if extra.get("transparent"):
        assert np.array_equal(fwd[..., 3] == 0, vis[..., 3] == 0)   # the same empty background
        assert (vis[..., 3] == 0).mean() > 0.2


@pytest.mark.parametrize("variant", ["no_shadows", "transparent_filmic", "scene_point_spot", "two_samples"])
def test_visibility_matches_forward_across_settings(renderer, variant):
    """Lights, shadows off, transparency, tone map and sample count take the same code in both
    passes: the untextured bounds of the module docstring. Two samples: llvmpipe gives 4x targets
    for 2x requests; the per-pixel passes read the samples the target has (measured max 1 level;
    reading 2 of 4 had put 1.8% of pixels over 8 levels)."""
    from render.lighting import SceneLight, SceneLights

    kw = {"no_shadows": dict(shadows=False), "transparent_filmic": dict(transparent=True, tonemap="filmic"),
          "two_samples": dict(samples=2),
          "scene_point_spot": dict(rig=SceneLights((
              SceneLight("directional", 3.0, direction=(-0.4, -1.0, -0.6)),
              SceneLight("point", 20.0, position=(1.0, 1.5, 1.0)),
              SceneLight("spot", 30.0, position=(-1.0, 2.0, 1.0), direction=(0.5, -1.0, -0.5)),
              SceneLight("ambient", 0.3))))}[variant]
    meshes, v, _, _ = _scene("drape_on_ball")
    cam = standard_view("left", v.min(0), v.max(0), aspect=160 / 128)
    fwd = renderer.render(meshes, cam, RenderSettings(shading="forward", **_base(**kw)))
    vis = renderer.render(meshes, cam, RenderSettings(shading="visibility", **_base(**kw)))
    assert renderer.frame_info["shading"] == "visibility"
    d = compare_images(vis, fwd, THRESHOLD)
    assert d.over_fraction <= 0.001 and d.mean <= 0.05, d
    if variant == "two_samples":
        dfr = renderer.render(meshes, cam, RenderSettings(shading="deferred", **_base(**kw)))
        d = compare_images(dfr, fwd, THRESHOLD)
        assert d.over_fraction <= 0.005 and d.mean <= 0.3, d    # test_render_deferred's bounds


@pytest.mark.parametrize("name", sorted(SCENES))
def test_reference_images_in_visibility_mode(renderer, name):
    """The stored reference images (made forward) are matched in the visibility mode within the
    reference test's bounds (textured scene included: 1.0% over 8 levels, mean 0.29 on llvmpipe)."""
    import imageio.v3 as iio

    meshes, cam, s = SCENES[name].build()
    img = renderer.render(meshes, cam, RenderSettings(**{**s.__dict__, "shading": "visibility"}))
    assert renderer.frame_info["shading"] == "visibility"
    d = compare_images(img, iio.imread(reference_path(name)), THRESHOLD)
    assert d.over_fraction <= MAX_OVER and d.mean <= MAX_MEAN, d


def test_merged_shading_stays_close(renderer):
    """visibility_merge: samples of one mesh's triangles that share a vertex share one shading.
    Differences only on edge pixels where cloth folds over itself (a sample of the far layer
    shaded as the near one): at most 0.5% of pixels over 8 levels, mean under 0.1 (measured 0.2%
    and 0.05 on the drape)."""
    meshes, v, extra, _ = _scene("drape_on_ball")
    cam = standard_view("three_quarter", v.min(0), v.max(0), aspect=160 / 128)
    fwd = renderer.render(meshes, cam, RenderSettings(shading="forward", **_base()))
    renderer.visibility_merge = True
    try:
        vis = renderer.render(meshes, cam, RenderSettings(shading="visibility", **_base()))
    finally:
        renderer.visibility_merge = False
    d = compare_images(vis, fwd, THRESHOLD)
    assert d.over_fraction <= 0.005 and d.mean <= 0.1, d


def test_moving_one_of_two_meshes_updates_the_geometry(renderer):
    """Two meshes share the vertex textures; moving one re-fills them (the image follows the
    forward path's), and an unchanged frame reuses them (identical image)."""
    meshes, v, _, _ = _scene("drape_on_ball")
    cam = standard_view("front", v.min(0), v.max(0), aspect=160 / 128)
    s = RenderSettings(shading="visibility", **_base())
    first = renderer.render(meshes, cam, s)
    moved = [meshes[0].with_vertices(meshes[0].vertices + np.float32([0.04, 0.02, 0.0])), meshes[1]]
    img = renderer.render(moved, cam, s)
    again = renderer.render(moved, cam, s)
    fwd = renderer.render(moved, cam, RenderSettings(shading="forward", **_base()))
    assert np.abs(img.astype(int) - first.astype(int)).max() > 50
    assert np.array_equal(img, again)
    d = compare_images(img, fwd, THRESHOLD)
    assert d.over_fraction <= 0.001 and d.mean <= 0.05, d


def test_auto_choice(renderer):
    """llvmpipe: dense (>= 0.2 triangles per pixel) -> visibility, textured or not, sparse ->
    forward, whether the shadow maps were redrawn or reused; a GPU: forward (visibility with
    VISIBILITY_AUTO_HARDWARE). Lighting per pixel (shading_rate): a dense untextured mesh the forward
    pass lights per vertex stays forward on llvmpipe ("dense_vertex_lit")."""
    from render.settings import VISIBILITY_AUTO_HARDWARE

    v, t, uv = _sheet(160)                       # 50 k triangles
    cam = standard_view("front", v.min(0), v.max(0), aspect=1.0)
    plain = MeshItem(v, t, Material.fabric("navy"), uvs=uv, name="sheet")
    twill = plain.with_material(Material.fabric("#ffffff").replace(base_texture=DATA / "twill_base.png"))
    got = {}
    for name, item, size in [("dense", plain, 96), ("dense_textured", twill, 96), ("sparse", plain, 1024)]:
        renderer.render([item], cam, RenderSettings(width=size, height=size, shading_rate="pixel"))   # maps drawn
        renderer.render([item], cam, RenderSettings(width=size, height=size, shading_rate="pixel"))   # maps reused
        assert renderer.frame_info["shadow_map"] == "reused"
        got[name] = renderer.frame_info["shading"]
    renderer.render([plain], cam, RenderSettings(width=96, height=96, reuse_maps=False, shading_rate="pixel"))
    got["dense_maps_redrawn"] = renderer.frame_info["shading"]
    renderer.render([plain], cam, RenderSettings(width=96, height=96))
    got["dense_vertex_lit"] = renderer.frame_info["shading"]
    if renderer.software_raster:
        from render.settings import VERTEX_SHADING_AUTO_SOFTWARE

        assert got == {"dense": "visibility", "dense_textured": "visibility", "sparse": "forward",
                       "dense_maps_redrawn": "visibility",
                       "dense_vertex_lit": "forward" if VERTEX_SHADING_AUTO_SOFTWARE else "visibility"}, got
    else:
        gpu = "visibility" if VISIBILITY_AUTO_HARDWARE else "forward"
        assert got == {"dense": gpu, "dense_textured": gpu, "sparse": gpu, "dense_maps_redrawn": gpu,
                       "dense_vertex_lit": gpu}, got


def test_frames_it_cannot_take_are_drawn_forward(renderer):
    """No MSAA (1 sample) or a textured mesh after the 6th: "visibility" falls back to forward."""
    meshes, v, _, _ = _scene("navy_sheet")
    cam = standard_view("front", v.min(0), v.max(0), aspect=1.0)
    renderer.render(meshes, cam, RenderSettings(shading="visibility", samples=1, **_base()))
    assert renderer.frame_info["shading"] == "forward"
    sv, st = sphere_mesh()
    twill = Material.fabric("#ffffff").replace(base_texture=DATA / "twill_base.png")
    uv = np.zeros((len(sv), 2), np.float32)
    many = [MeshItem(sv + np.float32([0.6 * k, 0, 0]), st, twill, uvs=uv, name=f"b{k}") for k in range(7)]
    renderer.render(many, cam, RenderSettings(shading="visibility", width=64, height=48))
    assert renderer.frame_info["shading"] == "forward"
    renderer.render(many[:6], cam, RenderSettings(shading="visibility", width=64, height=48))
    assert renderer.frame_info["shading"] == "visibility"
