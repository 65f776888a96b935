"""Sewing a shipped garment closes its seams (CPU, coarsest level, no body, no gravity).

Reference: a seam is a zero-length spring between two panels; with no external load (no gravity,
no body, no pins) sewing pulls the matched vertex pairs together and the garment settles with every
seam closed. At the 40 mm level the remaining gap comes from the seam springs balancing the membrane
forces where several seams meet at a corner (armpit, neck point); "closed" here means a gap below
10 % of the target edge length (4 mm): smaller than anything the 40 mm mesh can show, and inside the
contact search margin (10 mm) that the simulator keeps around colliders. The T-shirt starts with its
front and back panels 0.34 m apart (largest gap), so this is a real sew, not a nudge.
"""

import numpy as np

import clothsim as cs
from clothsim import garments


def test_tshirt_sews_closed(device):
    mesh = garments.load_shipped("tshirt").mesh(0.04)
    cloth = mesh.to_cloth()
    gap0 = float(mesh.seam_gaps().max())
    sim = cs.Simulator(cloth, device=device, gravity=(0.0, 0.0, 0.0), substeps=10, iterations=10)
    gaps = []
    for _ in range(35):  # 350 substeps
        sim.step()
        x = sim.positions()
        gaps.append(float(mesh.seam_gaps(x).max()))
    print(f"\nT-shirt 40 mm ({mesh.vertex_count} vertices): largest seam gap {gap0:.3f} m at start, then by frame "
          + ", ".join(f"{g * 1000:.1f}" for g in gaps) + " mm")
    assert gap0 > 0.3
    assert np.all(np.isfinite(x))
    assert max(gaps[-10:]) < 0.1 * mesh.edge_length  # measured on CPU: <= 1.9 mm over frames 26-35
    # the garment did not fly apart: every vertex stays within the box the panels started in, grown by 0.2 m
    lo, hi = mesh.vertices.min(axis=0) - 0.2, mesh.vertices.max(axis=0) + 0.2
    assert np.all((x >= lo) & (x <= hi))
