"""benchmarks/intersection_pairs.py: the rest-shape distance of a crossing pair and the mesh's smallest altitude
(the radius under which self contact keeps every pair of a grid), against closed forms."""

import importlib.util
import math
import os

import numpy as np
import pytest

# loaded by path (benchmarks/ on sys.path would shadow the render package for later test modules)
_spec = importlib.util.spec_from_file_location(
    "bench_intersection_pairs", os.path.join(os.path.dirname(__file__), "..", "benchmarks", "intersection_pairs.py"))
_ip = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_ip)


@pytest.mark.parametrize("diagonals", ["alternate", "regular"])
def test_smallest_altitude_of_a_grid_is_edge_over_root_two(diagonals):
    from clothsim import Cloth

    c = Cloth.grid(size=(0.016, 0.016), resolution=(5, 5), plane="xz", diagonals=diagonals)  # 4 mm cells
    uv = np.asarray(c.vertices, dtype=np.float64)[:, [0, 2]]
    assert _ip.smallest_altitude(uv, np.asarray(c.triangles)) == pytest.approx(0.004 / math.sqrt(2), rel=1e-6)


def test_rest_distance_of_triangle_pairs():
    uv = np.array([[0, 0], [1, 0], [0, 1],  # triangle 0
                   [3, 0], [4, 0], [3, 1],  # triangle 1: 2 to the right of triangle 0's vertex (1, 0)
                   [1, 1], [2, 1], [2, 2]], dtype=np.float64)  # triangle 2: its vertex (1, 1) is 1/√2 from 0's hypotenuse
    tris = np.array([[0, 1, 2], [3, 4, 5], [6, 7, 8]], dtype=np.int32)
    d = _ip.rest_distance(uv, tris, np.array([[0, 1], [0, 2], [1, 2]]))
    # triangle 1 to triangle 2: its vertex (3, 1) is 1 from (2, 1)
    np.testing.assert_allclose(d, [2.0, 1 / math.sqrt(2), 1.0], rtol=1e-12)
    assert _ip.rest_distance(uv, tris, np.zeros((0, 2), dtype=np.int32)).shape == (0,)
