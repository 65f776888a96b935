"""Export of draped garments: USD time samples read back with pxr, OBJ/GLB content, atomic writes,
per-frame sequences, and an end-to-end import -> simulate -> frame cache -> USD run.

Tolerances: USD and GLB store float32, so a value x comes back within 2**-24 |x| (one rounding);
for |x| <= 2 m that is <= 1.2e-7 m -> we allow 2e-7. OBJ prints 9 significant digits (relative
5e-9) -> 1e-8 for |x| <= 2. Normals: unit vectors in float32 (USD) -> 1e-6 covers float32 rounding
of the normalisation too; OBJ prints normals with 7 digits -> 1e-6.
"""

from __future__ import annotations

import json
import math
import struct

import numpy as np
import pytest

from clothsim.errors import InputError
from clothsim.exchange import (FrameCache, UVSplit, export_frames, export_glb, export_obj, export_usd, import_cloth,
                               import_mesh)
from clothsim.io import vertex_normals

from test_exchange_import import tube

F32_TOL = 2e-7
OBJ_TOL = 1e-8


def wave_frames(verts, count=5):
    """Deterministic animated frames: the garment swaying and rippling, (F, N, 3)."""
    t = np.arange(count)[:, None, None]
    x = verts[None].repeat(count, axis=0).copy()
    x[..., 0] += 0.05 * np.sin(0.7 * t[..., 0] + 3.0 * verts[None, :, 1])
    x[..., 2] += 0.02 * t[..., 0]
    return x


@pytest.mark.parametrize("ext", ["usda", "usdc"])
def test_usd_time_samples_read_back_equal_frames(tmp_path, ext):
    from pxr import Usd, UsdGeom

    verts, tris, cuv = tube()
    frames = wave_frames(verts, 6)
    av_v = np.array([[0.0, 0.0, 0.0], [0.2, 0.0, 0.0], [0.0, 0.2, 0.0], [0.0, 0.0, 0.2]])
    av_t = np.array([[0, 2, 1], [0, 1, 3], [0, 3, 2], [1, 2, 3]])
    p = export_usd(tmp_path / f"drape.{ext}", frames, tris, fps=30, uv=cuv, avatar=(av_v, av_t), start_frame=10)
    assert sorted(x.name for x in tmp_path.iterdir()) == [f"drape.{ext}"]  # no temporary left behind
    if ext == "usda":
        assert p.read_text().startswith("#usda")
    else:
        assert p.read_bytes()[:8] == b"PXR-USDC"

    stage = Usd.Stage.Open(str(p))
    assert stage.GetTimeCodesPerSecond() == 30 and stage.GetFramesPerSecond() == 30
    assert UsdGeom.GetStageMetersPerUnit(stage) == 1.0 and UsdGeom.GetStageUpAxis(stage) == UsdGeom.Tokens.y
    assert (stage.GetStartTimeCode(), stage.GetEndTimeCode()) == (10, 15)
    mesh = UsdGeom.Mesh(stage.GetPrimAtPath("/Root/Garment"))
    assert mesh.GetSubdivisionSchemeAttr().Get() == UsdGeom.Tokens.none
    np.testing.assert_array_equal(np.asarray(mesh.GetFaceVertexIndicesAttr().Get()).reshape(-1, 3), tris)
    pts = mesh.GetPointsAttr()
    assert pts.GetTimeSamples() == [10.0 + k for k in range(6)]
    for k in range(6):
        np.testing.assert_allclose(np.asarray(pts.Get(10 + k)), frames[k], rtol=0, atol=F32_TOL)
        np.testing.assert_allclose(np.asarray(mesh.GetNormalsAttr().Get(10 + k)),
                                   vertex_normals(frames[k], tris), atol=1e-6)
        ext_k = np.asarray(mesh.GetExtentAttr().Get(10 + k))
        np.testing.assert_allclose(ext_k, [frames[k].min(0), frames[k].max(0)], atol=F32_TOL)
    # between samples USD interpolates linearly: the half time code is the mean of two frames
    np.testing.assert_allclose(np.asarray(pts.Get(12.5)), 0.5 * (frames[2] + frames[3]), atol=F32_TOL)
    st = UsdGeom.PrimvarsAPI(mesh).GetPrimvar("st")
    assert st.GetInterpolation() == UsdGeom.Tokens.faceVarying and st.IsIndexed()
    np.testing.assert_allclose(np.asarray(st.ComputeFlattened()).reshape(-1, 3, 2), cuv, atol=1e-7)
    avatar = UsdGeom.Mesh(stage.GetPrimAtPath("/Root/Avatar"))
    np.testing.assert_allclose(np.asarray(avatar.GetPointsAttr().Get()), av_v, atol=F32_TOL)
    assert avatar.GetPointsAttr().GetNumTimeSamples() == 0  # a static avatar is a default value


def test_obj_has_uvs_and_unit_normals(tmp_path):
    verts, tris, cuv = tube()
    x = wave_frames(verts, 3)[-1]
    p = export_obj(tmp_path / "last.obj", x, tris, uv=cuv)
    lines = p.read_text().splitlines()
    vn = np.array([[float(a) for a in ln.split()[1:]] for ln in lines if ln.startswith("vn ")])
    assert len(vn) == len(verts)
    np.testing.assert_allclose(vn, vertex_normals(x, tris), atol=1e-6)
    faces = [ln for ln in lines if ln.startswith("f ")]
    assert len(faces) == len(tris) and all(len(c.split("/")) == 3 for c in faces[0].split()[1:])
    m = import_mesh(p)
    np.testing.assert_allclose(m.vertices, x, atol=OBJ_TOL)
    np.testing.assert_allclose(m.corner_uv, cuv, atol=OBJ_TOL)


def test_glb_has_normals_uvs_and_avatar_node(tmp_path):
    import trimesh

    verts, tris, cuv = tube()
    x = wave_frames(verts, 3)[-1]
    p = export_glb(tmp_path / "last.glb", x, tris, uv=cuv, avatar=(np.eye(3), np.array([[0, 1, 2]])))
    data = p.read_bytes()
    n = struct.unpack("<I", data[12:16])[0]
    gltf = json.loads(data[20:20 + n])
    attrs = [prim["attributes"] for mesh in gltf["meshes"] for prim in mesh["primitives"]]
    assert all("NORMAL" in a for a in attrs) and "TEXCOORD_0" in attrs[0]
    assert sorted(nd["name"] for nd in gltf["nodes"] if "mesh" in nd) == ["avatar", "garment"]
    scene = trimesh.load_scene(str(p), process=False)
    g = scene.geometry["garment"]
    # the glTF mesh is split at the UV seam: 5 more vertices than the welded tube; the stored normals
    # are the welded mesh's (so the seam is not shaded as a crease), float32 -> 1e-6
    split = UVSplit.from_corner_uv(tris, cuv)  # the split export_glb writes
    assert len(g.vertices) == len(verts) + 5
    normals = np.asarray(gltf_accessor(data, gltf, gltf["meshes"][0]["primitives"][0]["attributes"]["NORMAL"]))
    np.testing.assert_allclose(normals, vertex_normals(x, tris)[split.split_to_weld], atol=1e-6)


def gltf_accessor(glb: bytes, gltf: dict, index: int) -> np.ndarray:
    """Read a float VEC3 accessor straight from the GLB binary chunk (independent of trimesh)."""
    acc = gltf["accessors"][index]
    view = gltf["bufferViews"][acc["bufferView"]]
    json_len = struct.unpack("<I", glb[12:16])[0]
    bin_start = 20 + json_len + 8
    start = bin_start + view.get("byteOffset", 0) + acc.get("byteOffset", 0)
    assert acc["componentType"] == 5126 and acc["type"] == "VEC3"  # float32 xyz
    return np.frombuffer(glb[start:start + 12 * acc["count"]], dtype="<f4").reshape(-1, 3)


def test_export_frames_sequence(tmp_path):
    verts, tris, cuv = tube(8, 3)
    frames = wave_frames(verts, 4)
    for fmt, tol in (("obj", OBJ_TOL), ("glb", F32_TOL)):
        paths = export_frames(tmp_path / fmt, frames, tris, fmt=fmt, uv=cuv, name="skirt")
        assert [q.name for q in paths] == [f"skirt_{k:04d}.{fmt}" for k in range(4)]
        for k, q in enumerate(paths):
            np.testing.assert_allclose(import_mesh(q).vertices, frames[k], atol=tol)
    with pytest.raises(InputError, match="fmt must be 'obj' or 'glb'"):
        export_frames(tmp_path, frames, tris, fmt="fbx")


def test_failed_export_leaves_old_file(tmp_path):
    verts, tris, _ = tube(8, 3)
    for writer, name in ((export_obj, "a.obj"), (export_glb, "a.glb")):
        p = writer(tmp_path / name, verts, tris)
        before = p.read_bytes()
        bad = verts.copy()
        bad[2, 1] = np.inf
        with pytest.raises(InputError, match="non-finite"):
            writer(p, bad, tris)
        with pytest.raises(InputError, match=r"expected UVs of shape \(24, 2\)"):
            writer(p, verts, tris, uv=np.zeros((3, 2)))
        assert p.read_bytes() == before
    p = export_usd(tmp_path / "a.usda", verts, tris)
    before = p.read_bytes()
    with pytest.raises(InputError, match="frames must have shape"):
        export_usd(p, np.zeros((2, 3, 4)), tris)
    with pytest.raises(InputError, match=r"\.usda, \.usdc or \.usd"):
        export_usd(tmp_path / "a.abc", verts, tris)
    with pytest.raises(InputError, match="fps must be a positive number"):
        export_usd(p, verts, tris, fps=0)
    assert p.read_bytes() == before
    assert sorted(x.name for x in tmp_path.iterdir()) == ["a.glb", "a.obj", "a.usda"]


def test_import_simulate_cache_export_end_to_end(tmp_path, device):
    """An imported sleeve (UV rest shape, seam sewn) hangs from its top ring for a few frames; the
    frames go through the frame cache into a USD file, and pxr reads them back within the cache's
    stated bound plus float32 rounding."""
    import clothsim as cs

    verts, tris, cuv = tube(10, 4, radius=0.1, height=0.3)
    cloth = import_cloth(export_obj(tmp_path / "sleeve.obj", verts, tris, uv=cuv), rest="uv")
    top = np.nonzero(cloth.vertices[:, 1] > cloth.vertices[:, 1].max() - 1e-9)[0]
    cloth.pin(top)
    sim = cs.Simulator(cloth, device=device, substeps=4, iterations=4)
    meta = {"garment": "sleeve.obj", "rest": "uv", "substeps": 4, "iterations": 4}
    truth = []
    with FrameCache(tmp_path / "cache", "w", topology=cloth.triangles, metadata=meta, fps=60) as cache:
        for _ in range(4):
            sim.step()
            truth.append(sim.positions())
            cache.append(truth[-1])
    truth = np.stack(truth)
    assert np.all(np.isfinite(truth)) and truth[-1][:, 1].min() < verts[:, 1].min()  # it sagged under gravity
    # pinned vertices stay exactly put
    np.testing.assert_array_equal(truth[-1][top], cloth.vertices[top].astype(np.float32))

    cache = FrameCache(tmp_path / "cache", "r", metadata=meta)
    split = import_mesh(tmp_path / "sleeve.obj").uv_split()  # cloth vertex k is render vertex k
    p = export_usd(tmp_path / "sleeve.usdc", cache, cache.triangles, fps=cache.fps, uv=split.uv)
    from pxr import Usd, UsdGeom

    stage = Usd.Stage.Open(str(p))  # keep the stage alive while its prims are used
    pts = UsdGeom.Mesh(stage.GetPrimAtPath("/Root/Garment")).GetPointsAttr()
    bound = cache.error_bound + 2 * 2.0**-24 * float(np.abs(truth).max())  # cache float32 + USD float32
    for k in range(4):
        assert np.abs(np.asarray(pts.Get(k)) - truth[k]).max() <= bound
    assert math.isclose(stage.GetTimeCodesPerSecond(), 60.0)


@pytest.mark.parametrize("ext", ["glb", "usda"])
def test_select_garment_or_avatar_from_one_file(tmp_path, ext):
    verts, tris, cuv = tube(8, 3)
    av_v = np.array([[0.0, 0.0, 0.0], [0.2, 0.0, 0.0], [0.0, 0.2, 0.0], [0.0, 0.0, 0.2]])
    av_t = np.array([[0, 2, 1], [0, 1, 3], [0, 3, 2], [1, 2, 3]])
    if ext == "glb":
        p = export_glb(tmp_path / "both.glb", verts, tris, uv=cuv, avatar=(av_v, av_t))
        garment, avatar = "garment", "avatar"
    else:
        p = export_usd(tmp_path / "both.usda", verts, tris, uv=cuv, avatar=(av_v, av_t))
        garment, avatar = "/Root/Garment", "Avatar"
    both = import_mesh(p)
    assert both.vertex_count == len(verts) + len(av_v)
    g = import_mesh(p, select=garment)
    np.testing.assert_allclose(g.vertices, verts, atol=F32_TOL)
    np.testing.assert_array_equal(g.triangles, tris)
    a = import_mesh(p, select=avatar)
    np.testing.assert_allclose(a.vertices, av_v, atol=F32_TOL)
    np.testing.assert_array_equal(a.triangles, av_t)
    with pytest.raises(InputError, match="no mesh .*named 'shirt'"):
        import_mesh(p, select="shirt")
