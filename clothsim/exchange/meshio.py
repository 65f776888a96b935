"""Import garments and avatars modelled in 3D: OBJ, GLB/glTF (trimesh) and USD/USDA/USDC (usd-core).

Every importer returns an :class:`~clothsim.exchange.mesh.ImportedMesh` in metres, Y up, with the
mesh's world (scene-graph) transform applied and UVs kept per triangle corner. Units and up axis:

* OBJ has neither: metres and Y up unless the caller says otherwise (``units=``, ``up=``).
* glTF is metres and Y up by specification; ``units``/``up`` override that for files that break it.
* USD declares both on the stage (``metersPerUnit``, ``upAxis``); ``units``/``up`` override them.

OBJ and glTF loaders split vertices wherever a UV (or normal) changes; the importer welds them back
by exact (bit-identical) position so the physics mesh is connected across UV seams (see mesh.py for
the UV side). Vertices no triangle uses are dropped. Skinned USD meshes come in at their rest points
(UsdSkel is not evaluated); glTF reads TEXCOORD_0 only.
"""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np

from ..errors import InputError
from .mesh import (ImportedMesh, check_finite, drop_unreferenced, meters_per_unit, normalize_up, to_y_up,
                   validate_mesh, weld_by_position)

__all__ = ["SUPPORTED_EXTENSIONS", "import_mesh", "import_cloth"]

_TRIMESH_EXT = (".obj", ".glb", ".gltf")
_USD_EXT = (".usd", ".usda", ".usdc", ".usdz")
SUPPORTED_EXTENSIONS = _TRIMESH_EXT + _USD_EXT


def import_mesh(path: str | os.PathLike, *, units=None, up=None, select: str | None = None) -> ImportedMesh:
    """Read a triangle mesh (all meshes in the file, world transforms applied) in metres, Y up.

    Args:
        path: an ``.obj``, ``.glb``, ``.gltf``, ``.usd``, ``.usda``, ``.usdc`` or ``.usdz`` file.
        units: override the file's length unit: a name ("m", "cm", "mm", "in", "ft") or metres per
            unit (float). Default: what the file declares (OBJ: metres).
        up: override the file's up axis, "Y" or "Z". Default: what the file declares (OBJ: Y).
        select: read only the meshes with this name: a glTF node or mesh name, an OBJ object name,
            a USD prim name or prim path (e.g. the garment of a file that also holds the avatar).
            Default: every mesh, concatenated.

    Returns:
        ImportedMesh with welded ``vertices`` (N, 3) [m], ``triangles`` (M, 3), ``corner_uv``
        (M, 3, 2) or None, and the source units/up axis recorded.

    Raises:
        InputError: missing file, unsupported extension, unreadable file, or a mesh that cannot be
            simulated (empty, NaN, degenerate or non-manifold); the message names the file.
    """
    p = Path(path)
    ext = p.suffix.lower()
    if ext not in SUPPORTED_EXTENSIONS:
        raise InputError(f"{p}: unsupported mesh file extension {p.suffix or '(none)'!r}; "
                         f"expected one of {', '.join(SUPPORTED_EXTENSIONS)}")
    if not p.is_file():
        raise InputError(f"{p}: mesh file not found")
    if ext in _USD_EXT:
        from .usd import read_usd_mesh

        verts, tris, corner_uv, file_mpu, file_up, name = read_usd_mesh(p, select)
    else:
        verts, tris, corner_uv, name = _read_trimesh(p, select)
        file_mpu, file_up = 1.0, "Y"  # glTF by specification; OBJ by our default
    mpu = file_mpu if units is None else meters_per_unit(units, str(p))
    up_axis = file_up if up is None else normalize_up(up, str(p))
    verts = to_y_up(np.asarray(verts, dtype=np.float64) * mpu, up_axis)
    validate_mesh(verts, tris, corner_uv, str(p))
    verts, tris = drop_unreferenced(verts, tris)
    return ImportedMesh(vertices=verts, triangles=tris, corner_uv=corner_uv, name=name, source=str(p),
                        source_units=mpu, source_up=up_axis)


def _read_trimesh(p: Path, select: str | None):
    """OBJ / glTF through trimesh: every geometry node with its world transform, welded by position."""
    import trimesh

    try:
        scene = trimesh.load_scene(str(p), process=False)
    except Exception as e:  # trimesh raises many types for a broken file
        raise InputError(f"{p}: cannot read the mesh file ({type(e).__name__}: {e})") from None
    verts, tris, uvs, names = [], [], [], []
    offset = 0
    any_uv = False
    seen, groups = [], []
    for node in scene.graph.nodes_geometry:
        transform, geom_name = scene.graph[node]
        seen.append(str(node))
        if select is not None and select not in (str(node), str(geom_name)):
            continue
        g = scene.geometry[geom_name]
        if not isinstance(g, trimesh.Trimesh) or len(g.faces) == 0:
            continue  # points and lines are no surface
        v = np.asarray(g.vertices, dtype=np.float64)
        check_finite(v, str(p), offset)
        v = v @ transform[:3, :3].T + transform[:3, 3]
        f = np.asarray(g.faces, dtype=np.int64)
        if np.linalg.det(transform[:3, :3]) < 0:  # a mirroring node flips the winding
            f = f[:, ::-1]
        uv = getattr(g.visual, "uv", None) if g.visual is not None else None
        if uv is not None and len(uv) == len(v):
            uvs.append(np.asarray(uv, dtype=np.float64)[f])
            any_uv = True
        else:
            uvs.append(None)
        verts.append(v)
        tris.append(f + offset)
        names.append(str(geom_name))
        groups.append(_weld_group(scene, p, node, g))
        offset += len(v)
    if select is not None and not verts:
        raise InputError(f"{p}: no mesh named {select!r}; the file has {sorted(seen)}")
    if not verts:
        return np.zeros((0, 3)), np.zeros((0, 3), dtype=np.int64), None, p.stem
    v = np.concatenate(verts)
    t = np.concatenate(tris)
    corner_uv = None
    if any_uv:  # a geometry without UVs gets (0, 0) corners so the layout stays per corner
        corner_uv = np.concatenate([u if u is not None else np.zeros((len(f), 3, 2)) for u, f in zip(uvs, tris)])
    v, t = _weld_groups(v, t, verts, tris, groups)
    name = names[0] if len(names) == 1 else p.stem
    return v, t, corner_uv, name


def _weld_group(scene, p: Path, node, geom) -> str:
    """Which vertices may be welded together: OBJ shares one vertex list across the whole file; in
    glTF the primitives of one mesh (trimesh makes each a child node) form one group, and separate
    meshes (a garment and an avatar, say) are never welded to each other."""
    if p.suffix.lower() == ".obj":
        return ""
    if geom.metadata.get("from_gltf_primitive"):
        return str(scene.graph.transforms.parents.get(node, node))
    return str(node)


def _weld_groups(v, t, verts, tris, groups):
    """Weld by exact position within each group; groups keep their order."""
    out_v, out_t, base = [], [], 0
    for key in dict.fromkeys(groups):
        members = [i for i, g in enumerate(groups) if g == key]
        tri = np.concatenate([tris[i] for i in members])
        vi = np.unique(tri)  # vertices of this group (the groups' ranges are disjoint)
        remap = np.full(len(v), -1, dtype=np.int64)
        remap[vi] = np.arange(len(vi))
        wv, wt, _ = weld_by_position(v[vi], remap[tri])
        out_v.append(wv)
        out_t.append(wt + base)
        base += len(wv)
    # triangles are regrouped: keep the original triangle order across groups
    order = np.concatenate([np.nonzero(np.repeat([g == key for g in groups], [len(x) for x in tris]))[0]
                            for key in dict.fromkeys(groups)])
    t_new = np.empty_like(t)
    t_new[order] = np.concatenate(out_t)
    return np.concatenate(out_v), t_new


def import_cloth(path: str | os.PathLike, *, units=None, up=None, select: str | None = None, rest: str = "shape",
                 fabric="cotton", name: str | None = None, uv_scale: float | None = None):
    """An imported garment (no sewing pattern) as a :class:`clothsim.Cloth`.

    Args:
        path, units, up, select: as :func:`import_mesh`.
        rest: the rest shape. ``"shape"``: the mesh as modelled (each triangle rests as it is in 3D);
            the cloth has the welded vertices. ``"uv"``: the flat UV layout, scaled to metres; the
            cloth then has the *split* vertices of ``import_mesh(path).uv_split()`` (one per distinct
            (vertex, UV) pair, same numbering) and every UV seam is sewn back with
            :meth:`Cloth.add_seam` (copies of one welded vertex joined by zero-length springs).
        fabric: a preset name or :class:`clothsim.Fabric`.
        name: the cloth's label (default: the mesh's name).
        uv_scale: metres per UV unit for ``rest="uv"``; default ``sqrt(A_3d / A_uv)``, so the UV
            layout has the same total area as the 3D surface.

    Raises:
        InputError: the file is bad (see import_mesh), ``rest="uv"`` without UVs, or a UV triangle
            is degenerate; the message names the file.
    """
    from ..cloth import Cloth

    mesh = import_mesh(path, units=units, up=up, select=select)
    label = mesh.name if name is None else str(name)
    if rest == "shape":
        return _cloth_or_error(Cloth.from_mesh, mesh, mesh.vertices, mesh.triangles, None, fabric, label)
    if rest != "uv":
        raise InputError(f"{path}: rest must be 'shape' or 'uv', got {rest!r}")
    split = mesh.uv_split()
    if split is None:
        raise InputError(f"{path}: rest='uv' needs UVs but the file has none; use rest='shape'")
    if uv_scale is None:
        uv_area = mesh.uv_area()
        if not uv_area > 0:
            raise InputError(f"{path}: the UV layout has zero area; cannot use it as the rest shape")
        scale = float(np.sqrt(mesh.area() / uv_area))
    else:
        scale = float(uv_scale)
        if not (scale > 0 and np.isfinite(scale)):
            raise InputError(f"{path}: uv_scale must be a positive number of metres per UV unit, got {uv_scale!r}")
    cloth = _cloth_or_error(Cloth.from_mesh, mesh, mesh.vertices[split.split_to_weld], split.triangles,
                            split.uv * scale, fabric, label)
    a, b = seam_pairs(split.split_to_weld)
    if len(a):
        cloth.add_seam(a, b)
    return cloth


def seam_pairs(split_to_weld: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Pairs (a, b) of split vertices that are copies of one welded vertex: each extra copy b is
    paired with the first copy a of its welded vertex."""
    s = np.asarray(split_to_weld, dtype=np.int64)
    order = np.argsort(s, kind="stable")
    ss = s[order]
    is_first = np.ones(len(ss), dtype=bool)
    is_first[1:] = ss[1:] != ss[:-1]
    group_start = np.maximum.accumulate(np.where(is_first, np.arange(len(ss)), 0))
    return order[group_start[~is_first]], order[~is_first]


def _cloth_or_error(ctor, mesh: ImportedMesh, verts, tris, rest_uv, fabric, label):
    try:
        return ctor(verts, tris, rest_uv=rest_uv, fabric=fabric, name=label)
    except InputError as e:
        raise InputError(f"{mesh.source}: {e}") from None
