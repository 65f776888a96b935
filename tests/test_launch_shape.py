"""The CUDA launch shape of the solve with contact pairs (clothsim.solver.vbd.contact_tile_max_vertices): a
half warp a vertex for every colour where the contact radius reaches TILE_CONTACT_RADIUS_EDGES median edges
(long pair lists), one thread a vertex above TILE_MAX_VERTICES under it. The choice is made on the host, so
it is checked here on the CPU; tests/test_collision_gpu.py checks that both shapes give the same fold."""

import pytest

import clothsim as cs
from clothsim.solver import vbd


def _sim(thickness, margin, **kw):
    fabric = cs.Fabric.preset("cotton").replace(thickness=thickness)
    cloth = cs.Cloth.grid(size=(0.1, 0.1), resolution=(11, 11), fabric=fabric)  # 10 mm edges
    return cs.Simulator(cloth, device="cpu", ground=0.0, self_collision=True, contact_margin=margin, **kw)


def test_median_edge_length():
    sim = _sim(0.003, 0.003)
    assert sim.model.median_edge_length == pytest.approx(0.01, rel=1e-6)
    sim.release()


@pytest.mark.parametrize("thickness, margin, long_lists", [
    (0.003, 0.003, False),    # 6 mm on 10 mm edges: under the altitude, short lists
    (0.006, 0.006, True),     # 12 mm: 1.2 edges
    (0.0051, 0.005, True),    # just over one edge
    (0.0049, 0.005, False),   # just under
])
def test_contact_launch_follows_the_radius(thickness, margin, long_lists):
    sim = _sim(thickness, margin)
    want = vbd.TILE_MAX_CONTACT_VERTICES if long_lists else vbd.TILE_MAX_VERTICES
    assert sim.solver.contact_tile_max_vertices() == want
    sim.release()


def test_contact_launch_follows_a_fabric_change():
    sim = _sim(0.003, 0.003)
    assert sim.solver.contact_tile_max_vertices() == vbd.TILE_MAX_VERTICES
    sim.set_fabric({"preset": "cotton", "thickness": 0.01})
    assert sim.solver.contact_tile_max_vertices() == vbd.TILE_MAX_CONTACT_VERTICES
    sim.release()


def test_forced_one_thread_threshold_wins(monkeypatch):
    """benchmarks' --tile-max-contact-vertices 32768 (one thread a vertex above it) holds at any radius."""
    monkeypatch.setattr(vbd, "TILE_MAX_CONTACT_VERTICES", 32768)
    monkeypatch.setattr(vbd, "TILE_MAX_VERTICES", 65536)
    sim = _sim(0.006, 0.006)
    assert sim.solver.contact_tile_max_vertices() == 32768
    sim.release()
