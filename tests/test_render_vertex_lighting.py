"""Lighting per vertex in the forward pass against per fragment, and the "auto" choices:
RenderSettings.shadow_sampling (the key light's soft-shadow lookup per vertex, mesh.vert, interpolated)
and RenderSettings.shading_rate (the whole lighting per vertex and side, interpolated: Gouraud).

Why the bounds. The PCSS lookup (shadow.glsl) filters the shadow map over at least 2.5 texels each side,
so the visibility it returns changes over at least ~5 texels; on a mesh whose mean edge is at most 5
texels (VERTEX_SHADOW_MAX_EDGE_TEXELS) linear interpolation between vertices follows it except along the
thin self-shadow edges of folds, where it shifts or softens the edge by up to about half an edge.
Only those edge pixels differ: at most 1.5% of the mesh's pixels over 8 levels and a mean under 0.3
levels over the image (measured here, 51 k-triangle sheet at 320 x 256 under a side light: 0-1.0% and
0.08-0.10; the 100 k and 29 k sheets at 960 x 540 under three rigs: 0.2-0.6% of the image, mean
0.07-0.13; the reference-image tests allow 2% of the image and 1.0). On a coarse mesh (the stored drape,
edges of ~20 texels) the per-vertex lookup leaves triangle-shaped patches in the penumbrae: 2.5-4.1%
of its pixels over 8 levels, which the bound catches; "auto" keeps such meshes per pixel.

Per-vertex lighting (shading_rate). The lighting of a rough untextured surface (roughness >= 0.4)
changes little across a triangle whose edges project to a few pixels (auto: at most 6 px); it differs
from per-pixel lighting on the thin grazing-angle sheen lines of fold crests and at the shadow edges.
Bounds: at most 2% of the mesh's pixels over 8 levels and a mean under 0.5 levels over the image
(measured: the 100 k sheet at 1080p, 5.2 px edges, 0.85% and 0.044; the 51 k sheet here under a side
light, 0.7-1.3% and 0.12-0.14). On the coarse drape per-vertex lighting misses the highlights inside
its triangles: 6.8% of its pixels over 8 levels, caught by the same bound; "auto" keeps it per pixel.
The bound is for this dark fabric: a brighter one shows more of the same thin features (red, 100 k sheet
at 960 x 540: 1.1-6.0% of the cloth's pixels, mean <= 0.21; render.settings.VERTEX_SHADING_AUTO_SOFTWARE),
so the pixel count alone does not tell a dense red sheet from the coarse drape.
"""

from __future__ import annotations

import numpy as np
import pytest

import clothsim as cs
from render import Material, MeshItem, Renderer, RenderSettings, standard_view
from render.lighting import SceneLight, SceneLights
from render.reference_images import cloth_mesh, compare_images, sphere_mesh

from test_render_deferred import _sheet

W, H = 320, 256
SIDE = SceneLights((SceneLight("directional", 3.0, direction=(-1.0, -0.5, -0.25)), SceneLight("ambient", 0.3)))


@pytest.fixture(scope="module")
def renderer():
    with Renderer() as r:
        yield r


def _settings(**kw):
    return RenderSettings(**{**dict(width=W, height=H, shading="forward", shadow_map_size=1024, contact_map_size=256,
                                    rig=SIDE, shading_rate="pixel"), **kw})


def _compare(renderer, meshes, cam, key="shadow_sampling"):
    """(fraction of the meshes' pixels over 8 levels, ImageDiff of the image): per vertex vs per pixel
    (``key``: the setting changed)."""
    pixel = renderer.render(meshes, cam, _settings(shadow_sampling="pixel"))
    assert renderer.frame_info[key] == "pixel"
    vertex = renderer.render(meshes, cam, _settings(**{key: "vertex"}))
    assert renderer.frame_info[key] == "vertex"
    covered = renderer.render(meshes, cam, _settings(shadows=False, transparent=True))[..., 3] > 0
    d = compare_images(vertex, pixel, 8)
    over = np.abs(vertex.astype(np.int16) - pixel.astype(np.int16)).max(axis=-1) > 8
    return float((over & covered).sum() / covered.sum()), d


def _dense():
    v, t, uv = _sheet(160)
    return [MeshItem(v, t, Material.fabric("navy"), uvs=uv, name="sheet")], v


def _coarse():
    cv, ct, cuv = cloth_mesh()
    sv, st = sphere_mesh()
    return [MeshItem(cv, ct, Material.fabric("red"), uvs=cuv, name="cloth"),
            MeshItem(sv, st, Material.skin(), name="ball")], cv


@pytest.mark.parametrize("view", ["front", "three_quarter"])
def test_vertex_lookup_matches_pixel_lookup_on_a_dense_mesh(renderer, view):
    meshes, v = _dense()
    cam = standard_view(view, v.min(0), v.max(0), aspect=W / H)
    over, d = _compare(renderer, meshes, cam)
    print(view, over, d)
    assert over <= 0.015 and d.mean <= 0.3, (over, d)


def test_vertex_lookup_on_a_coarse_mesh_is_caught(renderer):
    """The bounds are not blind: forced per vertex on the coarse drape, the shadow on the cloth and
    the ball goes wrong by more than they allow."""
    meshes, v = _coarse()
    cam = standard_view("three_quarter", v.min(0), v.max(0), aspect=W / H)
    over, d = _compare(renderer, meshes, cam)
    print(over, d)
    assert over > 0.015 or d.mean > 0.3, (over, d)


def test_auto_choice(renderer):
    """auto: per vertex for the dense sheet on a software rasteriser only; per pixel for the coarse
    drape; per pixel in the other shading modes."""
    for make, dense in ((_dense, True), (_coarse, False)):
        meshes, v = make()
        cam = standard_view("front", v.min(0), v.max(0), aspect=W / H)
        renderer.render(meshes, cam, _settings())
        assert renderer.frame_info["shadow_sampling"] == ("vertex" if dense and renderer.software_raster else "pixel")
    meshes, v = _dense()
    cam = standard_view("front", v.min(0), v.max(0), aspect=W / H)
    renderer.render(meshes, cam, _settings(shading="visibility", shadow_sampling="vertex"))
    assert renderer.frame_info["shadow_sampling"] == "pixel"
    with pytest.raises(cs.InputError, match="shadow_sampling must be one of auto, pixel, vertex, got 'texel'"):
        RenderSettings(shadow_sampling="texel")


@pytest.mark.parametrize("view", ["front", "three_quarter"])
def test_vertex_lighting_matches_pixel_lighting_on_a_dense_mesh(renderer, view):
    meshes, v = _dense()
    cam = standard_view(view, v.min(0), v.max(0), aspect=W / H)
    over, d = _compare(renderer, meshes, cam, "shading_rate")
    print(view, over, d)
    assert over <= 0.02 and d.mean <= 0.5, (over, d)


def test_vertex_lighting_on_a_coarse_mesh_is_caught(renderer):
    meshes, v = _coarse()
    cam = standard_view("three_quarter", v.min(0), v.max(0), aspect=W / H)
    over, d = _compare(renderer, meshes, cam, "shading_rate")
    print(over, d)
    assert over > 0.02 or d.mean > 0.5, (over, d)


def test_vertex_lighting_auto_choice(renderer):
    """auto: per vertex for the dense untextured sheet on a software rasteriser; per pixel for the
    coarse drape, a textured sheet, a glossy one (roughness 0.2) and the same sheet at 4x the image size
    (edges over 6 px)."""
    from render.reference_images import DATA

    meshes, v = _dense()
    cam = standard_view("front", v.min(0), v.max(0), aspect=W / H)
    from render.settings import VERTEX_SHADING_AUTO_SOFTWARE

    renderer.render(meshes, cam, _settings(shading_rate="auto"))
    assert renderer.frame_info["shading_rate"] == ("vertex" if renderer.software_raster and VERTEX_SHADING_AUTO_SOFTWARE
                                                    else "pixel")
    assert renderer.frame_info["shadow_sampling"] == renderer.frame_info["shading_rate"]
    twill = Material.fabric("#ffffff").replace(base_texture=DATA / "twill_base.png")
    glossy = Material.fabric("navy").replace(roughness=0.2)
    for mat in (twill, glossy):
        renderer.render([meshes[0].with_material(mat)], cam, _settings(shading_rate="auto"))
        assert renderer.frame_info["shading_rate"] == "pixel"
    renderer.render(meshes, cam, _settings(shading_rate="auto", width=4 * W, height=4 * H))
    assert renderer.frame_info["shading_rate"] == "pixel"
    coarse, cv = _coarse()
    renderer.render(coarse, standard_view("front", cv.min(0), cv.max(0), aspect=W / H), _settings(shading_rate="auto"))
    assert renderer.frame_info["shading_rate"] == "pixel"
    with pytest.raises(cs.InputError, match="shading_rate must be one of auto, pixel, vertex, got 'quad'"):
        RenderSettings(shading_rate="quad")
