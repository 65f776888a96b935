"""Renderer plumbing: shader includes and defines, the program cache, explicit release, cameras,
the sheen albedo table, and what the images must show (shadow, tone maps, colourways)."""

from __future__ import annotations

import math

import numpy as np
import pytest

import clothsim as cs
from render import Camera, Material, MeshItem, Renderer, RenderSettings, framed_camera, standard_view
from render.camera import SENSOR_HEIGHT_MM, SENSOR_WIDTH_MM
from render.reference_images import cloth_mesh, sphere_mesh
from render.shaders import ShaderSourceError, load_source, program_key
from render.sheen import sheen_albedo, stored_sheen_albedo_table


@pytest.fixture(scope="module")
def renderer():
    with Renderer() as r:
        yield r


def test_includes_and_defines_are_expanded():
    src = load_source("mesh.frag", {"SHADOWS": True, "TONEMAP": 1, "HAS_NORMAL_MAP": False})
    lines = src.splitlines()
    assert lines[0].startswith("#version 450")
    assert "#define SHADOWS" in lines[1:4] and "#define TONEMAP 1" in lines[1:4]
    assert "#define HAS_NORMAL_MAP" not in src
    assert "#include" not in src and "float d_charlie(" in src and "float key_visibility(" in src
    assert "#ifndef COLOUR_GLSL" in src                # included twice (mesh.frag, brdf.glsl): guarded


def test_missing_shader_file_is_named():
    with pytest.raises(ShaderSourceError, match="no_such.frag"):
        load_source("no_such.frag")


def test_program_cache_keyed_by_files_and_defines(renderer):
    p = renderer.programs
    a = p.get("mesh.vert", "mesh.frag", {"SHADOWS": True, "TONEMAP": 0})
    b = p.get("mesh.vert", "mesh.frag", {"TONEMAP": 0, "SHADOWS": True})
    c = p.get("mesh.vert", "mesh.frag", {"SHADOWS": True, "TONEMAP": 1})
    assert a is b and a is not c
    assert program_key("a", "b", {"X": False}) == program_key("a", "b", {})


def test_release_is_idempotent_and_frees_everything():
    v, t = sphere_mesh(subdivisions=1)
    r = Renderer()
    cam = standard_view("front", v.min(0), v.max(0), aspect=1.0)
    r.render([MeshItem(v, t)], cam, width=16, height=16)
    assert len(r.programs) >= 3
    r.release()
    r.release()
    assert r.released and len(r.programs) == 0
    with pytest.raises(RuntimeError, match="released"):
        r.render([MeshItem(v, t)], cam, width=16, height=16)
    with Renderer() as r2:
        pass
    assert r2.released


def test_camera_conventions():
    lo, hi = np.array([-0.3, 0.0, -0.2]), np.array([0.3, 1.5, 0.2])
    front = standard_view("front", lo, hi, aspect=1.0)
    assert front.position[2] > 1.0 and abs(front.position[0]) < 1e-9   # front camera on +Z
    right, up, back = front.basis()
    np.testing.assert_allclose(right, [1, 0, 0], atol=1e-12)         # image x = world +X seen from the front
    left = standard_view("left", lo, hi, aspect=1.0)
    assert left.position[0] > 1.0                                    # body's left side is +X
    # 50 mm on 36 x 24: horizontal fov 2 atan(18/50) for a 3:2 image, vertical 2 atan(12/50)
    fx, fy = Camera(position=(0, 0, 1), focal_mm=50.0).fov(1.5)
    assert math.isclose(fx, 2 * math.atan(0.5 * SENSOR_WIDTH_MM / 50)) and math.isclose(fy, 2 * math.atan(0.5 * SENSOR_HEIGHT_MM / 50))
    with pytest.raises(cs.InputError, match="focal_mm"):
        Camera(position=(0, 0, 1), focal_mm=0.0)


def test_auto_framing_fits_the_bounds_with_the_margin():
    """Every bounds corner projects inside the image shrunk by the margin, and one touches it
    (the fit is tight): max |ndc| over the corners == 1 - margin (to 1e-9)."""
    from render.camera import bounds_corners

    lo, hi = np.array([-0.4, 0.1, -0.25]), np.array([0.5, 1.6, 0.3])
    for az, aspect in [(0.0, 1.0), (45.0, 1.5), (120.0, 0.75)]:
        cam = framed_camera(lo, hi, azimuth_deg=az, aspect=aspect, margin=0.1)
        p = cam.projection_matrix(aspect, 0.1, 100.0) @ cam.view_matrix()
        c = np.c_[bounds_corners(lo, hi), np.ones(8)] @ p.T
        ndc = np.abs(c[:, :2] / c[:, 3:4])
        assert math.isclose(ndc.max(), 0.9, rel_tol=1e-9)


def test_sheen_table_matches_its_definition():
    """The shipped E(mu, r) table equals a finer quadrature of the same integral to 0.01 (the
    64 x 128 midpoint rule converges ~1/n^2; 0.01 bounds it for r >= 0.1; below, E is clipped) and
    stays in [0, 1] so the base-layer scaling 1 - max(sheenColor) E is never negative."""
    table = stored_sheen_albedo_table()
    assert table.shape == (32, 32) and table.min() >= 0.0 and table.max() <= 1.0
    for j, i in [(4, 4), (8, 28), (16, 16), (31, 2), (24, 10)]:
        mu, r = (i + 0.5) / 32, (j + 0.5) / 32
        fine = min(sheen_albedo(mu, r, 192, 384), 1.0)
        assert abs(table[j, i] - fine) < 0.01, (mu, r, table[j, i], fine)


def _scene():
    v, t, uv = cloth_mesh()
    sv, st = sphere_mesh()
    return v, t, uv, sv, st


def test_shadow_on_the_floor_and_colourways_change_only_the_garment(renderer):
    """Floor under the drape is darker than the backdrop (shadow + contact), the corners equal the
    backdrop exactly, and a red vs navy colourway is red-dominant vs blue-dominant on the garment."""
    v, t, uv, sv, st = _scene()
    cam = standard_view("front", v.min(0), v.max(0), aspect=1.0)
    s = RenderSettings(width=96, height=96, shadow_map_size=512, contact_map_size=128)
    imgs = {}
    for name in ("red", "navy"):
        meshes = [MeshItem(v, t, Material.fabric(name), name="cloth"), MeshItem(sv, st, Material.skin(), name="ball")]
        imgs[name] = renderer.render(meshes, cam, s).astype(int)
    bg = np.round(np.asarray(s.background) * 255)
    for img in imgs.values():
        np.testing.assert_array_equal(img[0, 0, :3], bg)
    garment = np.abs(imgs["red"] - imgs["navy"]).sum(-1) > 30
    assert garment.mean() > 0.2
    red, navy = imgs["red"][garment].mean(0), imgs["navy"][garment].mean(0)
    assert red[0] > 1.5 * red[2] and navy[2] > 1.5 * navy[0]
    # identical outside the garment: the drape was not changed
    assert np.abs(imgs["red"] - imgs["navy"])[~garment].max() <= 30
    # shadows: outside the garment, the floor is darker than the backdrop by > 20 levels over a
    # visible area with shadows on, and nowhere without them
    plain = renderer.render([MeshItem(v, t, Material.fabric("red"), name="cloth"),
                             MeshItem(sv, st, Material.skin(), name="ball")], cam, s, shadows=False).astype(int)
    floor = np.abs(plain[..., :3] - bg).max(-1) == 0        # backdrop/floor pixels without shadows
    dark = (bg.mean() - imgs["red"][..., :3].mean(-1)) > 20
    assert (dark & floor).mean() > 0.02, (dark & floor).mean()
    assert ((bg.mean() - plain[..., :3].mean(-1)) > 20)[floor].sum() == 0


def test_filmic_and_neutral_differ_and_neutral_keeps_base_colour(renderer):
    """A flat, front-lit grey card: the neutral tone map keeps its hue (R=G=B within 2 levels), the
    filmic curve darkens mid-greys relative to neutral (its toe)."""
    quad = np.array([[-1, -1, 0], [1, -1, 0], [1, 1, 0], [-1, 1, 0]], np.float32)
    tris = np.array([[0, 1, 2], [0, 2, 3]])
    cam = Camera(position=(0, 0, 5), target=(0, 0, 0), focal_mm=200.0)
    m = MeshItem(quad, tris, Material(base_color="#808080", roughness=1.0))
    out = {}
    for tm in ("neutral", "filmic"):
        img = renderer.render([m], cam, width=16, height=16, tonemap=tm, shadows=False).astype(int)
        out[tm] = img[8, 8, :3]
    assert np.ptp(out["neutral"]) <= 2
    assert out["filmic"].mean() != out["neutral"].mean()
