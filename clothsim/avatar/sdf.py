"""Signed-distance primitives (numpy, vectorised) for the mannequin. Points are arrays (..., 3) [m].

Distances are exact for the round cone and approximate (first order) for ellipsoids and lofts; the
mannequin only needs their zero sets to be smooth and their gradients to point outward.
"""

from __future__ import annotations

import numpy as np


def smin(a: np.ndarray, b: np.ndarray, k: float) -> np.ndarray:
    """Polynomial smooth minimum (C1) with blend width ``k`` [m]; equals min(a, b) when |a - b| >= k."""
    h = np.clip(0.5 + 0.5 * (b - a) / k, 0.0, 1.0)
    return b * (1.0 - h) + a * h - k * h * (1.0 - h)


def smax(a: np.ndarray, b: np.ndarray, k: float) -> np.ndarray:
    """Polynomial smooth maximum (C1): ``-smin(-a, -b, k)``."""
    return -smin(-a, -b, k)


def round_cone(p: np.ndarray, a, b, ra: float, rb: float) -> np.ndarray:
    """Exact distance to the convex hull of a sphere (centre ``a``, radius ``ra``) and another (``b``, ``rb``).

    Inigo Quilez's ``sdRoundCone(p, a, b, r1, r2)``.
    """
    a = np.asarray(a, dtype=np.float64)
    b = np.asarray(b, dtype=np.float64)
    ba = b - a
    l2 = float(ba @ ba)
    rr = ra - rb
    a2 = l2 - rr * rr
    il2 = 1.0 / l2
    pa = p - a
    y = pa @ ba
    z = y - l2
    xv = pa * l2 - y[..., None] * ba
    x2 = np.einsum("...i,...i->...", xv, xv)
    y2 = y * y * l2
    z2 = z * z * l2
    k = np.sign(rr) * rr * rr * x2
    out = (np.sqrt(x2 * a2 * il2) + y * rr) * il2 - ra
    out = np.where(np.sign(z) * a2 * z2 > k, np.sqrt(np.maximum(x2 + z2, 0.0)) * il2 - rb, out)
    out = np.where(np.sign(y) * a2 * y2 < k, np.sqrt(np.maximum(x2 + y2, 0.0)) * il2 - ra, out)
    return out


def ellipsoid(p: np.ndarray, center, axes: np.ndarray, radii) -> np.ndarray:
    """Approximate distance to an ellipsoid (Quilez's ``k0 (k0 - 1) / k1``).

    Args:
        center: (3,) [m]; axes: (3, 3) orthonormal rows (the ellipsoid's local x, y, z in world);
        radii: (3,) semi-axes [m] along those rows.
    """
    q = (p - np.asarray(center)) @ np.asarray(axes).T
    r = np.asarray(radii, dtype=np.float64)
    k0 = np.linalg.norm(q / r, axis=-1)
    k1 = np.linalg.norm(q / (r * r), axis=-1)
    return np.where(k1 > 1e-12, k0 * (k0 - 1.0) / np.maximum(k1, 1e-12), -r.min())


def elliptic_loft(p: np.ndarray, section, y_bottom: float, y_top: float, cap_k: float) -> np.ndarray:
    """Distance-like function of a loft of egg-shaped horizontal sections, capped top and bottom.

    ``section(y)`` returns ``(a, b_front, b_back, z_center)`` arrays: semi-width along x, front (+z)
    and back (-z) semi-depths, and the section centre's z [m]. The section is two half ellipses
    joined at z = z_center (C1 there). Caps are smooth-max'ed with blend ``cap_k`` [m].
    """
    y = np.clip(p[..., 1], y_bottom, y_top)
    a, bf, bb, zc = section(y)
    dz = p[..., 2] - zc
    b = np.where(dz >= 0.0, bf, bb)
    x = p[..., 0]
    k0 = np.sqrt((x / a) ** 2 + (dz / b) ** 2)
    k1 = np.sqrt((x / (a * a)) ** 2 + (dz / (b * b)) ** 2)
    lateral = np.where(k1 > 1e-12, k0 * (k0 - 1.0) / np.maximum(k1, 1e-12), -np.minimum(a, b))
    d = smax(lateral, y_bottom - p[..., 1], cap_k)
    return smax(d, p[..., 1] - y_top, cap_k)
