"""Directional albedo E(mu, r) of the KHR_materials_sheen lobe, tabulated for the shader.

E(mu, r) = integral over the hemisphere of f_sheen(l, v) (N.L) dl with sheenColor = 1, for a view
at cos(theta_v) = mu and sheen roughness r, where f_sheen = D_Charlie(h) V_Charlie(l, v) exactly as
in shaders/include/brdf.glsl. The extension scales the base layer by 1 - max(sheenColor) E(N.V).
The table is computed once per process by midpoint quadrature in (cos theta_l, phi_l) (E is
smooth in l; 64 x 128 points give a few 1e-3 absolute accuracy, checked in the tests against a
finer grid).
"""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path

import numpy as np


def _sheen_l(x, alpha):
    t = (1.0 - alpha) ** 2
    a = 21.5473 + (25.3245 - 21.5473) * t
    b = 3.82987 + (3.32435 - 3.82987) * t
    c = 0.19823 + (0.16801 - 0.19823) * t
    d = -1.97760 + (-1.27393 + 1.97760) * t
    e = -4.32054 + (-4.85967 + 4.32054) * t
    return a / (1.0 + b * np.power(x, c)) + d * x + e


def _sheen_lambda(cos_theta, alpha):
    cos_theta = np.abs(cos_theta)
    return np.where(cos_theta < 0.5, np.exp(_sheen_l(cos_theta, alpha)),
                    np.exp(2.0 * _sheen_l(0.5, alpha) - _sheen_l(1.0 - cos_theta, alpha)))


def charlie_d(n_h, alpha):
    alpha = np.maximum(alpha, 1e-6)
    inv_r = 1.0 / alpha
    sin2h = np.maximum(1.0 - n_h * n_h, 0.0)
    return (2.0 + inv_r) * np.power(sin2h, 0.5 * inv_r) / (2.0 * np.pi)


def charlie_v(n_l, n_v, sheen_roughness):
    alpha = max(sheen_roughness, 1e-3) ** 2
    denom = (1.0 + _sheen_lambda(n_v, alpha) + _sheen_lambda(n_l, alpha)) * 4.0 * n_v * n_l
    return np.clip(1.0 / np.maximum(denom, 1e-6), 0.0, 1.0)


def sheen_albedo(mu: float, sheen_roughness: float, n_theta: int = 64, n_phi: int = 128) -> float:
    """E(mu, r): directional albedo of the sheen lobe with sheenColor = 1 (see module doc)."""
    r = min(max(sheen_roughness, 0.03), 1.0)
    mu = min(max(mu, 1e-4), 1.0)
    v = np.array([np.sqrt(1.0 - mu * mu), 0.0, mu])
    cos_l = (np.arange(n_theta) + 0.5) / n_theta           # uniform in cos theta: dl = dcos dphi
    phi = (np.arange(n_phi) + 0.5) / n_phi * 2.0 * np.pi
    c, p = np.meshgrid(cos_l, phi, indexing="ij")
    s = np.sqrt(1.0 - c * c)
    l = np.stack([s * np.cos(p), s * np.sin(p), c], axis=-1)
    h = l + v
    h /= np.linalg.norm(h, axis=-1, keepdims=True)
    f = charlie_d(h[..., 2], max(r * r, 1e-3)) * charlie_v(c, mu, r)
    return float((f * c).sum() * (1.0 / n_theta) * (2.0 * np.pi / n_phi))


@lru_cache(maxsize=4)
def sheen_albedo_table(size: int = 32, n_theta: int = 64, n_phi: int = 128) -> np.ndarray:
    """(size, size) float32 table: row j = sheen roughness (j + 0.5) / size, column i = mu = (i + 0.5) / size.

    Texel centres sit at the sample points, so linear filtering in the shader interpolates E.
    """
    grid = (np.arange(size) + 0.5) / size
    table = np.array([[sheen_albedo(mu, r, n_theta, n_phi) for mu in grid] for r in grid], dtype=np.float32)
    # Below sheen roughness ~0.1 the fitted visibility lets E exceed 1 at grazing mu (the fit is
    # not energy-conserving there); the albedo scaling 1 - max(sheenColor) E must stay >= 0.
    return np.clip(table, 0.0, 1.0)


TABLE_FILE = Path(__file__).resolve().parent / "data" / "sheen_albedo_32.npy"


@lru_cache(maxsize=1)
def stored_sheen_albedo_table() -> np.ndarray:
    """The table as shipped (render/data/sheen_albedo_32.npy); regenerate with ``python -m render.sheen``."""
    return np.load(TABLE_FILE).astype(np.float32)


if __name__ == "__main__":
    TABLE_FILE.parent.mkdir(exist_ok=True)
    np.save(TABLE_FILE, sheen_albedo_table())
    print(f"wrote {TABLE_FILE}")
