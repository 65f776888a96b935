"""Damping: a pinned cloth swinging sideways in its plane loses amplitude faster as fabric.damping grows.

Setup: a 0.2 × 0.3 m cloth pinned along its top edge, released from rest in the shape of its first
in-plane (shear) mode, u(s) = A·sin(πs/2L) with s measured down from the pins; drag = 0. Its centre of
mass oscillates sideways, c(t) ≈ c0·e^(−σt)·cos(ωt); σ is fitted to log|c| at the extrema (least squares).

References:
* damping 0: no physical dissipation, so σ is the integrator's own. Backward Euler multiplies a mode's
  amplitude by 1/√(1 + ω²h²) per substep h, i.e. σ_num = ln(1 + ω²h²)/(2h) ≈ ω²h/2. The measurement is
  checked against that within 25 %: the extrema are read at frame resolution dt, so each is low by at
  most 1 − cos(ω·dt/2) ≈ 1.3 %, which moves the fitted slope by ≤ 2·1.3 %/(fit span) ≈ 0.02 /s (6 %);
  the rest covers the higher modes riding on c(t).
* Rayleigh damping β (fabric.damping [s]) on the elastic forces adds at most β·ω²/2 (less, since the
  part of the restoring force that comes from gravity is not damped), so σ(β) − σ(0) ∈ (0, β·ω²/2·1.1]
  (10 % for the same read-out error), and σ grows monotonically over β = 0.002, 0.005, 0.01 s.
"""

import math

import numpy as np

import clothsim as cs

L, W = 0.3, 0.2
FRAMES = 90
AMPLITUDE = 0.03  # m


def _decay(device, beta):
    """(σ [1/s], ω [rad/s], h [s]) of the centre-of-mass swing."""
    fabric = cs.Fabric(name="swing", density=0.13, stretch_warp=50.0, stretch_weft=50.0, poisson=0.0, shear=2.0,
                       damping=beta)
    cloth = cs.Cloth.grid(size=(W, L), resolution=(5, 7), center=(0.0, 0.0, 0.0), plane="xy", fabric=fabric)
    cloth.pin(cloth.boundary("top"))
    sim = cs.Simulator(cloth, device=device, dt=1.0 / 60.0, substeps=10, iterations=10, drag=0.0)
    x = cloth.vertices.copy()
    x[:, 0] += AMPLITUDE * np.sin(math.pi * (0.5 * L - x[:, 1]) / (2.0 * L))
    sim.set_positions(x)
    m = sim.model.host_mass
    c = np.empty(FRAMES)
    for f in range(FRAMES):
        sim.step()
        c[f] = np.dot(m, sim.positions()[:, 0]) / m.sum()  # equilibrium is x = 0 (symmetric mesh)
    t = (np.arange(FRAMES) + 1) * sim.dt
    a = np.abs(c)
    peaks = [i for i in range(1, FRAMES - 1) if a[i] >= a[i - 1] and a[i] >= a[i + 1]]
    assert len(peaks) >= 6, f"expected at least 3 swings in {FRAMES} frames, got extrema at {peaks}"
    sigma = -np.polyfit(t[peaks], np.log(a[peaks]), 1)[0]
    omega = math.pi / np.mean(np.diff(t[peaks]))  # extrema are half a period apart
    return float(sigma), float(omega), sim.substep_dt


def test_decay_grows_with_damping_and_integrator_damping_is_measured(device):
    """σ(0) ≈ ln(1 + ω²h²)/(2h) within 25 %; 0 < σ(β) − σ(0) ≤ 1.1·β·ω²/2; σ increasing in β."""
    betas = [0.0, 0.002, 0.005, 0.01]
    results = [_decay(device, b) for b in betas]
    sigma = [r[0] for r in results]
    omega, h = results[0][1], results[0][2]
    sigma_num = math.log(1.0 + (omega * h) ** 2) / (2.0 * h)
    print(f"\nswing ω = {omega:.2f} rad/s, substep h = {h:.5f} s")
    print(f"integrator's own decay (damping 0, drag 0): σ = {sigma[0]:.3f} 1/s "
          f"(backward Euler ω²h/2 = {sigma_num:.3f} 1/s)")
    for b, s in zip(betas[1:], sigma[1:]):
        print(f"damping {b:.3f} s: σ = {s:.3f} 1/s (added {s - sigma[0]:.3f}, Rayleigh bound β·ω²/2 = "
              f"{b * omega**2 / 2:.3f})")
    assert abs(sigma[0] - sigma_num) <= 0.25 * sigma_num
    assert all(s1 > s0 for s0, s1 in zip(sigma, sigma[1:])), f"decay not increasing with damping: {sigma}"
    assert sigma[0] < min(sigma[1:])
    for b, s in zip(betas[1:], sigma[1:]):
        assert 0.0 < s - sigma[0] <= 1.1 * b * omega**2 / 2.0
