"""ASTM D1388 cantilever in the simulator recovers the fabric's bending rigidity.

Reference: for the elastica, the line from the ledge edge to the tip reaches 41.5° below horizontal at
overhang l = 2c (c the bending length), so G = W·g·(l/2)³ must equal B. The strip (25 mm wide) is
clamped over its first two columns of vertices and settled at five overhangs around 2c; l at 41.5° is
interpolated linearly (interpolation error < 0.5 % in G for the 0.15c spacing used).

Tolerance 8 % in G (2.7 % in bending length): the mesh has 4-6 elements per bending length, and the
clamped root and the tip discretise the elastica to first order in the element size a = c/6; a
small-deflection check at 3 and 6 elements per c gave errors of 8-14 % and 1-8 % in deflection,
i.e. the error halves with a. Rigidities span Feng et al. 2022's measured range (0.34-266 µN·m), on
two mesh orientations (one edge family along the strip, and turned 90°).
"""

import pytest

import clothsim as cs
from clothsim.labtests import cantilever_test

CASES = [
    # (B [µN·m], areal density [g/m²], elements per bending length, iterations, frames)
    # ~ light silk, shirting median, heavy.
    # The light strip (c = 1.2 cm) uses 4 elements per c: at 6 its 2 mm elements make the stiff membrane
    # (200 N/m against m/h² ≈ 0.1 N/m per vertex) converge too slowly for 40 iterations to settle;
    # it also gets more iterations and frames.
    (1.0, 60.0, 4.0, 60, 90),
    (10.0, 150.0, 6.0, 40, 45),
    (100.0, 400.0, 6.0, 40, 45),
]


@pytest.mark.parametrize("rows_along", ["x", "y"])
@pytest.mark.parametrize("b_uNm, w_gsm, per_c, iterations, frames", CASES)
def test_cantilever_recovers_rigidity(device, b_uNm, w_gsm, per_c, iterations, frames, rows_along):
    B = b_uNm * 1e-6
    fab = cs.Fabric(name=f"B{b_uNm}", density=w_gsm * 1e-3, stretch_warp=200.0, stretch_weft=200.0, poisson=0.2,
                    shear=50.0, bend_warp=B, bend_weft=B, bend_bias=B, damping=0.0)
    r = cantilever_test(fab, rows_along=rows_along, iterations=iterations, frames=frames, device=device, elements_per_c=per_c,
                        overhang_factors=(1.7, 1.85, 2.0, 2.15, 2.3))
    print(f"\nB={b_uNm} uN*m W={w_gsm} g/m^2 mesh {rows_along}: angles {r.angles_deg.round(2)} deg, "
          f"l(41.5)={r.overhang_at_41_5 * 100:.2f} cm, G={r.rigidity * 1e6:.3f} uN*m, G/B-1={r.relative_error:+.3f}")
    assert abs(r.relative_error) < 0.08
