"""The mapping from continuum bending rigidity B [N·m] to per-edge hinge stiffness.

Reference: an isometric cylinder of curvature κ stores the continuum energy ½·B·κ²·A. The model's
per-edge stiffness k_e = B·|e|²/(A1+A2) (clothsim.model.BENDING_C = 1/3 in the 3|e|²/(A1+A2) form) must
reproduce it on interior hinges for two orientations of a near-equilateral lattice and for a
right-triangle grid, for curvature along either material axis. Tolerance 2 %: the hinge angle of a
cylinder sampled at edge length a differs from κ·ℓ by O((κa)²) = O(1e-4) here, and the discrete
interior area differs from the continuum one by the band at the boundary, which the test excludes.
"""

import numpy as np
import pytest

import clothsim as cs
from clothsim.model import ClothModel, _cross2, _dihedral_np

B = 1.0e-5
KAPPA = 5.0  # 1/m


def _mesh(kind):
    fab = cs.Fabric(bend_warp=B, bend_weft=B, bend_bias=B)
    if kind == "lattice-x":
        return cs.Cloth.lattice(size=(0.2, 0.2), edge_length=0.008, plane="xy", rows_along="x", fabric=fab)
    if kind == "lattice-y":
        return cs.Cloth.lattice(size=(0.2, 0.2), edge_length=0.008, plane="xy", rows_along="y", fabric=fab)
    return cs.Cloth.grid(size=(0.2, 0.2), resolution=(26, 26), plane="xy", diagonals="regular", fabric=fab)


@pytest.mark.parametrize("kind", ["lattice-x", "lattice-y", "grid"])
@pytest.mark.parametrize("axis", [0, 1])
def test_cylinder_energy_matches_continuum(kind, axis):
    cloth = _mesh(kind)
    model = ClothModel([cloth], "cpu")
    k = model.bend_k.numpy().astype(np.float64)
    st = model.host_bend
    uv = cloth.rest_uv
    s = uv[:, axis]
    R = 1.0 / KAPPA
    X = np.zeros((len(uv), 3))
    X[:, 1 - axis] = uv[:, 1 - axis]
    X[:, axis] = R * np.sin(s / R)
    X[:, 2] = R * (1.0 - np.cos(s / R))
    theta = _dihedral_np(X[st[:, 0]], X[st[:, 1]], X[st[:, 2]], X[st[:, 3]])
    boundary = np.zeros(len(uv), dtype=bool)
    boundary[cloth.boundary("all")] = True
    inner = ~boundary[st].any(axis=1)
    e_discrete = 0.5 * np.sum(k[inner] * theta[inner] ** 2)
    a1 = 0.5 * np.abs(_cross2(uv[st[:, 1]] - uv[st[:, 0]], uv[st[:, 2]] - uv[st[:, 0]]))
    a2 = 0.5 * np.abs(_cross2(uv[st[:, 1]] - uv[st[:, 0]], uv[st[:, 3]] - uv[st[:, 0]]))
    area = np.sum((a1 + a2)[inner]) / 3.0  # each hinge stands for a third of its two triangles
    e_continuum = 0.5 * B * KAPPA**2 * area
    ratio = e_discrete / e_continuum
    print(f"\n{kind} axis {axis}: discrete / continuum bending energy = {ratio:.4f}")
    assert abs(ratio - 1.0) < 0.02
    model.release()


def test_anisotropic_rigidity_by_direction():
    """B(φ) = Bw·cos⁴φ + 2·B12·cos²φ·sin²φ + Bf·sin⁴φ passes through warp, bias and weft values."""
    f = cs.Fabric(bend_warp=20e-6, bend_weft=8e-6, bend_bias=12e-6)
    assert f.bending_rigidity(0.0) == pytest.approx(20e-6)
    assert f.bending_rigidity(np.pi / 2) == pytest.approx(8e-6)
    assert f.bending_rigidity(np.pi / 4) == pytest.approx(12e-6)
