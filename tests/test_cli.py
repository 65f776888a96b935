"""The `clothsim` command line: help, info, the scripted drape, and how bad input is reported.

Bad input must end with exit code 2 and one message naming the problem (no traceback).
Simulations here are tiny (8 x 8 vertices, 3 frames, few iterations): this checks the command's
plumbing and files, not the physics (tests of the solver state their own references).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import trimesh
from click.testing import CliRunner

import clothsim as cs
from clothsim.cli import main

RES = 8  # vertices per side
FRAMES = 3
EXPECTED_FILES = {"drape.obj", "drape.npz", "drape.json"}


def tiny_args(out: Path, device: str, *extra: str) -> list[str]:
    return ["simulate", "--resolution", str(RES), "--frames", str(FRAMES), "--substeps", "2",
            "--iterations", "2", "--device", device, "--out", str(out), "--no-progress", *extra]


def run(*args: str):
    return CliRunner().invoke(main, list(args), catch_exceptions=False)


def clothsim_command() -> list[str]:
    """The installed console script if it sits beside this interpreter, else `python -m clothsim.cli`."""
    script = Path(sys.executable).with_name("clothsim")
    return [str(script)] if script.exists() else [sys.executable, "-m", "clothsim.cli"]


def test_help_lists_commands():
    result = run("--help")
    assert result.exit_code == 0, result.output
    for word in ("simulate", "info", "exit with code 2"):
        assert word in result.output


def test_console_script_help():
    proc = subprocess.run([*clothsim_command(), "--help"], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert "Usage: clothsim" in proc.stdout


def test_simulate_help_documents_options():
    result = run("simulate", "--help")
    assert result.exit_code == 0, result.output
    for option in ("--fabric", "--size", "--resolution", "--frames", "--device", "--substeps",
                   "--iterations", "--out"):
        assert option in result.output


def test_info_shows_versions_devices_and_presets():
    result = run("info")
    assert result.exit_code == 0, result.output
    out = result.output
    assert "warp" in out and "numpy" in out and "kernel cache" in out
    assert "cpu" in out
    for unit in ("g/m²", "N/m", "µN·m"):
        assert unit in out
    from clothsim.fabric import preset_names

    for name in preset_names():
        assert name in out
    # cotton's areal density, in g/m², appears on its row
    cotton_row = next(line for line in out.splitlines() if line.startswith("cotton"))
    density = cs.Fabric.preset("cotton").density * 1e3
    assert f"{density:.0f}" in cotton_row.split()


def test_simulate_writes_obj_npz_json(tmp_path, device):
    out = tmp_path / "drape"
    result = run(*tiny_args(out, device))
    assert result.exit_code == 0, result.output

    assert set(os.listdir(out)) == EXPECTED_FILES  # no temporary files left behind

    mesh = trimesh.load(out / "drape.obj", process=False)
    assert mesh.vertices.shape == (RES * RES, 3)
    assert mesh.faces.shape == (2 * (RES - 1) ** 2, 3)

    with np.load(out / "drape.npz") as data:
        positions = data["positions"]
        triangles = data["triangles"]
    assert positions.dtype == np.float32
    assert positions.shape == (FRAMES + 1, RES * RES, 3)
    assert np.isfinite(positions).all()
    np.testing.assert_array_equal(triangles, mesh.faces)
    np.testing.assert_allclose(mesh.vertices, positions[-1], atol=1e-6)  # OBJ = last frame
    # under gravity, starting at rest: the cloth's mean height goes down
    assert positions[-1][:, 1].mean() < positions[0][:, 1].mean()

    summary = json.loads((out / "drape.json").read_text())
    assert summary["settings"]["frames"] == FRAMES
    assert summary["settings"]["device"] == device
    assert summary["counts"]["vertices"] == RES * RES
    assert summary["versions"]["warp"]
    assert summary["timings_s"]["total_frames"] > 0


def test_simulate_is_deterministic_and_overwrites(tmp_path, device):
    out = tmp_path / "same"
    assert run(*tiny_args(out, device)).exit_code == 0
    with np.load(out / "drape.npz") as data:
        first = data["positions"].copy()
    assert run(*tiny_args(out, device)).exit_code == 0  # same folder again: replaced in place
    assert set(os.listdir(out)) == EXPECTED_FILES
    with np.load(out / "drape.npz") as data:
        np.testing.assert_array_equal(data["positions"], first)


def test_simulate_shows_progress(tmp_path, device):
    args = [a for a in tiny_args(tmp_path / "p", device) if a != "--no-progress"]
    result = CliRunner().invoke(main, args, catch_exceptions=False)
    assert result.exit_code == 0, result.output
    assert f"{FRAMES}/{FRAMES}" in result.output  # tqdm's final count


def test_unknown_fabric_exits_2_naming_it(tmp_path):
    result = run(*tiny_args(tmp_path / "x", "cpu", "--fabric", "velvet"))
    assert result.exit_code == 2
    assert "--fabric" in result.output and "velvet" in result.output
    assert "cotton" in result.output  # says what is available
    assert not (tmp_path / "x").exists()  # nothing started


def test_zero_frames_exits_2(tmp_path):
    result = run("simulate", "--frames", "0", "--out", str(tmp_path / "x"))
    assert result.exit_code == 2
    assert "--frames" in result.output


def test_unwritable_output_folder_exits_2(tmp_path):
    blocker = tmp_path / "a_file"
    blocker.write_text("not a folder")
    target = blocker / "out"  # cannot be created, even as root
    result = run(*tiny_args(target, "cpu"))
    assert result.exit_code == 2
    assert "--out" in result.output and str(target) in result.output


def test_clothsim_error_is_one_line_exit_2(tmp_path, monkeypatch):
    def broken_grid(*args, **kwargs):
        raise cs.InputError("cloth grid: resolution must be >= 2 (from a test)")

    monkeypatch.setattr(cs.Cloth, "grid", broken_grid)
    result = CliRunner().invoke(main, tiny_args(tmp_path / "x", "cpu"))
    assert result.exit_code == 2
    assert "Error: cloth grid: resolution must be >= 2 (from a test)" in result.output
    assert "Traceback" not in result.output
    assert not (tmp_path / "x").exists() or not os.listdir(tmp_path / "x")


def test_bad_input_in_a_real_process_has_no_traceback(tmp_path):
    proc = subprocess.run([*clothsim_command(), *tiny_args(tmp_path / "x", "cpu", "--fabric", "velvet")],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2
    assert "velvet" in proc.stderr
    assert "Traceback" not in proc.stderr


@pytest.mark.gpu
def test_simulate_on_gpu(tmp_path, device):
    out = tmp_path / "gpu"
    result = run(*tiny_args(out, device))
    assert result.exit_code == 0, result.output
    assert set(os.listdir(out)) == EXPECTED_FILES
    assert json.loads((out / "drape.json").read_text())["settings"]["device"] == device


@pytest.mark.skipif(shutil.which("make") is None, reason="make not installed")
def test_makefile_help_names_the_targets():
    root = Path(__file__).resolve().parents[1]
    proc = subprocess.run(["make", "-s", "-C", str(root), "help"], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    for target in ("demo", "test", "test-gpu", "bench", "clean"):
        assert f"make {target}" in proc.stdout
