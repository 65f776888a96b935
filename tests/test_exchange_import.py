"""Import of garment/avatar meshes: OBJ, GLB and USD round trips, units and up axis, bad input.

Fixtures are generated in the test: an open tube (a sleeve-like garment) whose UV layout has a
seam (u = 0 and u = 1 meet at the same welded vertices), so welding and per-corner UVs are both
exercised.

Tolerances (per coordinate, for values of magnitude <= 1):
* OBJ: we print 9 significant digits, so a float64 value comes back within 5e-9 relative -> 1e-8.
* GLB and USD store float32: one rounding is <= 2**-24 |x| ~ 6e-8 -> 1e-7 for |x| <= 1; glTF UVs
  are also flipped (v -> 1 - v) on export and again on import, in float32: two roundings -> 2e-7.
* centimetre stages: a float32 value in cm times 0.01 keeps the 2**-24 relative bound -> 1e-7.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from clothsim.errors import InputError
from clothsim.exchange import UVSplit, export_glb, export_obj, export_usd, import_cloth, import_mesh
from clothsim.exchange.mesh import from_y_up, to_y_up

OBJ_TOL = 1e-8
F32_TOL = 1e-7
UV_F32_TOL = 2e-7


def tube(n_around=12, n_up=5, radius=0.3, height=1.0):
    """Open cylinder around +Y, welded; per-corner UVs with a seam where u wraps from 1 to 0."""
    a = 2 * math.pi * np.arange(n_around) / n_around
    y = np.linspace(0.5, 0.5 + height, n_up)
    verts = np.array([[radius * math.cos(t), yy, -radius * math.sin(t)] for yy in y for t in a])
    tris, cuv = [], []
    for j in range(n_up - 1):
        for i in range(n_around):
            i1 = (i + 1) % n_around
            v00, v10, v01, v11 = j * n_around + i, j * n_around + i1, (j + 1) * n_around + i, (j + 1) * n_around + i1
            u0, u1 = i / n_around, (i + 1) / n_around  # u1 = 1 at the seam, where vertex i1 has u = 0 elsewhere
            w0, w1 = j / (n_up - 1), (j + 1) / (n_up - 1)
            tris += [(v00, v10, v11), (v00, v11, v01)]
            cuv += [((u0, w0), (u1, w0), (u1, w1)), ((u0, w0), (u1, w1), (u0, w1))]
    return verts, np.array(tris), np.array(cuv, dtype=np.float64)


def area(v, t):
    x = v[t]
    return 0.5 * np.linalg.norm(np.cross(x[:, 1] - x[:, 0], x[:, 2] - x[:, 0]), axis=1).sum()


@pytest.fixture
def garment():
    return tube()


def _check_roundtrip(m, verts, tris, cuv, pos_tol, uv_tol):
    assert m.vertex_count == len(verts), "welded vertex count must survive the file's split at UV seams"
    np.testing.assert_array_equal(m.triangles, tris)
    np.testing.assert_allclose(m.vertices, verts, rtol=0, atol=pos_tol)
    np.testing.assert_allclose(m.corner_uv, cuv, rtol=0, atol=uv_tol)
    # the render mesh: positions from the welded vertices, one UV per render vertex, same corners
    s = m.uv_split()
    assert m.has_uv_seams and m.uv is None
    assert s.vertex_count == len(verts) + 5  # one extra copy of the seam vertex on each of the 5 rings
    np.testing.assert_array_equal(s.split_to_weld[s.triangles], tris)
    np.testing.assert_allclose(s.uv[s.triangles], cuv, rtol=0, atol=uv_tol)


def test_obj_roundtrip_positions_and_uvs(tmp_path, garment):
    verts, tris, cuv = garment
    p = export_obj(tmp_path / "sleeve.obj", verts, tris, uv=cuv)
    m = import_mesh(p)
    _check_roundtrip(m, verts, tris, cuv, OBJ_TOL, OBJ_TOL)
    assert (m.source_units, m.source_up) == (1.0, "Y")


def test_glb_roundtrip_positions_and_uvs(tmp_path, garment):
    verts, tris, cuv = garment
    m = import_mesh(export_glb(tmp_path / "sleeve.glb", verts, tris, uv=cuv))
    _check_roundtrip(m, verts, tris, cuv, F32_TOL, UV_F32_TOL)


@pytest.mark.parametrize("ext", ["usda", "usdc"])
def test_usd_roundtrip_positions_and_uvs_y_up_metres(tmp_path, garment, ext):
    verts, tris, cuv = garment
    m = import_mesh(export_usd(tmp_path / f"sleeve.{ext}", verts, tris, uv=cuv, fps=30))
    _check_roundtrip(m, verts, tris, cuv, F32_TOL, F32_TOL)
    assert (m.source_units, m.source_up) == (1.0, "Y")


def _author_stage(path, points, counts, indices, *, mpu, up, st=None, st_indices=None, interp="faceVarying",
                  uv_name="st", translate=None, orientation=None):
    from pxr import Gf, Sdf, Usd, UsdGeom, Vt

    stage = Usd.Stage.CreateNew(str(path))
    UsdGeom.SetStageMetersPerUnit(stage, mpu)
    UsdGeom.SetStageUpAxis(stage, UsdGeom.Tokens.z if up == "Z" else UsdGeom.Tokens.y)
    xf = UsdGeom.Xform.Define(stage, "/World")
    if translate is not None:
        xf.AddTranslateOp().Set(Gf.Vec3d(*translate))
    mesh = UsdGeom.Mesh.Define(stage, "/World/Cloth")
    mesh.CreatePointsAttr(Vt.Vec3fArray.FromNumpy(np.asarray(points, dtype=np.float32)))
    mesh.CreateFaceVertexCountsAttr(Vt.IntArray(list(map(int, counts))))
    mesh.CreateFaceVertexIndicesAttr(Vt.IntArray(list(map(int, indices))))
    if orientation:
        mesh.CreateOrientationAttr(orientation)
    if st is not None:
        pv = UsdGeom.PrimvarsAPI(mesh).CreatePrimvar(uv_name, Sdf.ValueTypeNames.TexCoord2fArray, interp)
        pv.Set(Vt.Vec2fArray.FromNumpy(np.asarray(st, dtype=np.float32)))
        if st_indices is not None:
            pv.SetIndices(Vt.IntArray(list(map(int, st_indices))))
    stage.GetRootLayer().Save()
    return path


@pytest.mark.parametrize("ext", ["usda", "usdc"])
def test_usd_z_up_centimetre_stage_roundtrip(tmp_path, garment, ext):
    """The same garment authored in a Z-up centimetre stage imports to the same metres/Y-up mesh."""
    verts, tris, cuv = garment
    pts_cm = from_y_up(verts, "Z") * 100.0  # (x, y, z)_Y-up m -> (x, -z, y)_Z-up -> cm
    split = UVSplit.from_corner_uv(tris, cuv)
    p = _author_stage(tmp_path / f"sleeve_cm.{ext}", pts_cm, [3] * len(tris), tris.ravel(), mpu=0.01, up="Z",
                      st=split.uv, st_indices=split.triangles.ravel())
    m = import_mesh(p)
    assert (m.source_units, m.source_up) == (0.01, "Z")
    _check_roundtrip(m, verts, tris, cuv, F32_TOL, F32_TOL)


def test_usd_quads_triangulate_and_known_point_converts(tmp_path):
    """A quad and a pentagon in a Z-up cm stage under a translated Xform: fan triangles, and a known
    point goes (x, y, z)_cm + t -> /100 -> (x, z, -y)."""
    pts = [[0, 0, 0], [100, 0, 0], [100, 100, 0], [0, 100, 0],  # quad, 1 m² in the z = 0 plane
           [200, 0, 0], [300, 0, 0], [350, 50, 0], [300, 100, 0], [200, 100, 0]]  # convex pentagon
    counts = [4, 5]
    indices = [0, 1, 2, 3, 4, 5, 6, 7, 8]
    st = [[0, 0], [1, 0], [1, 1], [0, 1], [0, 0], [1, 0], [1.5, 0.5], [1, 1], [0, 1]]  # vertex-interpolated
    p = _author_stage(tmp_path / "quads.usda", pts, counts, indices, mpu=0.01, up="Z", st=st, interp="vertex",
                      uv_name="UVMap", translate=(10.0, 20.0, 30.0))
    m = import_mesh(p)
    assert m.triangle_count == 2 + 3  # a polygon of n corners fans into n - 2 triangles
    np.testing.assert_array_equal(m.triangles[:2], [[0, 1, 2], [0, 2, 3]])
    # point 2 = (100, 100, 0) cm + (10, 20, 30) cm = (110, 120, 30) cm -> (1.1, 1.2, 0.3) m Z-up -> (1.1, 0.3, -1.2)
    np.testing.assert_allclose(m.vertices[2], [1.1, 0.3, -1.2], rtol=0, atol=F32_TOL)
    # area is kept (1 m² quad + pentagon 1 m² + triangle 0.5*1*0.5 = 0.25 m²), normals now along +Y (was +Z)
    assert area(m.vertices, m.triangles) == pytest.approx(2.25, rel=1e-6)
    x = m.vertices[m.triangles]
    normals = np.cross(x[:, 1] - x[:, 0], x[:, 2] - x[:, 0])
    assert np.all(normals[:, 1] > 0) and np.allclose(normals[:, [0, 2]], 0, atol=1e-9)
    np.testing.assert_allclose(m.uv, st, atol=F32_TOL)  # vertex interpolation: one UV per vertex, no seam


def test_usd_left_handed_orientation_flips_winding(tmp_path):
    pts = [[0, 0, 0], [1, 0, 0], [1, 0, -1], [0, 0, -1]]  # Y-up, y = 0 plane
    # counter-clockwise seen from +Y is 0, 1, 2, 3 with -z "forward"; leftHanded declares the opposite
    right = import_mesh(_author_stage(tmp_path / "r.usda", pts, [4], [0, 1, 2, 3], mpu=1.0, up="Y"))
    left = import_mesh(_author_stage(tmp_path / "l.usda", pts, [4], [0, 1, 2, 3], mpu=1.0, up="Y",
                                     orientation="leftHanded"))
    n = lambda m: np.cross(*(m.vertices[m.triangles[0, 1:]] - m.vertices[m.triangles[0, 0]]))
    assert n(right)[1] > 0 and n(left)[1] < 0


def test_obj_units_and_up_axis_override(tmp_path):
    verts = np.array([[10.0, 20.0, 30.0], [110.0, 20.0, 30.0], [10.0, 120.0, 30.0]])
    p = export_obj(tmp_path / "cm.obj", verts, [[0, 1, 2]])
    m = import_mesh(p, units="cm", up="Z")
    # (10, 20, 30) cm -> (0.1, 0.2, 0.3) m Z-up -> (x, z, -y) = (0.1, 0.3, -0.2) m Y-up
    np.testing.assert_allclose(m.vertices[0], [0.1, 0.3, -0.2], atol=OBJ_TOL)
    np.testing.assert_allclose(import_mesh(p, units=0.0254).vertices, verts * 0.0254, atol=OBJ_TOL)
    np.testing.assert_allclose(to_y_up(from_y_up(verts, "Z"), "Z"), verts, atol=0)
    with pytest.raises(InputError, match="unknown units 'parsec'"):
        import_mesh(p, units="parsec")
    with pytest.raises(InputError, match="up axis must be 'Y' or 'Z'"):
        import_mesh(p, up="X")


def test_glb_node_transform_is_applied(tmp_path):
    import trimesh

    v = np.array([[0.0, 0, 0], [1, 0, 0], [0, 1, 0]])
    scene = trimesh.Scene()
    tf = trimesh.transformations.translation_matrix([0.5, 1.0, -2.0])
    scene.add_geometry(trimesh.Trimesh(v, [[0, 1, 2]], process=False), node_name="shirt", transform=tf)
    p = tmp_path / "moved.glb"
    p.write_bytes(trimesh.exchange.gltf.export_glb(scene))
    m = import_mesh(p)
    np.testing.assert_allclose(m.vertices, v + [0.5, 1.0, -2.0], atol=F32_TOL)
    assert m.corner_uv is None and m.uv_split() is None


# ---------------------------------------------------------------------------- import_cloth

def test_import_cloth_shape_and_uv_rest(tmp_path, garment):
    verts, tris, cuv = garment
    p = export_obj(tmp_path / "sleeve.obj", verts, tris, uv=cuv)
    shaped = import_cloth(p)
    assert shaped.rest_uv is None and shaped.vertex_count == len(verts) and len(shaped.seams) == 0
    np.testing.assert_allclose(shaped.vertices, verts, atol=OBJ_TOL)

    c = import_cloth(p, rest="uv", fabric="denim")
    s = import_mesh(p).uv_split()
    assert c.vertex_count == s.vertex_count and c.fabric.name == "denim"
    # the UV seam is sewn: one zero-length seam per extra copy, joining copies of one welded vertex
    assert len(c.seams) == s.vertex_count - len(verts) == 5
    np.testing.assert_array_equal(s.split_to_weld[c.seams[:, 0]], s.split_to_weld[c.seams[:, 1]])
    np.testing.assert_allclose(c.vertices[c.seams[:, 0]], c.vertices[c.seams[:, 1]], atol=0)
    # the UV layout is scaled so its area equals the 3D area (sqrt(A3d / Auv) metres per UV unit)
    q = c.rest_uv[c.triangles]
    e1, e2 = q[:, 1] - q[:, 0], q[:, 2] - q[:, 0]
    uv_area = 0.5 * np.abs(e1[:, 0] * e2[:, 1] - e1[:, 1] * e2[:, 0]).sum()
    assert uv_area == pytest.approx(area(verts, tris), rel=1e-9)
    # the tube's UV map is a uniform stretch of the unrolled 3D surface: the circumference
    # 2 n r sin(pi/n) (polygon) maps to u in [0, 1], the height 1 m to v in [0, 1]; the area scale
    # makes rest edge lengths match 3D ones to within that anisotropy; here it is a constant
    # per-direction factor, so check the factor exactly
    circ = 2 * 12 * 0.3 * math.sin(math.pi / 12)
    k = math.sqrt(circ * 1.0)  # sqrt(A3d / Auv) with Auv = 1
    np.testing.assert_allclose(np.ptp(c.rest_uv, axis=0), [k, k], rtol=1e-9)

    c2 = import_cloth(p, rest="uv", uv_scale=2.0)
    np.testing.assert_allclose(np.ptp(c2.rest_uv, axis=0), [2.0, 2.0], rtol=1e-9)


def test_import_cloth_uv_rest_matches_flat_shape(tmp_path):
    """A flat panel whose UVs are its own layout scaled to [0, 1]: the UV rest shape recovers the
    3D edge lengths (same shape, area-matched), up to OBJ's 9 printed digits."""
    import clothsim as cs

    g = cs.Cloth.grid(size=(0.6, 0.4), resolution=(7, 5))
    uv01 = (g.rest_uv - g.rest_uv.min(0)) / 0.6  # uniform scale of the true layout
    c = import_cloth(export_obj(tmp_path / "panel.obj", g.vertices, g.triangles, uv=uv01), rest="uv")
    e = np.concatenate([c.triangles[:, [0, 1]], c.triangles[:, [1, 2]]])
    np.testing.assert_allclose(np.linalg.norm(c.rest_uv[e[:, 0]] - c.rest_uv[e[:, 1]], axis=1),
                               np.linalg.norm(c.vertices[e[:, 0]] - c.vertices[e[:, 1]], axis=1), rtol=1e-7)


# ---------------------------------------------------------------------------- bad input

def _write(path, text):
    path.write_text(text)
    return path


def test_bad_input_errors_name_the_file(tmp_path, garment):
    cases = {
        "empty.obj": ("# nothing here\n", "the mesh is empty"),
        "nonmanifold.obj": ("v 0 0 0\nv 1 0 0\nv 0 1 0\nv 0 -1 0\nv 0 0 1\nf 1 2 3\nf 2 1 4\nf 1 2 5\n",
                            r"edge \[0, 1\] is shared by 3 triangles \(non-manifold\)"),
        "nan.obj": ("v 0 0 0\nv 1 nan 0\nv 0 1 0\nf 1 2 3\n", "vertex 1 has a non-finite coordinate y"),
        "degenerate.obj": ("v 0 0 0\nv 1 0 0\nv 2 0 0\nv 0 1 0\nf 1 2 3\nf 1 2 4\n", "triangle 0 .* is degenerate"),
    }
    for name, (text, msg) in cases.items():
        p = _write(tmp_path / name, text)
        with pytest.raises(InputError, match=msg) as e:
            import_mesh(p)
        assert str(p) in str(e.value)
    with pytest.raises(InputError, match="mesh file not found"):
        import_mesh(tmp_path / "missing.glb")
    with pytest.raises(InputError, match=r"unsupported mesh file extension '\.fbx'"):
        import_mesh(_write(tmp_path / "avatar.fbx", "x"))
    with pytest.raises(InputError, match="cannot read the mesh file"):
        import_mesh(_write(tmp_path / "broken.glb", "not a glb"))
    with pytest.raises(InputError, match="cannot open the USD stage"):
        import_mesh(_write(tmp_path / "broken.usda", "#usda 1.0\n(((\n"))
    # a USD stage without any mesh is an empty mesh
    from pxr import Usd, UsdGeom

    st = Usd.Stage.CreateNew(str(tmp_path / "nomesh.usda"))
    UsdGeom.Xform.Define(st, "/World")
    st.GetRootLayer().Save()
    with pytest.raises(InputError, match="nomesh.usda: the mesh is empty"):
        import_mesh(tmp_path / "nomesh.usda")
    # a NaN UV, and rest='uv' without UVs
    verts, tris, cuv = garment
    bad_uv = cuv.copy()
    bad_uv[3, 1, 0] = np.nan
    with pytest.raises(InputError, match="triangle 3 has a non-finite UV"):
        import_mesh(export_usd(tmp_path / "nanuv.usda", verts, tris, uv=bad_uv))
    with pytest.raises(InputError, match="rest='uv' needs UVs but the file has none"):
        import_cloth(export_obj(tmp_path / "nouv.obj", verts, tris), rest="uv")
    with pytest.raises(InputError, match="rest must be 'shape' or 'uv'"):
        import_cloth(tmp_path / "nouv.obj", rest="pattern")


def test_usd_instances_inherit_transform_and_inactive_prims_skipped(tmp_path):
    """An instanceable Xform inheriting a class mesh is imported through its instance proxy with the
    instance's translation; the class itself and an inactive prim's mesh are not."""
    tri = """
        int[] faceVertexCounts = [3]
        int[] faceVertexIndices = [0, 1, 2]
        point3f[] points = [(0, 0, 0), (1, 0, 0), (0, 1, 0)]"""
    p = _write(tmp_path / "instanced.usda", f"""#usda 1.0
(
    metersPerUnit = 1
    upAxis = "Y"
)
class "Proto"
{{
    def Mesh "Tri"
    {{{tri}
    }}
}}
def Xform "A" (instanceable = true
    inherits = </Proto>)
{{
    double3 xformOp:translate = (5, 0, 0)
    uniform token[] xformOpOrder = ["xformOp:translate"]
}}
def Xform "B" (active = false)
{{
    def Mesh "Hidden"
    {{{tri}
    }}
}}
""")
    m = import_mesh(p)
    np.testing.assert_array_equal(m.vertices, [[5, 0, 0], [6, 0, 0], [5, 1, 0]])


def test_unreferenced_vertices_are_dropped(tmp_path):
    p = _write(tmp_path / "stray.obj", "v 9 9 9\nv 0 0 0\nv 1 0 0\nv 0 1 0\nf 2 3 4\n")
    m = import_mesh(p)
    np.testing.assert_array_equal(m.vertices, [[0, 0, 0], [1, 0, 0], [0, 1, 0]])
    np.testing.assert_array_equal(m.triangles, [[0, 1, 2]])


def test_weld_scope_obj_file_vs_gltf_mesh(tmp_path):
    """Two triangles sharing an edge, as two objects: OBJ shares one vertex list, so the coincident
    corners weld (4 vertices); in glTF they are two meshes (say garment and avatar) and stay apart (6)."""
    import trimesh

    a = np.array([[0.0, 0, 0], [1, 0, 0], [0, 1, 0]])
    b = np.array([[1.0, 0, 0], [1, 1, 0], [0, 1, 0]])
    scene = trimesh.Scene()
    scene.add_geometry(trimesh.Trimesh(a, [[0, 1, 2]], process=False), node_name="garment")
    scene.add_geometry(trimesh.Trimesh(b, [[0, 1, 2]], process=False), node_name="avatar")
    glb = tmp_path / "two.glb"
    glb.write_bytes(trimesh.exchange.gltf.export_glb(scene))
    assert import_mesh(glb).vertex_count == 6
    obj = _write(tmp_path / "two.obj",
                 "o a\nv 0 0 0\nv 1 0 0\nv 0 1 0\nf 1 2 3\no b\nv 1 0 0\nv 1 1 0\nv 0 1 0\nf 4 5 6\n")
    m = import_mesh(obj)
    assert m.vertex_count == 4 and m.triangle_count == 2
    x = m.vertices[m.triangles]
    assert np.all(np.cross(x[:, 1] - x[:, 0], x[:, 2] - x[:, 0])[:, 2] > 0)  # winding kept
