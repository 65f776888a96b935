"""glTF materials of imported garments (render.gltf_material): a GLB written here with trimesh (its
JSON then given KHR_materials_sheen) is drawn with its own base colour, sheen and textures.

References: the same mesh drawn with ``Material.from_gltf`` of the factors written into the file
must give the identical image (difference 0: the same program, uniforms and texture bytes), and a
texture's layout must land where the UVs put it (top half red, bottom half blue).
"""

from __future__ import annotations

import json
import struct
from pathlib import Path

import numpy as np
import pytest
import trimesh
from PIL import Image

import clothsim as cs
from clothsim.scene.schema import GarmentSpec
from render import Camera, Material, MeshItem, Renderer, RenderSettings
from render.gltf_material import gltf_uv, read_gltf_material
from render.sources import garment_look, load_source


def _panel(n=12):
    """A 0.6 x 0.8 m vertical panel facing +Z, UVs in the OBJ convention (v up: the top edge has v = 1)."""
    u, v = np.meshgrid(np.linspace(0, 1, n), np.linspace(0, 1, n), indexing="xy")
    verts = np.stack([0.6 * (u - 0.5), 0.2 + 0.8 * v, 0.02 * np.sin(6 * u)], -1).reshape(-1, 3)
    i = np.arange(n - 1)
    a = (i[:, None] * n + i[None, :]).ravel()
    faces = np.concatenate([np.stack([a, a + 1, a + n], 1), np.stack([a + 1, a + n + 1, a + n], 1)])
    return verts, faces, np.stack([u, v], -1).reshape(-1, 2)


def _patch_glb(data: bytes, edit) -> bytes:
    """Apply ``edit(json_doc)`` to a GLB's JSON chunk and repack it."""
    _, version, _ = struct.unpack_from("<III", data, 0)
    jlen, _ = struct.unpack_from("<II", data, 12)
    doc = json.loads(data[20:20 + jlen])
    rest = data[20 + jlen:]
    edit(doc)
    j = json.dumps(doc).encode()
    j += b" " * (-len(j) % 4)
    body = struct.pack("<II", len(j), 0x4E4F534A) + j + rest
    return struct.pack("<III", 0x46546C67, version, 12 + len(body)) + body


def _json(path: Path) -> dict:
    data = path.read_bytes()
    jlen, _ = struct.unpack_from("<II", data, 12)
    return json.loads(data[20:20 + jlen])


def write_glb(path: Path, base=(0.8, 0.1, 0.1, 1.0), metallic=0.0, roughness=0.7, sheen=None, texture=None,
              edit=None) -> Path:
    v, f, uv = _panel()
    mat = trimesh.visual.material.PBRMaterial(name="garment", baseColorFactor=base, metallicFactor=metallic,
                                              roughnessFactor=roughness, baseColorTexture=texture, doubleSided=True)
    mesh = trimesh.Trimesh(v, f, visual=trimesh.visual.TextureVisuals(uv=uv, material=mat), process=False)
    data = mesh.export(file_type="glb")

    def add(doc):
        if sheen is not None:
            doc["materials"][0].setdefault("extensions", {})["KHR_materials_sheen"] = {
                "sheenColorFactor": list(sheen[0]), "sheenRoughnessFactor": sheen[1]}
            doc.setdefault("extensionsUsed", []).append("KHR_materials_sheen")
        if edit:
            edit(doc)
    path.write_bytes(_patch_glb(data, add))
    return path


CAM = Camera(position=(0.0, 0.6, 2.2), target=(0.0, 0.6, 0.0), focal_mm=50.0, name="front")
S = RenderSettings(width=96, height=96, ground=False)


@pytest.fixture(scope="module")
def renderer():
    with Renderer() as r:
        yield r


def _draw(renderer, item):
    img = renderer.render([item], CAM, S)
    depth = renderer.render_depth([item], CAM, S.width, S.height)
    return img, depth > 0


def test_base_colour_and_sheen_come_from_the_file(renderer, tmp_path):
    base, sheen = (0.6, 0.05, 0.04, 1.0), ((1.0, 1.0, 1.0), 0.4)
    src = load_source(write_glb(tmp_path / "red.glb", base=base, roughness=0.8, sheen=sheen))
    item = src.garments[0]
    m = item.material
    assert m.name == "garment" and m.roughness == pytest.approx(0.8) and m.metallic == 0.0
    assert m.sheen_roughness == pytest.approx(0.4) and m.sheen_color == pytest.approx((1.0, 1.0, 1.0))
    img, mask = _draw(renderer, item)
    # identical to the factors as stored in the file (trimesh stores baseColorFactor in 8 bits:
    # within 0.5/255 of what was asked), given in Python: the file is read exactly
    stored = _json(tmp_path / "red.glb")["materials"][0]["pbrMetallicRoughness"]["baseColorFactor"]
    assert np.allclose(stored, base, atol=0.5 / 255 + 1e-6)
    ref = Material.from_gltf(stored, 0.0, 0.8, sheen[0], sheen[1])
    ref_img, _ = _draw(renderer, item.with_material(ref))
    assert np.abs(img.astype(int) - ref_img).max() == 0
    # the colour follows the file: red dominates where the panel is
    rgb = img[..., :3][mask].astype(float).mean(0)
    assert rgb[0] > 2.0 * rgb[1] and rgb[0] > 2.0 * rgb[2], rgb
    blue = load_source(write_glb(tmp_path / "blue.glb", base=(0.04, 0.08, 0.6, 1.0)))
    rgb_b = _draw(renderer, blue.garments[0])[0][..., :3][mask].astype(float).mean(0)
    assert rgb_b[2] > 2.0 * rgb_b[0], rgb_b
    # the sheen lobe is there: without it (same base) the panel is darker overall
    plain, _ = _draw(renderer, item.with_material(m.replace(sheen_color=(0.0, 0.0, 0.0))))
    assert img[..., :3][mask].astype(float).mean() > plain[..., :3][mask].astype(float).mean() + 3


def test_embedded_base_colour_texture_follows_the_uvs(renderer, tmp_path):
    """Image top half red, bottom half blue; UVs put the image's top on the panel's top edge."""
    tex = np.zeros((16, 16, 3), np.uint8)
    tex[:8] = (220, 20, 20)
    tex[8:] = (20, 20, 220)
    src = load_source(write_glb(tmp_path / "tex.glb", base=(1.0, 1.0, 1.0, 1.0), texture=Image.fromarray(tex)))
    item = src.garments[0]
    assert item.material.base_texture is not None and item.uvs is not None
    img, mask = _draw(renderer, item)
    rows = np.nonzero(mask.any(axis=1))[0]
    top = img[rows[0] + 3: rows[0] + (rows[-1] - rows[0]) // 3, :, :3][mask[rows[0] + 3: rows[0] + (rows[-1] - rows[0]) // 3]]
    bottom = img[rows[-1] - (rows[-1] - rows[0]) // 3: rows[-1] - 3, :, :3][mask[rows[-1] - (rows[-1] - rows[0]) // 3: rows[-1] - 3]]
    t, b = top.astype(float).mean(0), bottom.astype(float).mean(0)
    assert t[0] > 2 * t[2] and b[2] > 2 * b[0], (t, b)


def test_metallic_roughness_and_normal_textures_are_read(tmp_path):
    def edit(doc):
        m = doc["materials"][0]
        m["pbrMetallicRoughness"]["metallicRoughnessTexture"] = {"index": 0}
        m["normalTexture"] = {"index": 0, "scale": 0.5}
    tex = Image.fromarray(np.full((4, 4, 3), 128, np.uint8))
    m = read_gltf_material(write_glb(tmp_path / "mr.glb", texture=tex, edit=edit))
    assert m.metallic_roughness_texture is not None and m.normal_map is not None
    assert m.normal_scale == 0.5 and m.normal_y_flip


def test_missing_texture_file_is_a_clear_error(tmp_path):
    def edit(doc):
        doc["images"] = [{"uri": "textures/missing_weave.png"}]
    p = write_glb(tmp_path / "ext.glb", texture=Image.fromarray(np.zeros((4, 4, 3), np.uint8)), edit=edit)
    with pytest.raises(cs.InputError) as e:
        load_source(p)
    msg = str(e.value)
    assert "ext.glb" in msg and "baseColorTexture" in msg and "missing_weave.png" in msg and "not found" in msg, msg


def test_scene_colour_overrides_the_file_only_when_given(tmp_path):
    p = write_glb(tmp_path / "g.glb", base=(0.6, 0.05, 0.04, 1.0))
    n = len(_panel()[0])
    mat, uv = garment_look(GarmentSpec(name="g", mesh=p), "g", None, n)
    assert mat.name == "garment" and mat.base_color[0] > 0.7
    mat, _ = garment_look(GarmentSpec(name="g", mesh=p, color=(0.1, 0.2, 0.5)), "g", None, n)
    assert mat.base_color == pytest.approx((0.1, 0.2, 0.5))


def test_gltf_uv_flips_v():
    assert np.allclose(gltf_uv(np.array([[0.25, 0.0], [0.5, 1.0]])), [[0.25, 1.0], [0.5, 0.0]])


@pytest.mark.parametrize("value, ok", [('"#1f2d4d"', True), ("[0.1, 0.2, 0.3]", True), ('"navy-ish"', False),
                                       ("[0.1, 2.0, 0.3]", False)])
def test_scene_garment_colour_key(tmp_path, value, ok):
    """[[garments]] color: '#rrggbb' or 3 sRGB numbers in [0, 1]; anything else names the key."""
    from clothsim.scene.schema import parse_scene

    body = trimesh.creation.icosphere(subdivisions=2, radius=0.2)
    body.export(tmp_path / "body.obj")
    write_glb(tmp_path / "g.glb")
    p = tmp_path / "scene.toml"
    p.write_text(f'[scene]\nname = "c"\n[avatar]\nfile = "body.obj"\n[[garments]]\nname = "g"\nmesh = "g.glb"\n'
                 f"color = {value}\n")
    if ok:
        assert parse_scene(p).garments[0].color is not None
    else:
        with pytest.raises(cs.InputError) as e:
            parse_scene(p)
        assert "scene.toml" in str(e.value) and "garments[0].color" in str(e.value), str(e.value)
