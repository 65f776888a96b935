"""USD import and export (usd-core / pxr).

Import (:func:`read_usd_mesh`, used by :func:`clothsim.exchange.import_mesh`): every ``UsdGeom.Mesh``
on the stage at its earliest time sample, with its local-to-world transform applied, polygons fan
triangulated from ``faceVertexCounts`` (holes dropped, ``leftHanded`` orientation and mirroring
transforms flipped to counter-clockwise), UVs from the primvar ``st`` (else ``UVMap``, else the first
``texCoord2f[]`` primvar) with ``vertex``/``varying``/``faceVarying``/``uniform``/``constant``
interpolation and indices resolved. USD's points array is already welded, so the topology is kept.
Units: ``metersPerUnit`` of the stage (USD's fallback when unauthored is 0.01, centimetres);
up axis: the stage's ``upAxis`` (fallback Y).

Export (:func:`export_usd`): an animated garment as a ``UsdGeom.Mesh`` with time-sampled points,
normals and extent, one time code per frame, ``timeCodesPerSecond = framesPerSecond = fps``,
``metersPerUnit = 1``, ``upAxis = Y``, UVs as the primvar ``st`` (faceVarying, indexed), and
optionally the avatar as a second mesh. ``.usda`` is text, ``.usdc``/``.usd`` binary crate.
"""

from __future__ import annotations

import os
import uuid
from pathlib import Path

import numpy as np

from ..errors import InputError
from ..io import vertex_normals
from .export import _mesh, uv_layout
from .mesh import check_finite

__all__ = ["read_usd_mesh", "export_usd"]

_UV_NAMES = ("st", "UVMap")


def _open_stage(p: Path):
    from pxr import Tf, Usd

    try:
        stage = Usd.Stage.Open(str(p))
    except Tf.ErrorException as e:
        raise InputError(f"{p}: cannot open the USD stage ({str(e).strip().splitlines()[-1]})") from None
    if stage is None:
        raise InputError(f"{p}: cannot open the USD stage")
    return stage


def _find_uv_primvar(prim):
    from pxr import Sdf, UsdGeom

    api = UsdGeom.PrimvarsAPI(prim)
    for nm in _UV_NAMES:
        pv = api.GetPrimvar(nm)
        if pv and pv.HasValue():
            return pv
    for pv in api.GetPrimvarsWithValues():
        if pv.GetTypeName() in (Sdf.ValueTypeNames.TexCoord2fArray, Sdf.ValueTypeNames.TexCoord2dArray,
                                Sdf.ValueTypeNames.Float2Array):
            return pv
    return None


def read_usd_mesh(p: Path, select: str | None = None):
    """All meshes of the USD file ``p`` in stage units and stage up axis, world transforms applied.

    ``select``: only meshes whose prim name or path equals it. Returns (vertices (N, 3) float64,
    triangles (M, 3) int64, corner_uv (M, 3, 2) or None, metersPerUnit, up axis "Y" or "Z", name).
    """
    from pxr import Usd, UsdGeom

    stage = _open_stage(p)
    mpu = float(UsdGeom.GetStageMetersPerUnit(stage))
    up = str(UsdGeom.GetStageUpAxis(stage)).upper()
    time = Usd.TimeCode.EarliestTime()
    cache = UsdGeom.XformCache(time)
    verts, tris, uvs, names, seen = [], [], [], [], []
    offset = 0
    for prim in Usd.PrimRange.Stage(stage, Usd.TraverseInstanceProxies()):
        if not prim.IsA(UsdGeom.Mesh):
            continue
        seen.append(str(prim.GetPath()))
        if select is not None and select not in (prim.GetName(), str(prim.GetPath())):
            continue
        where = f"{p} (prim {prim.GetPath()})"
        mesh = UsdGeom.Mesh(prim)
        pts = mesh.GetPointsAttr().Get(time)
        counts = mesh.GetFaceVertexCountsAttr().Get(time)
        indices = mesh.GetFaceVertexIndicesAttr().Get(time)
        if pts is None or counts is None or indices is None or len(pts) == 0 or len(counts) == 0:
            continue
        v = np.asarray(pts, dtype=np.float64).reshape(-1, 3)
        counts = np.asarray(counts, dtype=np.int64)
        indices = np.asarray(indices, dtype=np.int64)
        if counts.sum() != len(indices):
            raise InputError(f"{where}: faceVertexCounts sum to {counts.sum()} but there are {len(indices)} "
                             "faceVertexIndices")
        if (counts < 3).any():
            f = int(np.nonzero(counts < 3)[0][0])
            raise InputError(f"{where}: face {f} has {counts[f]} vertices; expected at least 3")
        if indices.size and (indices.min() < 0 or indices.max() >= len(v)):
            raise InputError(f"{where}: faceVertexIndices span [{indices.min()}, {indices.max()}] but there are "
                             f"{len(v)} points")
        ctri, face = fan_triangulate(counts)  # corner indices (T, 3), face of each triangle
        holes = mesh.GetHoleIndicesAttr().Get(time)
        if holes is not None and len(holes):
            keep = ~np.isin(face, np.asarray(holes, dtype=np.int64))
            ctri, face = ctri[keep], face[keep]
        flip = mesh.GetOrientationAttr().Get(time) == UsdGeom.Tokens.leftHanded
        check_finite(v, where)
        m = np.asarray(cache.GetLocalToWorldTransform(prim), dtype=np.float64)  # row-vector convention
        v = v @ m[:3, :3] + m[3, :3]
        if np.linalg.det(m[:3, :3]) < 0:
            flip = not flip
        if flip:
            ctri = ctri[:, ::-1]
        corner_uv = None
        pv = _find_uv_primvar(prim)
        if pv is not None:
            corner_uv = _corner_values(pv, time, ctri, face, indices, len(v), len(counts), where)
        verts.append(v)
        tris.append(indices[ctri] + offset)
        uvs.append(corner_uv)
        names.append(prim.GetName())
        offset += len(v)
    if select is not None and not verts:
        raise InputError(f"{p}: no mesh prim named {select!r}; the stage has {seen}")
    if not verts:
        return np.zeros((0, 3)), np.zeros((0, 3), dtype=np.int64), None, mpu, up, p.stem
    corner_uv = None
    if any(u is not None for u in uvs):
        corner_uv = np.concatenate([u if u is not None else np.zeros((len(t), 3, 2)) for u, t in zip(uvs, tris)])
    name = names[0] if len(names) == 1 else p.stem
    return np.concatenate(verts), np.concatenate(tris), corner_uv, mpu, up, name


def fan_triangulate(counts: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Fan triangles of polygons with ``counts`` (F,) corners, as face-corner indices.

    Face f owns corners ``start[f] .. start[f] + counts[f] - 1``; it becomes triangles
    (start, start+k+1, start+k+2) for k = 0 .. counts[f]-3 (exact for convex polygons).
    Returns (T, 3) corner indices and (T,) the face each triangle came from.
    """
    counts = np.asarray(counts, dtype=np.int64)
    start = np.concatenate([[0], np.cumsum(counts)[:-1]])
    face = np.repeat(np.arange(len(counts)), counts - 2)
    first_tri = np.concatenate([[0], np.cumsum(counts - 2)[:-1]])
    k = np.arange(len(face)) - first_tri[face]
    s = start[face]
    return np.stack([s, s + k + 1, s + k + 2], axis=1), face


def _corner_values(pv, time, ctri, face, indices, n_points, n_faces, where):
    """Per-triangle-corner values (T, 3, 2) of a 2D primvar of any interpolation."""
    vals = pv.ComputeFlattened(time)
    if vals is None:
        return None
    a = np.asarray(vals, dtype=np.float64).reshape(-1, 2)
    interp = pv.GetInterpolation()
    expected = {"faceVarying": len(indices), "vertex": n_points, "varying": n_points, "uniform": n_faces,
                "constant": 1}
    if interp not in expected:
        raise InputError(f"{where}: primvar {pv.GetPrimvarName()} has unknown interpolation {interp!r}")
    if len(a) != expected[interp]:
        raise InputError(f"{where}: primvar {pv.GetPrimvarName()} ({interp}) has {len(a)} values; "
                         f"expected {expected[interp]}")
    if interp == "faceVarying":
        return a[ctri]
    if interp in ("vertex", "varying"):
        return a[indices[ctri]]
    if interp == "uniform":
        return np.repeat(a[face][:, None, :], 3, axis=1)
    return np.broadcast_to(a[0], (len(ctri), 3, 2)).copy()


class _Frames:
    """Frames to write: a (F, N, 3) array or a FrameCache (read one frame at a time)."""

    def __init__(self, frames, where: str):
        self.where = where
        if hasattr(frames, "frame") and hasattr(frames, "vertex_count"):  # a FrameCache: stream it
            self.cache, self.array = frames, None
            self.count = len(frames)
            if self.count == 0:
                raise InputError(f"{where}: the frame cache {frames.path} holds no frames")
            self.first = frames.frame(0)
            return
        f = np.asarray(frames, dtype=np.float64)
        if f.ndim == 2:
            f = f[None]
        if f.ndim != 3 or f.shape[2] != 3 or len(f) == 0:
            raise InputError(f"{where}: frames must have shape (F, N, 3) or (N, 3) with F > 0, got {f.shape}")
        if not np.all(np.isfinite(f)):
            k = int(np.argwhere(~np.isfinite(f))[0][0])
            raise InputError(f"{where}: frame {k} has non-finite positions")
        self.cache, self.array, self.count, self.first = None, f, len(f), f[0]

    def __len__(self) -> int:
        return self.count

    def __iter__(self):
        if self.array is not None:
            yield from self.array
        else:
            for k in range(self.count):
                yield self.cache.frame(k)


def _write_mesh_prim(stage, prim_path, frames, t, split, normals, start):
    from pxr import Gf, Sdf, Usd, UsdGeom, Vt

    mesh = UsdGeom.Mesh.Define(stage, prim_path)
    mesh.CreateSubdivisionSchemeAttr(UsdGeom.Tokens.none)  # a cloth mesh is the surface, not a cage
    mesh.CreateOrientationAttr(UsdGeom.Tokens.rightHanded)
    mesh.CreateFaceVertexCountsAttr(Vt.IntArray.FromNumpy(np.full(len(t), 3, dtype=np.int32)))
    mesh.CreateFaceVertexIndicesAttr(Vt.IntArray.FromNumpy(t.reshape(-1).astype(np.int32)))
    pts_attr = mesh.CreatePointsAttr()
    ext_attr = mesh.CreateExtentAttr()
    n_attr = None
    if normals:
        n_attr = mesh.CreateNormalsAttr()
        mesh.SetNormalsInterpolation(UsdGeom.Tokens.vertex)
    animated = len(frames) > 1
    for k, x in enumerate(frames):
        tc = Usd.TimeCode(start + k) if animated else Usd.TimeCode.Default()
        x32 = np.ascontiguousarray(x, dtype=np.float32)
        pts_attr.Set(Vt.Vec3fArray.FromNumpy(x32), tc)
        lo, hi = x32.min(axis=0), x32.max(axis=0)
        ext_attr.Set(Vt.Vec3fArray([Gf.Vec3f(*map(float, lo)), Gf.Vec3f(*map(float, hi))]), tc)
        if n_attr is not None:
            n_attr.Set(Vt.Vec3fArray.FromNumpy(vertex_normals(x32, t)), tc)
    if split is not None:
        pv = UsdGeom.PrimvarsAPI(mesh).CreatePrimvar("st", Sdf.ValueTypeNames.TexCoord2fArray,
                                                       UsdGeom.Tokens.faceVarying)
        pv.Set(Vt.Vec2fArray.FromNumpy(np.ascontiguousarray(split.uv, dtype=np.float32)))
        pv.SetIndices(Vt.IntArray.FromNumpy(split.triangles.reshape(-1).astype(np.int32)))
    return mesh


def export_usd(path: str | os.PathLike, frames, triangles, *, fps: float = 24.0, uv=None, normals: bool = True,
               name: str = "Garment", avatar=None, start_frame: int = 0) -> Path:
    """Write an animated garment (and optionally the avatar) as a USD stage, atomically.

    Args:
        path: ``.usda`` (text), ``.usdc`` or ``.usd`` (binary crate).
        frames: (F, N, 3) positions [m] per frame, one (N, 3) frame, or a FrameCache. Frame k is the
            time sample at time code ``start_frame + k`` (one frame writes default values instead).
        triangles: (M, 3) vertex indices.
        fps: frames per second; the stage's timeCodesPerSecond and framesPerSecond.
        uv: None, (N, 2), (M, 3, 2) or a UVSplit; written as the faceVarying indexed primvar ``st``.
        normals: write time-sampled vertex normals.
        name: the garment prim's name, under ``/Root``.
        avatar: None, ``(vertices, triangles)`` with static (Na, 3) or animated (F, Na, 3) vertices;
            written as ``/Root/Avatar``.
    Returns:
        The path written. The stage is saved under a temporary name beside ``path`` and renamed.
    """
    from pxr import Sdf, Usd, UsdGeom

    path = Path(path)
    ext = path.suffix.lower()
    if ext not in (".usda", ".usdc", ".usd"):
        raise InputError(f"{path}: USD export needs a .usda, .usdc or .usd file name, got {path.suffix or '(none)'!r}")
    if not (float(fps) > 0 and np.isfinite(float(fps))):
        raise InputError(f"{path}: fps must be a positive number, got {fps!r}")
    if not Sdf.Path.IsValidIdentifier(name):
        raise InputError(f"{path}: prim name {name!r} is not a valid USD identifier")
    f = _Frames(frames, str(path))
    _, t = _mesh(f.first, triangles, str(path))
    split = uv_layout(uv, t, len(f.first), str(path))
    av_frames = av_t = None
    if avatar is not None:
        av_frames = _Frames(avatar[0], f"{path} (avatar)")
        _, av_t = _mesh(av_frames.first, avatar[1], f"{path} (avatar)")
        if len(av_frames) not in (1, len(f)):
            raise InputError(f"{path}: the avatar has {len(av_frames)} frames; expected 1 (static) or {len(f)}")

    tmp = path.with_name(f".{path.stem}.{uuid.uuid4().hex}.tmp{ext}")
    try:
        stage = Usd.Stage.CreateNew(str(tmp))
        UsdGeom.SetStageUpAxis(stage, UsdGeom.Tokens.y)
        UsdGeom.SetStageMetersPerUnit(stage, 1.0)
        stage.SetTimeCodesPerSecond(float(fps))
        stage.SetFramesPerSecond(float(fps))
        stage.SetStartTimeCode(float(start_frame))
        stage.SetEndTimeCode(float(start_frame + len(f) - 1))
        root = UsdGeom.Xform.Define(stage, "/Root")
        stage.SetDefaultPrim(root.GetPrim())
        _write_mesh_prim(stage, f"/Root/{name}", f, t, split, normals, start_frame)
        if av_frames is not None:
            _write_mesh_prim(stage, "/Root/Avatar", av_frames, av_t, None, normals, start_frame)
        stage.GetRootLayer().Save()
        del stage, root
        with open(tmp, "rb+") as fh:
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        if tmp.exists():
            tmp.unlink()
        raise
    return path
