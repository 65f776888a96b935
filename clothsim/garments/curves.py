"""Outline edges of a pattern panel: straight lines, quadratic/cubic Bezier curves and circular arcs.

Every edge is a curve in the panel plane (metres) from its first point to its last point. The mesher
needs two things from it: its length, and points at given fractions of its arc length (so the two
edges of a seam get vertices at the same arc-length fractions, i.e. matched lengths).
"""

from __future__ import annotations

import math

import numpy as np

KINDS = {"line": 2, "quadratic": 3, "cubic": 4, "arc": 3}
"""Edge kinds and how many points each takes (arc: start, a point the arc passes through, end)."""

_DENSE = 1024  # polyline segments used to measure a curved edge and invert its arc length


class Edge:
    """One edge of a panel outline.

    Attributes:
        name: edge name (unique in its panel).
        kind: "line", "quadratic", "cubic" or "arc".
        points: (K, 2) float64 control points [m]; first = start, last = end.
    """

    def __init__(self, name: str, kind: str, points: np.ndarray):
        self.name = name
        self.kind = kind
        self.points = np.asarray(points, dtype=np.float64)
        self._arc = _arc_params(self.points) if kind == "arc" else None
        dense = self.evaluate(np.linspace(0.0, 1.0, 2 if kind == "line" else _DENSE + 1))
        seg = np.linalg.norm(np.diff(dense, axis=0), axis=1)
        self._dense = dense
        self._cum = np.concatenate([[0.0], np.cumsum(seg)])
        if self._arc is not None:
            self.length = self._arc[1] * abs(self._arc[3])  # radius * |sweep|, exact
        else:
            self.length = float(self._cum[-1])

    @property
    def start(self) -> np.ndarray:
        return self.points[0]

    @property
    def end(self) -> np.ndarray:
        return self.points[-1]

    @property
    def curved(self) -> bool:
        return self.kind != "line"

    def evaluate(self, t) -> np.ndarray:
        """Points (T, 2) [m] at curve parameters ``t`` in [0, 1] (not arc length for Beziers)."""
        t = np.asarray(t, dtype=np.float64)[:, None]
        p = self.points
        if self.kind == "line":
            return (1 - t) * p[0] + t * p[1]
        if self.kind == "quadratic":
            return (1 - t) ** 2 * p[0] + 2 * (1 - t) * t * p[1] + t**2 * p[2]
        if self.kind == "cubic":
            return (1 - t) ** 3 * p[0] + 3 * (1 - t) ** 2 * t * p[1] + 3 * (1 - t) * t**2 * p[2] + t**3 * p[3]
        center, radius, a0, sweep = self._arc
        ang = a0 + sweep * t[:, 0]
        return center + radius * np.stack([np.cos(ang), np.sin(ang)], axis=1)

    def at_fractions(self, s) -> np.ndarray:
        """Points (T, 2) [m] at arc-length fractions ``s`` in [0, 1] (0 = start, 1 = end, exact ends)."""
        s = np.asarray(s, dtype=np.float64)
        if self.kind == "line" or self.kind == "arc":
            out = self.evaluate(s)  # both are arc-length parametrised
        else:
            # invert the cumulative length of the dense polyline, then evaluate the true curve there
            t_dense = np.linspace(0.0, 1.0, len(self._cum))
            out = self.evaluate(np.interp(s * self._cum[-1], self._cum, t_dense))
        out[s <= 0.0] = self.points[0]
        out[s >= 1.0] = self.points[-1]
        return out

    def polyline(self, segments: int = 64) -> np.ndarray:
        """(segments+1, 2) points along the edge at equal arc-length steps (for drawing and checks)."""
        return self.at_fractions(np.linspace(0.0, 1.0, (1 if self.kind == "line" else segments) + 1))


def _arc_params(p: np.ndarray):
    """(center, radius, start angle, signed sweep) of the circle through p[0], p[1], p[2], going from
    p[0] through p[1] to p[2]. Raises ValueError when the three points are collinear."""
    (ax, ay), (bx, by), (cx, cy) = p
    d = 2.0 * (ax * (by - cy) + bx * (cy - ay) + cx * (ay - by))
    scale = max(float(np.ptp(p[:, 0])), float(np.ptp(p[:, 1])), 1e-12)
    if abs(d) < 1e-9 * scale * scale:
        raise ValueError("the three arc points are collinear (no circle passes through them)")
    a2, b2, c2 = ax * ax + ay * ay, bx * bx + by * by, cx * cx + cy * cy
    center = np.array([(a2 * (by - cy) + b2 * (cy - ay) + c2 * (ay - by)) / d,
                       (a2 * (cx - bx) + b2 * (ax - cx) + c2 * (bx - ax)) / d])
    a, b, c = p
    radius = float(np.linalg.norm(a - center))
    ang = [math.atan2(q[1] - center[1], q[0] - center[0]) for q in (a, b, c)]
    ccw_to_end = (ang[2] - ang[0]) % (2 * math.pi)
    ccw_to_mid = (ang[1] - ang[0]) % (2 * math.pi)
    sweep = ccw_to_end if ccw_to_mid <= ccw_to_end else ccw_to_end - 2 * math.pi
    return center, radius, ang[0], sweep
