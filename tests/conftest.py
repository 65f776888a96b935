"""Shared pytest setup for clothsim.

* Warp is quiet: no init banner, kernel-cache messages or per-module "Module ... loaded" lines.
* ``@pytest.mark.gpu`` tests are skipped when Warp sees no CUDA device (CI is CPU-only). They are
  also deselected by default (``-m 'not gpu'`` in pyproject.toml); run them with ``pytest -m gpu``.
* ``device`` fixture: the Warp device a test simulates on -- ``"cuda:0"`` for ``gpu``-marked tests,
  otherwise ``"cpu"``; ``pytest --sim-device cuda:0`` runs the unmarked tests on a GPU too.
* ``folded_cloth`` fixture: a factory of a cotton strip lying half on the ground, half folded up over it
  (self contact within a few frames).
"""

from __future__ import annotations

import numpy as np
import pytest
import warp as wp

wp.config.log_level = wp.LOG_WARNING  # before wp.init(): no greeting


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--sim-device",
        default="cpu",
        help="Warp device for tests that are not gpu-marked (default: cpu).",
    )


def _cuda_device_count() -> int:
    wp.init()
    return wp.get_cuda_device_count()


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    gpu_items = [item for item in items if item.get_closest_marker("gpu")]
    if gpu_items and _cuda_device_count() == 0:
        skip = pytest.mark.skip(reason="needs a CUDA device (warp.get_cuda_device_count() == 0)")
        for item in gpu_items:
            item.add_marker(skip)


@pytest.fixture
def device(request: pytest.FixtureRequest) -> str:
    """The Warp device name to simulate on: "cuda:0" for gpu-marked tests, else --sim-device."""
    if request.node.get_closest_marker("gpu"):
        return "cuda:0"
    return request.config.getoption("--sim-device")


@pytest.fixture
def folded_cloth():
    """Factory ``make(resolution=(24, 12))``: a cotton strip of 0.4 × 0.2 m, its half at x <= 0 flat 4 mm above
    the ground (y = 0), the other half folded back over it, rising at 0.3 rad: it falls onto the flat half."""
    import clothsim as cs

    def make(resolution=(24, 12)):
        cloth = cs.Cloth.grid(size=(0.4, 0.2), resolution=resolution, fabric="cotton", center=(0.0, 0.0, 0.0),
                              plane="xy")
        v = cloth.vertices.copy()
        u = v[:, 0]
        flat = u <= 0.0
        y = np.where(flat, 0.004, 0.004 + u * np.cos(0.3))
        x = np.where(flat, u, -u * np.sin(0.3) * 0.2)
        cloth.vertices = np.stack([x, y, v[:, 1]], axis=1)
        return cloth

    return make
