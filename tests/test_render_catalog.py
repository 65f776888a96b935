"""Catalog shots: views as PNGs, turntable MP4/GIF at the exact size, contact sheet, JSON metadata,
colourways without re-simulating, and the `clothsim render` command end to end on a stored drape."""

from __future__ import annotations

import json

import imageio.v3 as iio
import numpy as np
import pytest
from click.testing import CliRunner

from render import Camera, Material, MeshItem, Renderer
from render.catalog import parse_colourway, render_catalog
from render.reference_images import DATA, cloth_mesh, sphere_mesh


@pytest.fixture(scope="module")
def renderer():
    with Renderer() as r:
        yield r


@pytest.fixture(scope="module")
def meshes():
    v, t, uv = cloth_mesh()
    sv, st = sphere_mesh()
    return MeshItem(v, t, Material.fabric("navy"), uvs=uv, name="cloth"), MeshItem(sv, st, Material.skin(), name="ball")


@pytest.mark.parametrize("size, video_size", [((64, 48), (64, 48)), ((65, 49), (66, 50))])
def test_turntable_has_the_exact_size(tmp_path, renderer, meshes, size, video_size):
    """An even size is kept exactly (48 lines means 48, not a macro-block multiple like 64); an odd
    size cannot be coded in 4:2:0 H.264 and is padded by one edge pixel, as the JSON records."""
    cloth, ball = meshes
    summary = render_catalog([cloth], tmp_path, avatar=ball, views=["front"], size=size, turntable=6,
                             renderer=renderer)
    video = iio.imread(tmp_path / "turntable.mp4")
    assert video.shape == (6, video_size[1], video_size[0], 3)
    gif = iio.imread(tmp_path / "turntable.gif")
    assert gif.shape[0] == 6
    assert iio.imread(tmp_path / "front.png").shape == (size[1], size[0], 4)
    if size != video_size:
        assert summary["files"]["turntable_padded_px"] == [1, 1]
    # the turntable turns: first and middle frames differ, frame 0 looks like the front view
    assert np.abs(video[0].astype(int) - video[3]).mean() > 2


def test_views_sheet_json_and_colourways(tmp_path, renderer, meshes):
    cloth, ball = meshes
    looks = [parse_colourway("navy"), parse_colourway("brick=#a0412d"),
             parse_colourway(f"twill={DATA / 'twill_base.png'}")]
    cam = Camera(position=(0.0, 1.2, 2.0), target=(0.0, 0.3, 0.0), focal_mm=35.0, name="hero")
    summary = render_catalog([cloth], tmp_path, avatar=ball, views=["front", "back"], cameras=[cam],
                             size=(40, 40), colourways=looks, renderer=renderer, ghost=True,
                             metadata={"scene": {"source": "test"}})
    for look in ("navy", "brick", "twill"):
        for view in ("front", "back", "hero"):
            assert (tmp_path / look / f"{view}.png").is_file()
    sheet = iio.imread(tmp_path / "contact_sheet.png")
    assert sheet.shape[0] > 3 * 40 and sheet.shape[1] > 3 * 40
    data = json.loads((tmp_path / "catalog.json").read_text())
    assert data == json.loads(json.dumps(summary))
    assert data["scene"] == {"source": "test"}
    assert [c["name"] for c in data["cameras"]] == ["front", "back", "hero"]
    assert data["cameras"][2]["focal_mm"] == 35.0 and len(data["cameras"][0]["fov_deg"]) == 2
    assert data["meshes"][-1]["hidden"] is True
    assert data["timings_s"]["render_per_image_s"] > 0
    # the same drape, different looks: the silhouettes agree, the colours do not
    a = iio.imread(tmp_path / "navy" / "front.png").astype(int)
    b = iio.imread(tmp_path / "brick" / "front.png").astype(int)
    assert b[..., 0].mean() > a[..., 0].mean() + 5 and a[..., 2].mean() > b[..., 2].mean()


def test_transparent_png_has_alpha(tmp_path, renderer, meshes):
    cloth, ball = meshes
    render_catalog([cloth], tmp_path, avatar=ball, views=["front"], size=(48, 48), transparent=True, renderer=renderer)
    img = iio.imread(tmp_path / "front.png")
    assert img.shape[2] == 4 and img[0, 0, 3] == 0 and (img[..., 3] == 255).mean() > 0.2


def test_cli_renders_a_stored_drape(tmp_path):
    from clothsim.cli import main

    v, t, _ = cloth_mesh()
    np.savez(tmp_path / "drape.npz", positions=np.stack([v, v]), triangles=t)
    out = tmp_path / "shots"
    res = CliRunner().invoke(main, ["render", str(tmp_path / "drape.npz"), "-o", str(out), "--size", "48x32",
                                    "--views", "front,left", "--colourways", "navy,sand", "--no-progress"])
    assert res.exit_code == 0, res.output
    assert "rendered 4 images at 48x32" in res.output
    for look in ("navy", "sand"):
        assert iio.imread(out / look / "left.png").shape == (32, 48, 4)
    data = json.loads((out / "catalog.json").read_text())
    assert data["scene"]["source"] == "drape cache" and data["scene"]["frame"] == 1
    assert "load_or_simulate" in data["timings_s"]


def test_sources_split_a_frame_cache_and_read_meshes(tmp_path):
    """frames.npz (clothsim simulate SCENE.toml) holds several garments by offsets: each becomes a
    MeshItem with its own triangles re-indexed; a mesh file keeps its vertex order and UVs."""
    from render.sources import load_drape_npz, load_source

    v, t, uv = cloth_mesh()
    n = len(v)
    positions = np.stack([np.concatenate([v, v + [2.0, 0.0, 0.0]])] * 3)
    tris = np.concatenate([t, t + n])
    np.savez(tmp_path / "frames.npz", positions=positions, triangles=tris, garment_offsets=np.array([0, n, 2 * n]))
    src = load_drape_npz(tmp_path / "frames.npz")
    assert [g.name for g in src.garments] == ["garment0", "garment1"]
    np.testing.assert_array_equal(src.garments[1].triangles, t)
    np.testing.assert_allclose(src.garments[1].vertices, v + [2.0, 0.0, 0.0])
    assert src.info["frame"] == 2
    mesh = load_source(DATA / "cloth_drape.obj")
    np.testing.assert_allclose(mesh.garments[0].vertices, v)
    np.testing.assert_allclose(mesh.garments[0].uvs, uv)
