"""The fast paths of the renderer keep the image: deferred shading against forward shading, and
shadow/contact maps reused between frames against maps drawn afresh.

Deferred vs forward (per pixel, all channels, 8-bit levels). Forward shading writes, per MSAA
sample, the colour of the triangle covering it, shaded at the pixel centre; the deferred pass stores
the same inputs per sample and shades each distinct one, so interior pixels agree to rounding (1-2
levels: the G-buffer keeps normals and base colours in half floats, rel. error 5e-4). Differences
come only from edge pixels where two samples of one smooth surface (normals within 5 degrees,
positions within half a pixel) share one shading: N.L changes by at most sin(5 deg) ~ 9% there, for
at most 3 of 4 samples. Bounds: at most 0.5% of pixels differ by more than 8 levels and the mean
difference stays under 0.3 levels (the reference-image tests allow 2% and 1.0).
"""

from __future__ import annotations

import numpy as np
import pytest

from render import Camera, Material, MeshItem, Renderer, RenderSettings, standard_view
from render.lighting import SceneLight, SceneLights
from render.reference_images import DATA, cloth_mesh, sphere_mesh


def _sheet(n=160):
    """A folded hanging sheet (as benchmarks/render.py), dense: ~2 triangles per pixel at 160 x 128."""
    u, v = np.meshgrid(np.linspace(-0.5, 0.5, n), np.linspace(0.0, 1.0, n), indexing="xy")
    verts = np.stack([u, 0.02 + 1.4 * v, (0.02 + 0.06 * (1 - v)) * np.sin(2 * np.pi * 6 * u)], -1).reshape(-1, 3)
    i = np.arange(n - 1)
    a = (i[:, None] * n + i[None, :]).ravel()
    tris = np.concatenate([np.stack([a, a + 1, a + n], 1), np.stack([a + 1, a + n + 1, a + n], 1)])
    uv = np.stack([u + 0.5, v], -1).reshape(-1, 2)
    return verts, tris, uv


@pytest.fixture(scope="module")
def renderer():
    with Renderer() as r:
        yield r


def _compare(a, b):
    d = np.abs(a.astype(np.int16) - b.astype(np.int16))
    return (d.max(axis=-1) > 8).mean(), d.mean()


@pytest.mark.parametrize("look", ["navy", "twill_transparent", "drape_on_ball"])
def test_deferred_matches_forward(renderer, look):
    v, t, uv = _sheet()
    mat = Material.fabric("navy")
    extra = {}
    meshes = None
    if look == "twill_transparent":
        mat = Material.fabric("#ffffff").replace(base_texture=DATA / "twill_base.png",
                                                 normal_map=DATA / "twill_normal.png", uv_scale=(4.0, 4.0))
        extra = {"transparent": True}
    if look == "drape_on_ball":
        cv, ct, cuv = cloth_mesh()
        sv, st = sphere_mesh()
        meshes = [MeshItem(cv, ct, Material.fabric("red"), uvs=cuv, name="cloth"),
                  MeshItem(sv, st, Material.skin(), name="ball")]
        v = cv
    meshes = meshes or [MeshItem(v, t, mat, uvs=uv, name="sheet")]
    cam = standard_view("three_quarter", v.min(0), v.max(0), aspect=160 / 128)
    # lighting and shadow lookups per pixel in the forward reference (shading_rate, shadow_sampling)
    base = dict(width=160, height=128, shadow_map_size=1024, contact_map_size=256, shading_rate="pixel",
                shadow_sampling="pixel", **extra)
    fwd = renderer.render(meshes, cam, RenderSettings(shading="forward", **base))
    assert renderer.frame_info["shading"] == "forward"
    dfr = renderer.render(meshes, cam, RenderSettings(shading="deferred", **base))
    assert renderer.frame_info["shading"] == "deferred"
    over, mean = _compare(fwd, dfr)
    print(f"{look}: {100 * over:.3f}% of pixels over 8 levels, mean {mean:.3f}")
    assert over <= 0.005 and mean <= 0.3, (over, mean)
    if extra.get("transparent"):
        assert np.array_equal(fwd[..., 3] == 0, dfr[..., 3] == 0)   # the same empty background


def test_auto_picks_a_per_pixel_path_for_dense_meshes(renderer):
    """Visibility (deferred without it) for dense meshes on a software rasteriser (llvmpipe here);
    forward on a GPU unless VISIBILITY_AUTO_HARDWARE, as the G-buffer's bandwidth made the
    1 M-triangle frame slower there (renderer.SOFTWARE_RENDERERS)."""
    from render.settings import VISIBILITY_AUTO_HARDWARE, VISIBILITY_AUTO_SOFTWARE

    v, t, uv = _sheet(160)                       # 50 k triangles
    cam = standard_view("front", v.min(0), v.max(0), aspect=1.0)
    item = MeshItem(v, t, Material.fabric("navy"), name="sheet")
    # (lighting per pixel: a mesh the forward pass lights per vertex stays forward, test_render_vertex_lighting)
    renderer.render([item], cam, RenderSettings(width=96, height=96, shading_rate="pixel"))   # 5.5 triangles / px
    if renderer.software_raster:
        expected = "visibility" if VISIBILITY_AUTO_SOFTWARE else "deferred"
    else:
        expected = "visibility" if VISIBILITY_AUTO_HARDWARE else "forward"
    assert renderer.frame_info["shading"] == expected
    renderer.render([item], cam, RenderSettings(width=1024, height=1024))      # 0.05 triangles / px
    sparse = "visibility" if VISIBILITY_AUTO_HARDWARE and not renderer.software_raster else "forward"
    assert renderer.frame_info["shading"] == sparse


def test_shadow_maps_are_reused_only_while_valid(renderer):
    """Two views of one drape under scene lights (fixed in the world): the second view reuses the
    maps and gives the identical image to a frame whose maps were redrawn; moving the cloth redraws them."""
    cv, ct, cuv = cloth_mesh()
    sv, st = sphere_mesh()
    lights = SceneLights((SceneLight("directional", 3.0, direction=(-0.4, -1.0, -0.6)), SceneLight("ambient", 0.4)))
    meshes = [MeshItem(cv, ct, Material.fabric("navy"), name="cloth"), MeshItem(sv, st, Material.skin(), name="ball")]
    s = RenderSettings(width=120, height=96, shadow_map_size=1024, contact_map_size=256, rig=lights)
    front = standard_view("front", cv.min(0), cv.max(0), aspect=1.25)
    left = standard_view("left", cv.min(0), cv.max(0), aspect=1.25)
    renderer.render(meshes, front, s)
    assert renderer.frame_info["shadow_map"] == "drawn"
    reused = renderer.render(meshes, left, s)
    assert renderer.frame_info["shadow_map"] == "reused" and renderer.frame_info["contact_map"] == "reused"
    fresh = renderer.render(meshes, left, RenderSettings(**{**s.__dict__, "reuse_maps": False}))
    assert renderer.frame_info["shadow_map"] == "drawn"
    assert np.array_equal(reused, fresh)
    moved = [meshes[0].with_vertices(cv + np.float32([0.05, 0.0, 0.0])), meshes[1]]
    img = renderer.render(moved, left, s)
    assert renderer.frame_info["shadow_map"] == "drawn" and renderer.frame_info["contact_map"] == "drawn"
    assert not np.array_equal(img, reused)
    # a depth readback of the shadow map's size does not leave a stale map behind
    renderer.render_depth(meshes, left, 1024, 1024)
    again = renderer.render(moved, left, s)
    assert renderer.frame_info["shadow_map"] == "drawn" and np.array_equal(again, img)
