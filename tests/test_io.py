"""clothsim.io: atomic writes (all or nothing, no temp files left) and mesh/array export."""

from __future__ import annotations

import json
import os
import stat

import numpy as np
import pytest
import trimesh

from clothsim import io


def grid_mesh(n: int = 4) -> tuple[np.ndarray, np.ndarray]:
    """An n x n vertex grid in the xz plane [m] and its 2 (n-1)^2 triangles (normals +y)."""
    u, v = np.meshgrid(np.linspace(0, 1, n), np.linspace(0, 1, n), indexing="xy")
    vertices = np.stack([u.ravel(), np.zeros(n * n), v.ravel()], axis=1).astype(np.float32)
    tris = []
    for j in range(n - 1):
        for i in range(n - 1):
            a, b, c, d = j * n + i, j * n + i + 1, (j + 1) * n + i, (j + 1) * n + i + 1
            tris += [(a, c, b), (b, c, d)]
    return vertices, np.array(tris, dtype=np.int32)


def test_atomic_write_replaces_and_leaves_no_temp(tmp_path):
    target = tmp_path / "a.txt"
    target.write_text("old")
    with io.atomic_write(target, "w") as f:
        f.write("new")
        assert target.read_text() == "old"  # not visible until the block ends
    assert target.read_text() == "new"
    assert os.listdir(tmp_path) == ["a.txt"]


def test_atomic_write_failure_keeps_old_file(tmp_path):
    target = tmp_path / "a.bin"
    target.write_bytes(b"old")
    with pytest.raises(RuntimeError):
        with io.atomic_write(target) as f:
            f.write(b"half")
            raise RuntimeError("disk full (simulated)")
    assert target.read_bytes() == b"old"
    assert os.listdir(tmp_path) == ["a.bin"]


def test_atomic_write_uses_umask_permissions(tmp_path):
    old = os.umask(0o022)
    try:
        io.write_json(tmp_path / "s.json", {"a": 1})
    finally:
        os.umask(old)
    assert stat.S_IMODE((tmp_path / "s.json").stat().st_mode) == 0o644


def test_write_obj_round_trips_vertices_in_order(tmp_path):
    vertices, triangles = grid_mesh(5)
    io.write_obj(tmp_path / "m.obj", vertices, triangles)
    mesh = trimesh.load(tmp_path / "m.obj", process=False)
    np.testing.assert_allclose(mesh.vertices, vertices, atol=1e-7)
    np.testing.assert_array_equal(mesh.faces, triangles)
    np.testing.assert_allclose(mesh.vertex_normals, np.tile([0.0, 1.0, 0.0], (25, 1)), atol=1e-6)


def test_write_obj_rejects_bad_indices(tmp_path):
    vertices, triangles = grid_mesh(3)
    with pytest.raises(ValueError, match="triangle indices"):
        io.write_obj(tmp_path / "m.obj", vertices, triangles + 100)
    assert not os.listdir(tmp_path)


def test_write_npz_and_json(tmp_path):
    x = np.arange(12, dtype=np.float32).reshape(4, 3)
    io.write_npz(tmp_path / "x.npz", positions=x)
    with np.load(tmp_path / "x.npz") as data:
        np.testing.assert_array_equal(data["positions"], x)
    io.write_json(tmp_path / "x.json", {"f": np.float32(0.5), "a": np.arange(2), "p": tmp_path})
    assert json.loads((tmp_path / "x.json").read_text()) == {"f": 0.5, "a": [0, 1], "p": str(tmp_path)}


def test_ensure_output_dir_names_the_folder(tmp_path):
    (tmp_path / "file").write_text("x")
    with pytest.raises(OSError, match="cannot write to output folder .*file/out"):
        io.ensure_output_dir(tmp_path / "file" / "out")
    assert io.ensure_output_dir(tmp_path / "new" / "deep").is_dir()
