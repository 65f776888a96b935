"""File output for clothsim: atomic writes and mesh/trajectory export (OBJ, NPZ, JSON).

Every writer here is atomic: it writes to a temporary file in the destination folder and then
``os.replace``-s it onto the final name, so a reader (or a retried batch job) sees either the
old file or the complete new one, never a half-written file. No GL imports here, ever.

Units: positions in metres, float32; triangles as int32 vertex indices, shape (M, 3).
"""

from __future__ import annotations

import contextlib
import json
import os
import tempfile
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import IO, Any

import numpy as np

__all__ = [
    "atomic_write",
    "ensure_output_dir",
    "vertex_normals",
    "write_json",
    "write_npz",
    "write_obj",
]

_TMP_SUFFIX = ".tmp"


@contextlib.contextmanager
def atomic_write(path: str | os.PathLike, mode: str = "wb") -> Iterator[IO[Any]]:
    """Open a temporary file beside ``path``; on success flush, fsync and rename it onto ``path``.

    On any exception the temporary file is removed and ``path`` is left untouched.

    Args:
        path: final file path. Its folder must exist.
        mode: ``"wb"`` (default) or ``"w"`` (text, UTF-8).

    Yields:
        The open temporary file object.
    """
    if mode not in ("wb", "w"):
        raise ValueError(f"atomic_write mode must be 'wb' or 'w', got {mode!r}")
    path = Path(path)
    fd, tmp_name = tempfile.mkstemp(prefix=f".{path.name}.", suffix=_TMP_SUFFIX, dir=path.parent)
    try:
        with os.fdopen(fd, mode, **({"encoding": "utf-8", "newline": "\n"} if mode == "w" else {})) as f:
            os.fchmod(f.fileno(), 0o666 & ~_umask())  # mkstemp makes 0600; use the usual permissions
            yield f
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp_name, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp_name)
        raise


def _umask() -> int:
    mask = os.umask(0o022)  # reading the umask means setting it; put it straight back
    os.umask(mask)
    return mask


def ensure_output_dir(path: str | os.PathLike) -> Path:
    """Create the output folder ``path`` (with parents) and check that files can be written there.

    Raises:
        OSError: the folder cannot be created or written to; the message names the folder.
    """
    path = Path(path)
    try:
        path.mkdir(parents=True, exist_ok=True)
        fd, probe = tempfile.mkstemp(prefix=".write-probe.", suffix=_TMP_SUFFIX, dir=path)
        os.close(fd)
        os.unlink(probe)
    except OSError as e:
        reason = e.strerror or str(e)
        raise OSError(f"cannot write to output folder '{path}': {reason}") from e
    return path


def _as_mesh_arrays(vertices: Any, triangles: Any) -> tuple[np.ndarray, np.ndarray]:
    v = np.asarray(vertices, dtype=np.float32)
    t = np.asarray(triangles, dtype=np.int64)
    if v.ndim != 2 or v.shape[1] != 3:
        raise ValueError(f"vertices must have shape (N, 3), got {v.shape}")
    if t.ndim != 2 or t.shape[1] != 3:
        raise ValueError(f"triangles must have shape (M, 3), got {t.shape}")
    if t.size and (t.min() < 0 or t.max() >= len(v)):
        raise ValueError(f"triangle indices must lie in [0, {len(v)}), got [{t.min()}, {t.max()}]")
    return v, t


def vertex_normals(vertices: Any, triangles: Any) -> np.ndarray:
    """Area-weighted unit vertex normals, shape (N, 3) float32; zero for unreferenced vertices."""
    v, t = _as_mesh_arrays(vertices, triangles)
    v64 = v.astype(np.float64)
    face_n = np.cross(v64[t[:, 1]] - v64[t[:, 0]], v64[t[:, 2]] - v64[t[:, 0]])  # |n| = 2 * area
    n = np.zeros_like(v64)
    for k in range(3):
        np.add.at(n, t[:, k], face_n)
    length = np.linalg.norm(n, axis=1, keepdims=True)
    return (n / np.where(length > 0.0, length, 1.0)).astype(np.float32)


def write_obj(path: str | os.PathLike, vertices: Any, triangles: Any) -> Path:
    """Write a triangle mesh as Wavefront OBJ (via trimesh), atomically.

    Vertices are written as given, in order (no merging or reordering), with vertex normals.

    Args:
        path: output file, usually ``*.obj``.
        vertices: positions [m], shape (N, 3).
        triangles: vertex indices, shape (M, 3), counter-clockwise seen from the front.
    """
    import trimesh  # lazy: trimesh is only needed for export

    v, t = _as_mesh_arrays(vertices, triangles)
    mesh = trimesh.Trimesh(
        vertices=v, faces=t, vertex_normals=vertex_normals(v, t), process=False, validate=False
    )
    text = trimesh.exchange.obj.export_obj(mesh, include_normals=True, include_texture=False)
    with atomic_write(path, "w") as f:
        f.write(text)
    return Path(path)


def write_npz(path: str | os.PathLike, **arrays: Any) -> Path:
    """Write named numpy arrays to a compressed ``.npz``, atomically (``np.load`` reads it back)."""
    with atomic_write(path, "wb") as f:
        np.savez_compressed(f, **{k: np.asarray(a) for k, a in arrays.items()})
    return Path(path)


def write_json(path: str | os.PathLike, data: Mapping[str, Any]) -> Path:
    """Write ``data`` as indented UTF-8 JSON, atomically. numpy scalars/arrays are converted."""

    def default(o: Any) -> Any:
        if isinstance(o, np.ndarray):
            return o.tolist()
        if isinstance(o, np.generic):
            return o.item()
        if isinstance(o, os.PathLike):
            return os.fspath(o)
        raise TypeError(f"cannot write {type(o).__name__} to JSON")

    with atomic_write(path, "w") as f:
        json.dump(data, f, indent=2, default=default)
        f.write("\n")
    return Path(path)
