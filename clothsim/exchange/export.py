"""Export draped garments: OBJ (with UVs and normals) and GLB, one file or one per frame.

Every file is written atomically (a temporary name in the destination folder, then ``os.replace``),
through :func:`clothsim.io.atomic_write`. Positions are metres, Y up; normals are area-weighted vertex
normals of the welded mesh; UVs follow the OBJ convention (origin bottom-left, v up).

``uv`` arguments accept any of: None; (N, 2) one UV per vertex; (M, 3, 2) one UV per triangle corner;
or a :class:`~clothsim.exchange.mesh.UVSplit` (e.g. ``ImportedMesh.uv_split()``). OBJ keeps the welded
vertices and indexes UVs per corner (``f v/vt/vn``); GLB, which has one UV per vertex, gets the split
mesh (vertices duplicated along UV seams, positions copied from the welded vertex).
"""

from __future__ import annotations

import io as _io
import os
from collections.abc import Iterable
from pathlib import Path

import numpy as np

from ..errors import InputError
from ..io import atomic_write, vertex_normals
from .mesh import UVSplit

__all__ = ["export_obj", "export_glb", "export_frames", "uv_layout"]


def uv_layout(uv, triangles: np.ndarray, vertex_count: int, where: str = "uv") -> UVSplit | None:
    """Normalise a ``uv`` argument (see module doc) to a :class:`UVSplit` over ``triangles``."""
    if uv is None:
        return None
    t = np.asarray(triangles, dtype=np.int64)
    if isinstance(uv, UVSplit):
        if uv.triangles.shape != t.shape or (uv.split_to_weld.size and uv.split_to_weld.max() >= vertex_count):
            raise InputError(f"{where}: the UV split does not belong to this mesh "
                             f"({uv.triangles.shape} triangles, vertices up to "
                             f"{int(uv.split_to_weld.max(initial=-1))})")
        if not np.array_equal(uv.split_to_weld[uv.triangles], t):
            raise InputError(f"{where}: the UV split's triangles do not match the mesh triangles")
        return uv
    a = np.asarray(uv, dtype=np.float64)
    if a.shape == (vertex_count, 2):
        return UVSplit(split_to_weld=np.arange(vertex_count, dtype=np.int64), uv=a, triangles=t.copy())
    if a.shape == (len(t), 3, 2):
        return UVSplit.from_corner_uv(t, a)
    raise InputError(f"{where}: expected UVs of shape ({vertex_count}, 2) per vertex or ({len(t)}, 3, 2) per "
                     f"corner, or a UVSplit; got shape {a.shape}")


def _mesh(positions, triangles, where: str) -> tuple[np.ndarray, np.ndarray]:
    x = np.asarray(positions, dtype=np.float64)
    t = np.asarray(triangles, dtype=np.int64)
    if x.ndim != 2 or x.shape[1] != 3:
        raise InputError(f"{where}: positions must have shape (N, 3), got {x.shape}")
    if t.ndim != 2 or t.shape[1] != 3 or len(t) == 0:
        raise InputError(f"{where}: triangles must have shape (M, 3) with M > 0, got {t.shape}")
    if t.min() < 0 or t.max() >= len(x):
        raise InputError(f"{where}: triangle indices span [{t.min()}, {t.max()}] but there are {len(x)} positions")
    if not np.all(np.isfinite(x)):
        k = int(np.argwhere(~np.isfinite(x))[0][0])
        raise InputError(f"{where}: positions contain non-finite values (vertex {k})")
    return x, t


def _rows(fmt: str, a: np.ndarray) -> str:
    buf = _io.StringIO()
    np.savetxt(buf, a, fmt=fmt)
    return buf.getvalue()


def export_obj(path: str | os.PathLike, positions, triangles, *, uv=None, normals: bool = True,
               name: str = "garment") -> Path:
    """Write one mesh as Wavefront OBJ, atomically.

    Args:
        path: the ``.obj`` file.
        positions: (N, 3) vertex positions [m].
        triangles: (M, 3) vertex indices, counter-clockwise seen from the front.
        uv: see the module doc; written as ``vt`` lines indexed per corner, so the ``v`` lines stay
            the N welded vertices in order.
        normals: also write area-weighted vertex normals (``vn``, one per vertex).
        name: the object name (``o`` line).

    Positions are printed with 9 significant digits: a float32 value survives exactly, a float64
    one within a relative 5e-9.
    """
    x, t = _mesh(positions, triangles, str(path))
    split = uv_layout(uv, t, len(x), str(path))
    parts = [f"# clothsim export: {len(x)} vertices, {len(t)} triangles, metres, Y up\n", f"o {name}\n",
             _rows("v %.9g %.9g %.9g", x)]
    cols = [t + 1]
    if split is not None:
        parts.append(_rows("vt %.9g %.9g", split.uv))
        cols.append(split.triangles + 1)
    if normals:
        parts.append(_rows("vn %.7g %.7g %.7g", vertex_normals(x, t)))
        cols.append(t + 1)
    corner = "/".join(["%d"] * len(cols)) if len(cols) != 2 or split is not None else "%d//%d"
    fidx = np.stack(cols, axis=2).reshape(len(t), -1)  # (M, 3 * len(cols)), corner-major
    parts.append(_rows("f " + " ".join([corner] * 3), fidx))
    with atomic_write(path, "w") as f:
        f.write("".join(parts))
    return Path(path)


def _trimesh_for(x: np.ndarray, t: np.ndarray, split: UVSplit | None, normals: bool):
    import trimesh

    n = vertex_normals(x, t) if normals else None
    if split is None:
        return trimesh.Trimesh(vertices=x, faces=t, vertex_normals=n, process=False, validate=False)
    return trimesh.Trimesh(vertices=x[split.split_to_weld], faces=split.triangles,
                           vertex_normals=None if n is None else n[split.split_to_weld],
                           visual=trimesh.visual.TextureVisuals(uv=split.uv), process=False, validate=False)


def export_glb(path: str | os.PathLike, positions, triangles, *, uv=None, normals: bool = True,
               name: str = "garment", avatar=None) -> Path:
    """Write one mesh (and optionally the avatar) as binary glTF (.glb), atomically, via trimesh.

    Args:
        path: the ``.glb`` file.
        positions, triangles, uv, normals, name: as :func:`export_obj` (glTF stores float32
            positions; the mesh is split along UV seams since glTF has one UV per vertex).
        avatar: None, or ``(vertices (Na, 3), triangles (Ma, 3))`` written as a second node "avatar".
    """
    import trimesh

    x, t = _mesh(positions, triangles, str(path))
    split = uv_layout(uv, t, len(x), str(path))
    scene = trimesh.Scene()
    scene.add_geometry(_trimesh_for(x, t, split, normals), node_name=name, geom_name=name)
    if avatar is not None:
        av, at = _mesh(avatar[0], avatar[1], f"{path} (avatar)")
        scene.add_geometry(_trimesh_for(av, at, None, normals), node_name="avatar", geom_name="avatar")
    data = trimesh.exchange.gltf.export_glb(scene, include_normals=normals)
    with atomic_write(path, "wb") as f:
        f.write(data)
    return Path(path)


def export_frames(folder: str | os.PathLike, frames: Iterable, triangles, *, fmt: str = "obj", uv=None,
                  normals: bool = True, name: str = "garment", first: int = 0) -> list[Path]:
    """Write one OBJ or GLB per frame: ``folder/{name}_{k:04d}.{fmt}`` for k = first, first+1, ...

    Args:
        frames: an iterable of (N, 3) positions [m]: a (F, N, 3) array, a list, or a FrameCache.
        fmt: "obj" or "glb".
    Returns:
        The written paths, in frame order.
    """
    if fmt not in ("obj", "glb"):
        raise InputError(f"export_frames: fmt must be 'obj' or 'glb', got {fmt!r}")
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    writer = export_obj if fmt == "obj" else export_glb
    out = []
    for k, x in enumerate(frames, start=first):
        out.append(writer(folder / f"{name}_{k:04d}.{fmt}", x, triangles, uv=uv, normals=normals, name=name))
    return out
