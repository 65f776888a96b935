"""Garment meshes: triangle quality, matched seams, level mappings, Cloth conversion (pure numpy).

References and tolerances:
* quality: Triangle is asked for a 30° minimum angle; with the boundary vertices fixed (no Steiner
  points on seams) its guarantee holds away from the outline, so we require >= 28° everywhere (the
  shipped outlines have no corner sharper than 45°, so nothing forces a smaller angle) and print the
  reached minimum per panel;
* seams: both edges of a seam are split into the same n pieces at equal arc-length fractions, so the
  k-th rest-space segment of one side differs from the k-th of the other by at most |La − Lb|/n plus
  the arc-length inversion error (a 1024-piece polyline: ≤ 1e-6 m for these curves);
* level mappings are linear interpolation in each panel's rest space: a flat placement (affine map of
  the panel) is reproduced to float64 round-off (1e-12 m); a curved one (cylinder, cone) within
  Σ|w|·M·d²/2 (Taylor remainder; M = the placement's second-derivative bound, d = the largest
  distance from the vertex to the corners of its triangle), i.e. O(h²): halving the coarse edge
  length divides the RMS error by ~4 (we require > 3).
"""

import numpy as np
import pytest

from clothsim import garments
from clothsim.garments import pattern_from_dict

LEVELS = (0.04, 0.02, 0.01, 0.005)
_cache = {}


def _hier(name):
    if name not in _cache:
        _cache[name] = garments.load_shipped(name).hierarchy(LEVELS)
    return _cache[name]


@pytest.mark.parametrize("name", garments.shipped())
def test_quality_and_seams_every_level(name):
    """Min angle >= 28° per panel at 40, 20, 10 and 5 mm; seams matched vertex for vertex with equal
    rest-space segment lengths; mean edge length within 25 % of the target."""
    h = _hier(name)
    pat = h.pattern
    for lev, target in enumerate(h.edge_lengths):
        m = h.level(lev)
        print(f"\n{name} h={target * 1000:.0f} mm: {m.vertex_count} vertices, {len(m.triangles)} triangles, "
              f"min angle per panel " + ", ".join(f"{p} {a:.1f}°" for p, a in zip(m.panel_names, m.min_angle)))
        assert m.min_angle.min() >= 28.0
        assert np.allclose(m.triangle_angles().sum(axis=1), 180.0)
        e = m.triangles
        lengths = np.linalg.norm(m.panel_xy[e[:, [1, 2, 0]]] - m.panel_xy[e], axis=2)
        assert abs(lengths.mean() / target - 1.0) < 0.25
        # every rest triangle is counter-clockwise in its panel (outside of the garment = +z of the panel)
        a, b, c = (m.panel_xy[e[:, k]] for k in range(3))
        assert np.all((b - a)[:, 0] * (c - a)[:, 1] - (b - a)[:, 1] * (c - a)[:, 0] > 0)
        for s in pat.seams:
            va, vb = m.edge_vertices[(s.a_panel, s.a_edge)], m.edge_vertices[(s.b_panel, s.b_edge)]
            assert len(va) == len(vb) >= 2
            if s.orientation == "reversed":
                vb = vb[::-1]
            la = np.linalg.norm(np.diff(m.panel_xy[va], axis=0), axis=1)
            lb = np.linalg.norm(np.diff(m.panel_xy[vb], axis=0), axis=1)
            La = pat.panels[s.a_panel].edges[s.a_edge].length
            Lb = pat.panels[s.b_panel].edges[s.b_edge].length
            assert np.abs(la - lb).max() <= abs(La - Lb) / len(la) + 1e-6
            assert np.all(m.panel_id[va] == s.a_panel) and np.all(m.panel_id[vb] == s.b_panel)
        # every listed seam pair joins two different panels' (or edges') boundary vertices, no duplicates
        assert len(np.unique(np.sort(m.seams, axis=1), axis=0)) == len(m.seams)


def test_levels_are_lazy():
    h = garments.load_shipped("cape").hierarchy()
    assert len(h.levels) == 4 and h.built() == []
    assert h.levels[0].edge_length == 0.04 and h.built() == [0]
    h.mapping(1, 0)
    assert h.built() == [0, 1]  # the finest (5 mm) level is never built unless asked for


def _bound(h, mp, fine_level, coarse_level):
    """Per-vertex bound Σ|w|·M·d²/2 for interpolating the placement of ``fine_level``'s vertices."""
    fine, coarse = h.level(fine_level), h.level(coarse_level)
    out = np.zeros(fine.vertex_count)
    for pi, panel in enumerate(h.pattern.panels):
        sel = fine.panel_id == pi
        M = panel.placement.second_derivative_bound(coarse.panel_xy[coarse.panel_id == pi])
        d = np.linalg.norm(coarse.panel_xy[mp.vertices[sel]] - fine.panel_xy[sel][:, None, :], axis=2).max(axis=1)
        out[sel] = np.abs(mp.weights[sel]).sum(axis=1) * M * d**2 / 2
    return out


@pytest.mark.parametrize("name", garments.shipped())
def test_level_mappings(name):
    """prolong(coarse placed positions) vs fine placed positions, and restrict back, at 40/20/10 mm."""
    h = _hier(name)
    flat = all(p.placement.wrap is None for p in h.pattern.panels)
    rms = {}
    for coarse, fine in ((0, 1), (1, 2), (0, 2)):
        mp = h.mapping(fine, coarse)
        fm, cm = h.level(fine), h.level(coarse)
        # same panel, weights sum to one, small extrapolation only (boundary vertices beyond a chord)
        assert np.all(cm.triangle_panel[mp.triangle] == fm.panel_id)
        assert np.allclose(mp.weights.sum(axis=1), 1.0, atol=1e-12)
        assert mp.weights.min() > -0.1
        err = np.linalg.norm(mp.prolong(cm.vertices) - fm.vertices, axis=1)
        err_r = np.linalg.norm(h.restrict(fm.vertices, fine, coarse) - cm.vertices, axis=1)
        assert np.allclose(mp.matrix() @ cm.vertices, mp.prolong(cm.vertices), atol=1e-12)
        rms[(coarse, fine)] = float(np.sqrt(np.mean(err**2)))
        print(f"\n{name} {coarse}->{fine}: prolong max {err.max():.2e} m, rms {rms[(coarse, fine)]:.2e} m; "
              f"restrict max {err_r.max():.2e} m")
        if flat:
            assert err.max() < 1e-12 and err_r.max() < 1e-12
        else:
            assert np.all(err <= _bound(h, mp, fine, coarse) + 1e-12)
            assert np.all(err_r <= _bound(h, h.mapping(coarse, fine), coarse, fine) + 1e-12)
    if not flat:
        assert rms[(0, 2)] / rms[(1, 2)] > 3.0  # O(h²): 40 mm → 20 mm coarse level, ~4x smaller error


def test_grain_and_cloth():
    """rest_uv = panel coordinates turned so u runs along the grain; to_cloth carries seams and pins."""
    sq = [[0, 0], [0.3, 0], [0.3, 0.2], [0, 0.2]]
    edges = [{"name": n, "points": [sq[i], sq[(i + 1) % 4]]} for i, n in enumerate(("b", "r", "t", "l"))]
    d = {"name": "g", "panels": [{"name": "p", "grain": 30.0, "edges": edges, "pin_edges": ["t"],
                                  "placement": {"rotation": [90.0, 0.0, 0.0], "translation": [0.0, 1.0, 0.0]}}]}
    m = pattern_from_dict(d).mesh(0.05)
    g = np.radians(30.0)
    assert np.allclose(m.rest_uv[:, 0], m.panel_xy @ [np.cos(g), np.sin(g)], atol=1e-12)
    assert np.allclose(m.rest_uv[:, 1], m.panel_xy @ [-np.sin(g), np.cos(g)], atol=1e-12)
    # rotation (90° about x) maps panel (x, y) to world (x, 1, y): a rigid placement
    assert np.allclose(m.vertices, np.column_stack([m.panel_xy[:, 0], np.ones(m.vertex_count), m.panel_xy[:, 1]]),
                       atol=1e-12)
    assert np.allclose(m.panel_xy[m.pins, 1], 0.2)
    cloth = m.to_cloth("silk")
    assert cloth.fabric.name == "silk" and np.array_equal(cloth.pins, m.pins)
    assert np.allclose(cloth.pin_targets, m.vertices[m.pins])
    shirt = garments.load_shipped("tshirt").mesh(0.04)
    c = shirt.to_cloth()
    assert c.fabric.name == "jersey" and np.array_equal(c.seams, shirt.seams) and len(c.pins) == 0
    assert np.allclose(c.rest_uv, shirt.rest_uv)
