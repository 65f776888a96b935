"""The parametric mannequin: a smooth, watertight body built from body measurements.

How it is built
---------------
1. :class:`BodyShape` turns :class:`Measurements` into a signed-distance-like function ``F(p)`` (negative
   inside): a torso lofted from egg-shaped horizontal sections whose radii are natural cubic-spline (C2) functions of
   height, with neck, head, arms, hands, legs and feet as round cones and ellipsoids, all joined by a C1
   smooth union. The torso's chest, waist and hip sections are scaled (a fixed-point iteration on the
   section's convex-hull perimeter, i.e. what a tape measure reads) so that the body has exactly the
   requested circumferences.
2. The *template* mesh is made once, for the default measurements: marching cubes (scikit-image) of
   ``F`` on a 13 mm grid, then tangential relaxation with re-projection onto ``F = 0`` for well-shaped
   triangles. Skin weights are computed on the template (part labels from the nearest primitive,
   diffused over the mesh graph, four largest kept).
3. A body of other measurements reuses the template's topology: every template vertex is moved by the
   blend (with its skin weights) of per-bone affine maps from the default skeleton to the new one, then
   projected onto the new ``F = 0`` by a fixed number of Newton steps. Both stages are smooth functions
   of the measurements, so a small change of a measurement moves every vertex by a small, proportionate
   amount, the triangles stay the same and the mesh stays closed.

Conventions: metres, Y up, feet on y = 0, the body faces +Z, +X is the body's left, A-pose (arms 45
degrees down from horizontal).
"""

from __future__ import annotations

import functools
import math

import numpy as np
from scipy.interpolate import CubicSpline

from ..errors import InputError
from .measurements import Measurements
from .model import Avatar
from .sdf import ellipsoid, elliptic_loft, round_cone, smax, smin

__all__ = ["BodyShape", "mannequin", "JOINT_NAMES", "JOINT_PARENTS", "TEMPLATE_GRID_STEP"]

JOINT_NAMES = ["pelvis", "spine", "chest", "neck", "head",
               "shoulder_l", "elbow_l", "wrist_l", "shoulder_r", "elbow_r", "wrist_r",
               "hip_l", "knee_l", "ankle_l", "hip_r", "knee_r", "ankle_r"]
_PARENT_NAMES = {"spine": "pelvis", "chest": "spine", "neck": "chest", "head": "neck",
                 "shoulder_l": "chest", "elbow_l": "shoulder_l", "wrist_l": "elbow_l",
                 "shoulder_r": "chest", "elbow_r": "shoulder_r", "wrist_r": "elbow_r",
                 "hip_l": "pelvis", "knee_l": "hip_l", "ankle_l": "knee_l",
                 "hip_r": "pelvis", "knee_r": "hip_r", "ankle_r": "knee_r"}
JOINT_PARENTS = [-1 if n == "pelvis" else JOINT_NAMES.index(_PARENT_NAMES[n]) for n in JOINT_NAMES]

TEMPLATE_GRID_STEP = 0.013  # marching-cubes voxel [m]: ~28k triangles at the default size
ARM_ANGLE_DEG = 45.0  # A-pose: arms this far below horizontal
_NEWTON_STEPS = 6
_NEWTON_MAX_STEP = 0.01  # [m] per Newton step
_CULL_MARGIN = 0.08  # [m]: primitives are evaluated exactly this far outside their bounding boxes

# default torso sections as fractions t of the crotch -> neck-base span, with (a, b_front, b_back, z_centre) [m]
# at the default measurements; the group decides which circumference scale applies.
_TORSO_ROWS = [
    # t      a      bf     bb     zc     scale group
    (0.000, 0.150, 0.080, 0.105, -0.010, "hip"),
    (0.149, 0.172, 0.098, 0.128, -0.012, "hip"),
    (0.280, 0.158, 0.095, 0.108, -0.008, "hip_waist"),
    (0.403, 0.136, 0.092, 0.090, 0.000, "waist"),
    (0.530, 0.146, 0.104, 0.094, 0.000, "waist_chest"),
    (0.657, 0.156, 0.120, 0.100, 0.000, "chest"),
    (0.800, 0.152, 0.104, 0.098, -0.005, "chest"),
    (0.925, None, 0.074, 0.076, -0.012, "chest"),  # a from the shoulder width
    (1.000, None, None, None, -0.018, "neck"),  # a, b from the neck circumference
]
_T_HIP, _T_WAIST, _T_CHEST, _T_SHOULDER = 0.149, 0.403, 0.657, 0.925


class BodyShape:
    """The implicit body for one set of measurements: ``sdf(p)``, joints and landmarks.

    Args:
        m: the measurements.
        scales: (hip, waist, chest) multipliers of the torso sections; None: calibrated so that the
            convex-hull perimeters of the sections at the hip, waist and chest heights equal
            ``m.hips``, ``m.waist`` and ``m.chest``.
        bottom_offset: torso bottom minus inseam [m]; None: calibrated so that the crotch (the lowest
            skin point on the body's mid-plane x = 0 between the legs) is at ``m.inseam``.
    """

    def __init__(self, m: Measurements, scales=None, bottom_offset: float | None = None):
        self.m = m
        H, inseam = m.height, m.inseam
        self.y_crotch = inseam
        self.y_neck = 0.853 * H
        span = self.y_neck - self.y_crotch
        self.span = span
        self.y_hip = inseam + _T_HIP * span
        self.y_waist = inseam + _T_WAIST * span
        self.y_chest = inseam + _T_CHEST * span
        self.y_shoulder = inseam + _T_SHOULDER * span
        self.y_knee = 0.615 * inseam
        self.y_ankle = 0.10 * inseam
        self.head_scale = math.sqrt(H / 1.70)
        self.r_neck = m.neck_circumference / (2.0 * math.pi)
        self.limb_scale = math.sqrt(m.chest / 0.92)
        self.leg_scale = m.thigh_circumference / (0.56 * 0.98)
        self._build_skeleton()
        self.bottom_offset = 0.005 if bottom_offset is None else float(bottom_offset)
        if scales is None:
            scales = self._calibrate(calibrate_bottom=bottom_offset is None)
        self.scales = tuple(float(s) for s in scales)
        self._build_torso()

    # ------------------------------------------------------------------ skeleton
    def _arm_angle(self) -> float:
        """Arm angle below horizontal [rad]: 45 degrees, raised (smoothly in the measurements) when a broad chest
        would bring the inner arm within 3 cm of the torso at chest height (not below chest 1.15 m at default sizes)."""
        m = self.m
        a_chest = max(r[1] for r in _TORSO_ROWS if r[5] == "chest" and r[1] is not None) * self._initial_scales()[2] ** 0.6
        xs, ys = m.shoulder / 2.0 - 0.045, self.y_shoulder - 0.03
        r_arm = 0.046 * self.limb_scale
        dy = ys - self.y_chest
        def inner(th):  # x of the arm's inner surface at chest height; falls as th grows
            return xs + dy / math.tan(th) - r_arm / math.sin(th)

        lo, hi = math.radians(20.0), math.radians(ARM_ANGLE_DEG)
        if inner(hi) >= a_chest + 0.03:
            return hi
        for _ in range(60):  # bisection: continuous in the measurements
            mid = 0.5 * (lo + hi)
            lo, hi = (mid, hi) if inner(mid) >= a_chest + 0.03 else (lo, mid)
        th = lo
        return th

    def _build_skeleton(self) -> None:
        m, H = self.m, self.m.height
        th = self._arm_angle()
        self.arm_angle = th
        hip_scale = m.hips / 0.98
        j = {}
        j["pelvis"] = np.array([0.0, self.y_hip, -0.01])
        j["spine"] = np.array([0.0, 0.5 * (self.y_hip + self.y_waist), -0.03])
        j["chest"] = np.array([0.0, 0.5 * (self.y_waist + self.y_chest), -0.03])
        j["neck"] = np.array([0.0, self.y_neck, -0.02])
        j["head"] = np.array([0.0, self.y_neck + 0.075 * self.head_scale, -0.01])
        for side, sx in (("l", 1.0), ("r", -1.0)):
            d = np.array([sx * math.cos(th), -math.sin(th), 0.0])
            js = np.array([sx * (m.shoulder / 2.0 - 0.045), self.y_shoulder - 0.03, -0.01])
            j[f"shoulder_{side}"] = js
            j[f"elbow_{side}"] = js + 0.55 * m.arm_length * d
            j[f"wrist_{side}"] = js + m.arm_length * d
            r_thigh = m.thigh_circumference / (2.0 * math.pi)
            hip_x = max(0.085 * math.sqrt(hip_scale), r_thigh + 0.01)  # thighs 2 cm apart at the top
            j[f"hip_{side}"] = np.array([sx * hip_x, self.y_crotch + 0.075, 0.0])
            j[f"knee_{side}"] = np.array([sx * 0.09 * math.sqrt(hip_scale), self.y_knee, 0.01])
            j[f"ankle_{side}"] = np.array([sx * 0.092 * math.sqrt(hip_scale), self.y_ankle, -0.015])
        self.joints = j
        self.arm_dir = {"l": np.array([math.cos(th), -math.sin(th), 0.0]),
                        "r": np.array([-math.cos(th), -math.sin(th), 0.0])}
        self.foot_scale = H / 1.70

    # ------------------------------------------------------------------ torso
    def _group_scale(self, group: str, scales) -> float:
        s_hip, s_waist, s_chest = scales
        return {"hip": s_hip, "waist": s_waist, "chest": s_chest, "hip_waist": math.sqrt(s_hip * s_waist),
                "waist_chest": math.sqrt(s_waist * s_chest), "neck": 1.0}[group]

    def _build_torso(self) -> None:
        ys, cols = [], []
        for t, a, bf, bb, zc, group in _TORSO_ROWS:
            s = self._group_scale(group, self.scales)
            if group == "neck":
                a, bf, bb = 1.05 * self.r_neck, self.r_neck, self.r_neck
            else:
                # a broader chest grows deeper more than wider (keeps the armpits clear of the arms)
                sa, sb = (s ** 0.6, s ** 1.4) if group == "chest" else (s, s)
                if a is None:  # shoulder row: the torso reaches the deltoids
                    a = self.m.shoulder / 2.0 - 0.05
                else:
                    a = a * sa
                bf, bb = bf * sb, bb * sb
            ys.append(self.y_crotch + t * self.span)
            cols.append((a, bf, bb, zc))
        self._torso_interp = CubicSpline(np.array(ys), np.array(cols), axis=0, bc_type="natural", extrapolate=True)
        self.torso_bottom = self.y_crotch + self.bottom_offset
        self.torso_top = self.y_neck + 0.01
        self._build_primitives()

    def _torso_section(self, y):
        v = self._torso_interp(y)
        return v[..., 0], v[..., 1], v[..., 2], v[..., 3]

    def _initial_scales(self) -> tuple[float, float, float]:
        # ellipse perimeters of the default rows (Ramanujan), as a first guess of the scale
        def perim(a, bf, bb):
            def half(a, b):
                return 0.5 * math.pi * (3 * (a + b) - math.sqrt((3 * a + b) * (a + 3 * b)))
            return half(a, bf) + half(a, bb)

        rows = {r[5]: r for r in _TORSO_ROWS if r[0] in (_T_HIP, _T_WAIST, _T_CHEST)}
        return (self.m.hips / perim(*rows["hip"][1:4]), self.m.waist / perim(*rows["waist"][1:4]),
                self.m.chest / perim(*rows["chest"][1:4]))

    def _calibrate(self, iterations: int = 5, calibrate_bottom: bool = True) -> tuple[float, float, float]:
        scales = np.array(self._initial_scales())
        targets = np.array([self.m.hips, self.m.waist, self.m.chest])
        heights = [self.y_hip, self.y_waist, self.y_chest]
        for _ in range(iterations):
            self.scales = tuple(scales)
            self._build_torso()
            got = np.array([self.section_perimeter(y) for y in heights])
            scales = scales * targets / got
            if calibrate_bottom:
                self.bottom_offset += self.y_crotch - self.crotch_height()
        return tuple(scales)

    def crotch_height(self, samples: int = 25) -> float:
        """Height [m] of the lowest skin point on the mid-plane x = 0 below the torso (the crotch point)."""
        zc = float(self._torso_section(np.array(self.y_hip))[3])
        z = zc + np.linspace(-0.06, 0.06, samples)
        ys = np.linspace(self.y_hip, 0.5 * self.y_crotch, 121)
        p = np.zeros((samples, len(ys), 3))
        p[..., 1] = ys
        p[..., 2] = z[:, None]
        f = self.sdf(p.reshape(-1, 3)).reshape(samples, len(ys))
        first = np.argmax(f >= 0.0, axis=1)
        ok = (f[np.arange(samples), first] >= 0.0) & (first > 0)
        if not ok.any():
            raise InputError("mannequin: no gap between the legs below the torso; check thigh and hips")
        z, first = z[ok], first[ok]
        hi, lo = ys[first - 1], ys[first]  # hi inside, lo outside

        def at(y):
            return self.sdf(np.stack([np.zeros_like(y), y, z], axis=1))

        for _ in range(10):
            mid = 0.5 * (lo + hi)
            inside = at(mid) < 0.0
            hi = np.where(inside, mid, hi)
            lo = np.where(inside, lo, mid)
        return float(0.5 * (lo + hi).min())

    def section_perimeter(self, y: float, rays: int = 256) -> float:
        """Convex-hull perimeter [m] of the body's horizontal section at height ``y`` around the body axis."""
        from scipy.spatial import ConvexHull

        pts = self.section_points(y, rays)
        return float(ConvexHull(pts).area)  # in 2D, ConvexHull.area is the perimeter

    def section_points(self, y: float, rays: int = 256) -> np.ndarray:
        """Points (rays, 2) [(x, z) m] where rays from the torso centre first leave the body at height ``y``."""
        zc = float(self._torso_section(np.array(y))[3])
        ang = np.linspace(0.0, 2.0 * np.pi, rays, endpoint=False)
        dirs = np.stack([np.cos(ang), np.sin(ang)], axis=1)
        radii = np.linspace(0.0, 0.5, 101)
        p = np.zeros((rays, len(radii), 3))
        p[..., 0] = dirs[:, None, 0] * radii
        p[..., 1] = y
        p[..., 2] = zc + dirs[:, None, 1] * radii
        f = self.sdf(p.reshape(-1, 3)).reshape(rays, len(radii))
        if np.any(f[:, 0] >= 0.0):
            raise InputError(f"mannequin: the torso centre at y = {y:.3f} m is not inside the body")
        first = np.argmax(f >= 0.0, axis=1)
        if np.any(f[np.arange(rays), first] < 0.0):
            raise InputError(f"mannequin: the section at y = {y:.3f} m is wider than 0.5 m")
        lo, hi = radii[first - 1], radii[first]

        def at(r):
            return self.sdf(np.stack([dirs[:, 0] * r, np.full(rays, y), zc + dirs[:, 1] * r], axis=1))

        for _ in range(8):  # bisection: 5 mm / 2^8 = 0.02 mm
            mid = 0.5 * (lo + hi)
            inside = at(mid) < 0.0
            lo = np.where(inside, mid, lo)
            hi = np.where(inside, hi, mid)
        f_lo, f_hi = at(lo), at(hi)
        r = lo - f_lo * (hi - lo) / np.where(f_hi - f_lo > 0.0, f_hi - f_lo, 1.0)  # then the secant root
        return np.stack([dirs[:, 0] * r, zc + dirs[:, 1] * r], axis=1)

    # ------------------------------------------------------------------ parts
    def parts(self, p: np.ndarray) -> dict[str, tuple[str, np.ndarray]]:
        """Distance of ``p`` (..., 3) to every primitive: name -> (joint that moves it, distance [m]).

        Each primitive is evaluated exactly only inside its bounding box grown by ``_CULL_MARGIN``; farther
        away its value is the (smaller, still >= the margin) distance to that box, which leaves the
        body function unchanged wherever it is below ``_CULL_MARGIN - blend``, i.e. near the skin.
        """
        shp = p.shape[:-1]
        flat = p.reshape(-1, 3)
        out = {}
        for name, (joint, fn, lo, hi) in self._primitives.items():
            lo_m, hi_m = lo - _CULL_MARGIN, hi + _CULL_MARGIN
            gap = np.maximum(np.maximum(lo_m - flat, flat - hi_m), 0.0)
            inside = ~np.any(gap > 0.0, axis=1)
            d = np.linalg.norm(gap, axis=1) + _CULL_MARGIN
            if inside.any():
                d[inside] = fn(flat[inside])
            out[name] = (joint, d.reshape(shp))
        return out

    def _build_primitives(self) -> None:
        j, hs, fs, ls = self.joints, self.head_scale, self.foot_scale, self.limb_scale
        prims = {}

        def cone(a, b, ra, rb):
            a, b = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
            r = max(ra, rb)
            return (lambda q: round_cone(q, a, b, ra, rb), np.minimum(a, b) - r, np.maximum(a, b) + r)

        def ell(c, axes, radii):
            c = np.asarray(c, dtype=np.float64)
            r = float(np.max(radii))
            return (lambda q: ellipsoid(q, c, axes, radii), c - r, c + r)

        ys = np.linspace(self.torso_bottom, self.torso_top, 64)
        a, bf, bb, zc = self._torso_section(ys)
        tlo = np.array([-a.max(), self.torso_bottom, (zc - bb).min()])
        thi = np.array([a.max(), self.torso_top, (zc + bf).max()])
        prims["torso"] = ("torso", lambda q: elliptic_loft(q, self._torso_section, self.torso_bottom,
                                                           self.torso_top, 0.02), tlo, thi)
        yn, rn = self.y_neck, self.r_neck
        prims["neck"] = ("neck",) + cone((0.0, yn - 0.04, -0.02), (0.0, yn + 0.075 * hs, -0.005), rn, 0.93 * rn)
        top = self.m.height
        prims["cranium"] = ("head",) + ell((0.0, top - 0.105 * hs, 0.0), np.eye(3), np.array([0.076, 0.105, 0.097]) * hs)
        prims["face"] = ("head",) + ell((0.0, top - 0.162 * hs, 0.03 * hs), np.eye(3), np.array([0.056, 0.068, 0.07]) * hs)
        r_thigh = self.m.thigh_circumference / (2.0 * math.pi)
        lg = self.leg_scale
        for s, sx in (("l", 1.0), ("r", -1.0)):
            d = self.arm_dir[s]
            n = np.array([-d[1], d[0], 0.0]) * sx  # in the arm plane, perpendicular to the arm
            js, je, jw = j[f"shoulder_{s}"], j[f"elbow_{s}"], j[f"wrist_{s}"]
            prims[f"deltoid_{s}"] = (f"shoulder_{s}",) + ell(js + np.array([sx * 0.005, 0.008, 0.0]), np.eye(3),
                                                             np.array([0.05, 0.046, 0.052]) * ls)
            prims[f"upperarm_{s}"] = (f"shoulder_{s}",) + cone(js, je, 0.046 * ls, 0.035 * ls)
            prims[f"forearm_{s}"] = (f"elbow_{s}",) + cone(je, jw, 0.036 * ls, 0.026 * ls)
            axes = np.stack([d, n, np.array([0.0, 0.0, 1.0])])
            prims[f"hand_{s}"] = (f"wrist_{s}",) + ell(jw + 0.085 * hs * d, axes, np.array([0.092, 0.027, 0.044]) * hs)
            jh, jk, ja = j[f"hip_{s}"], j[f"knee_{s}"], j[f"ankle_{s}"]
            prims[f"thigh_{s}"] = (f"hip_{s}",) + cone(jh, jk + np.array([0.0, 0.02, 0.0]), r_thigh, 0.054 * lg)
            calf = jk + np.array([0.0, -0.11 * fs, -0.012])
            prims[f"knee_{s}"] = (f"knee_{s}",) + cone(jk + np.array([0.0, 0.02, 0.0]), calf, 0.054 * lg, 0.056 * lg)
            prims[f"calf_{s}"] = (f"knee_{s}",) + cone(calf, ja, 0.056 * lg, 0.033 * lg)
            heel = np.array([ja[0], 0.034, ja[2] - 0.035 * fs])
            toe = np.array([ja[0] + sx * 0.012, 0.016, ja[2] + 0.185 * fs])
            prims[f"foot_{s}"] = (f"ankle_{s}",) + cone(heel, toe, 0.042, 0.024)
        self._primitives = prims

    def sdf(self, p: np.ndarray) -> np.ndarray:
        """Signed-distance-like body function at points ``p`` (..., 3) [m]: < 0 inside, 0 on the skin."""
        q = self.parts(p)
        f = {k: v[1] for k, v in q.items()}
        body = smin(f["torso"], f["neck"], 0.03)
        body = smin(body, smin(f["cranium"], f["face"], 0.04), 0.03)
        for s in ("l", "r"):
            arm = smin(smin(smin(f[f"deltoid_{s}"], f[f"upperarm_{s}"], 0.03), f[f"forearm_{s}"], 0.008),
                       f[f"hand_{s}"], 0.03)
            body = smin(body, arm, 0.03)
            leg = smin(smin(smin(f[f"thigh_{s}"], f[f"knee_{s}"], 0.01), f[f"calf_{s}"], 0.01), f[f"foot_{s}"], 0.025)
            body = smin(body, leg, 0.02)
        return smax(body, -p[..., 1], 0.01)  # flat soles on the floor

    def gradient(self, p: np.ndarray, eps: float = 1e-6, f0: np.ndarray | None = None) -> np.ndarray:
        """Forward-difference gradient of :meth:`sdf` (step ``eps`` [m]), shape (..., 3)."""
        f0 = self.sdf(p) if f0 is None else f0
        g = np.empty(p.shape)
        for k in range(3):
            dp = np.zeros(3)
            dp[k] = eps
            g[..., k] = (self.sdf(p + dp) - f0) / eps
        return g

    def project(self, v: np.ndarray, steps: int = _NEWTON_STEPS) -> np.ndarray:
        """Newton steps ``v -= F g / |g|^2`` (each at most 1 cm) towards ``F = 0``; a fixed count (smooth in v)."""
        v = v.copy()
        for _ in range(steps):
            f = self.sdf(v)
            g = self.gradient(v, f0=f)
            step = (f / np.maximum(np.einsum("ij,ij->i", g, g), 1e-12))[:, None] * g
            length = np.linalg.norm(step, axis=1, keepdims=True)
            v -= step * np.minimum(1.0, _NEWTON_MAX_STEP / np.maximum(length, 1e-300))
        return v

    def label_joints(self, p: np.ndarray) -> np.ndarray:
        """Index into JOINT_NAMES of the primitive nearest each point (the torso split by height)."""
        q = self.parts(p)
        names = list(q)
        dist = np.stack([q[k][1] for k in names], axis=1)
        best = np.argmin(dist, axis=1)
        joint_of = np.array([JOINT_NAMES.index(q[k][0]) if q[k][0] != "torso" else -1 for k in names])
        lab = joint_of[best]
        torso = lab < 0
        y = p[:, 1]
        by_height = np.where(y < 0.5 * (self.y_hip + self.y_waist), JOINT_NAMES.index("pelvis"),
                             np.where(y < 0.5 * (self.y_waist + self.y_chest), JOINT_NAMES.index("spine"),
                                      JOINT_NAMES.index("chest")))
        lab[torso] = by_height[torso]
        return lab

    def landmarks(self) -> dict[str, np.ndarray]:
        j, m = self.joints, self.m
        lm = {
            "head_top": np.array([0.0, m.height, 0.0]),
            "neck_base": np.array([0.0, self.y_neck, 0.0]),
            "shoulder_l": np.array([m.shoulder / 2.0, self.y_shoulder, 0.0]),
            "shoulder_r": np.array([-m.shoulder / 2.0, self.y_shoulder, 0.0]),
            "chest": np.array([0.0, self.y_chest, 0.0]),
            "waist": np.array([0.0, self.y_waist, 0.0]),
            "hip": np.array([0.0, self.y_hip, 0.0]),
            "crotch": np.array([0.0, self.y_crotch, 0.0]),
        }
        for s in ("l", "r"):
            for name in ("elbow", "wrist", "knee", "ankle"):
                lm[f"{name}_{s}"] = j[f"{name}_{s}"].copy()
        return lm

    def joint_array(self) -> np.ndarray:
        return np.stack([self.joints[n] for n in JOINT_NAMES])

    def bounds(self, margin: float = 0.03) -> tuple[np.ndarray, np.ndarray]:
        hs = self.head_scale
        ext = []
        for s in ("l", "r"):
            ext.append(self.joints[f"wrist_{s}"] + 0.2 * hs * self.arm_dir[s])
        xmax = max(abs(e[0]) for e in ext) + 0.06
        ymin = min(e[1] for e in ext) - 0.06
        lo = np.array([-xmax, min(0.0, ymin), -0.12 - 0.2 * self.scales[0]]) - margin
        hi = np.array([xmax, self.m.height, 0.25 * self.foot_scale + 0.1 * self.scales[2]]) + margin
        return lo, hi


# ---------------------------------------------------------------------------------- template


def _edges(tris: np.ndarray) -> np.ndarray:
    e = np.concatenate([tris[:, [0, 1]], tris[:, [1, 2]], tris[:, [2, 0]]])
    e = np.sort(e, axis=1)
    return np.unique(e, axis=0)


def _adjacency(tris: np.ndarray, n: int):
    import scipy.sparse as sp

    e = _edges(tris)
    a = sp.coo_matrix((np.ones(2 * len(e)), (np.r_[e[:, 0], e[:, 1]], np.r_[e[:, 1], e[:, 0]])), shape=(n, n)).tocsr()
    deg = np.asarray(a.sum(axis=1)).ravel()
    return a, deg


def _normals(v: np.ndarray, t: np.ndarray) -> np.ndarray:
    fn = np.cross(v[t[:, 1]] - v[t[:, 0]], v[t[:, 2]] - v[t[:, 0]])
    n = np.zeros_like(v)
    for k in range(3):
        np.add.at(n, t[:, k], fn)
    return n / np.maximum(np.linalg.norm(n, axis=1, keepdims=True), 1e-300)


def _sample_near_surface(fn, axes, coarse: int = 4) -> np.ndarray:
    """``fn`` on the grid ``axes`` (3 arrays), exact only near its zero set.

    ``fn`` is first sampled every ``coarse`` grid steps; fine samples whose trilinear interpolation
    is farther than ``2 * coarse * step`` from zero take the interpolated value (for a 1-Lipschitz,
    distance-like ``fn`` the interpolation error is below ``sqrt(3) * coarse * step``, so their sign is
    right and marching cubes produces the same surface).
    """
    from scipy.interpolate import RegularGridInterpolator

    h = axes[0][1] - axes[0][0]
    c_axes = [np.arange(a[0], a[-1] + coarse * h, coarse * h) for a in axes]
    cg = np.stack(np.meshgrid(*c_axes, indexing="ij"), axis=-1)
    cv = fn(cg.reshape(-1, 3)).reshape(cg.shape[:3])
    grid = np.stack(np.meshgrid(*axes, indexing="ij"), axis=-1).reshape(-1, 3)
    vol = RegularGridInterpolator(c_axes, cv)(grid)
    near = np.abs(vol) < 2.0 * coarse * h
    vol[near] = fn(grid[near])
    return vol.reshape(tuple(len(a) for a in axes))


def _template_cache_file():
    """``$CLOTHSIM_CACHE/avatars/mannequin-<key>.npz`` (or under ~/.cache/clothsim); the key hashes the code
    that builds the template and the scikit-image version, so a change of either builds it afresh."""
    import hashlib
    import os
    from pathlib import Path

    import skimage

    h = hashlib.sha256(skimage.__version__.encode())
    for f in ("mannequin.py", "sdf.py", "measurements.py"):
        h.update((Path(__file__).parent / f).read_bytes())
    root = os.environ.get("CLOTHSIM_CACHE")
    base = Path(root) if root else Path.home() / ".cache" / "clothsim"
    return base / "avatars" / f"mannequin-{h.hexdigest()[:16]}.npz"


@functools.lru_cache(maxsize=1)
def _template() -> dict:
    """Mesh, skin weights and skeleton of the default body: read from the on-disk cache when it is there
    (~0.1 s), else built (~6 s on 2 CPU cores) and cached; a cache that cannot be written is skipped."""
    try:
        path = _template_cache_file()
    except ImportError:
        path = None
    if path is not None and path.is_file():
        try:
            with np.load(path) as z:
                d = {k: z[k] for k in ("vertices", "triangles", "weights", "indices", "scales", "bottom_offset")}
            shape = BodyShape(Measurements(), scales=tuple(d["scales"]), bottom_offset=float(d["bottom_offset"]))
            return {"vertices": d["vertices"], "triangles": d["triangles"], "weights": d["weights"],
                    "indices": d["indices"], "shape": shape, "adjacency": _adjacency(d["triangles"], len(d["vertices"]))}
        except Exception:  # a damaged cache file: build afresh (and overwrite it)
            pass
    tpl = _build_template()
    if path is not None:
        try:
            from ..io import write_npz

            path.parent.mkdir(parents=True, exist_ok=True)
            write_npz(path, vertices=tpl["vertices"], triangles=tpl["triangles"], weights=tpl["weights"],
                      indices=tpl["indices"], scales=np.array(tpl["shape"].scales),
                      bottom_offset=np.array(tpl["shape"].bottom_offset))
        except OSError:
            pass
    return tpl


def _build_template() -> dict:
    """Marching cubes, relaxation and skin weights of the default body (see the module doc)."""
    import trimesh
    try:
        from skimage.measure import marching_cubes
    except ImportError as e:  # pragma: no cover - a declared dependency
        raise InputError("the mannequin needs scikit-image (pip install scikit-image) to build its mesh") from e

    shape = BodyShape(Measurements())
    h = TEMPLATE_GRID_STEP
    lo, hi = shape.bounds()
    axes = [np.arange(lo[k], hi[k] + h, h) for k in range(3)]
    vol = _sample_near_surface(shape.sdf, axes, coarse=4)
    verts, faces, _, _ = marching_cubes(vol, level=0.0, spacing=(h, h, h), allow_degenerate=False)
    verts = verts + lo
    mesh = trimesh.Trimesh(verts, faces, process=True)
    mesh.merge_vertices()
    mesh.update_faces(mesh.nondegenerate_faces())
    mesh.remove_unreferenced_vertices()
    parts = mesh.split(only_watertight=False)
    if len(parts) > 1:  # keep the body, drop specks
        mesh = max(parts, key=lambda m: len(m.faces))
    if mesh.volume < 0:
        mesh.invert()
    v = np.asarray(mesh.vertices, dtype=np.float64)
    t = np.asarray(mesh.faces, dtype=np.int64)
    adj, deg = _adjacency(t, len(v))
    v = _relax(v, t, (adj, deg), shape, iterations=5)
    # skin weights: one-hot part labels, diffused over the mesh graph (about 5 cm of blending), 4 largest
    lab = shape.label_joints(v)
    w = np.zeros((len(v), len(JOINT_NAMES)))
    w[np.arange(len(v)), lab] = 1.0
    for _ in range(40):
        w = 0.5 * w + 0.5 * (adj @ w) / deg[:, None]
    idx = np.argsort(-w, axis=1)[:, :4]
    ww = np.take_along_axis(w, idx, axis=1)
    ww[ww < 0.01] = 0.0
    ww /= ww.sum(axis=1, keepdims=True)
    return {"vertices": v, "triangles": t, "weights": ww, "indices": idx, "shape": shape, "adjacency": (adj, deg)}


def _relax(v: np.ndarray, t: np.ndarray, adjacency, shape: BodyShape, iterations: int, steps: int = 3) -> np.ndarray:
    """Tangential Laplacian relaxation, each step re-projected onto the skin: evens out the triangles while
    keeping every vertex on ``F = 0``. A fixed number of smooth steps, so the result is smooth in ``v``."""
    adj, deg = adjacency
    for _ in range(iterations):
        n = _normals(v, t)
        lap = adj @ v / deg[:, None] - v
        lap -= np.einsum("ij,ij->i", lap, n)[:, None] * n
        v = shape.project(v + 0.5 * lap, steps=steps)
    return v


# ---------------------------------------------------------------------------------- per-size map


def _rotation_between(u: np.ndarray, w: np.ndarray) -> np.ndarray:
    u = u / np.linalg.norm(u)
    w = w / np.linalg.norm(w)
    c = float(u @ w)
    axis = np.cross(u, w)
    s = float(np.linalg.norm(axis))
    if s < 1e-12:
        return np.eye(3)
    k = axis / s
    kx = np.array([[0.0, -k[2], k[1]], [k[2], 0.0, -k[0]], [-k[1], k[0], 0.0]])
    return np.eye(3) + s * kx + (1.0 - c) * (kx @ kx)


_BONE_END = {"shoulder": "elbow", "elbow": "wrist", "hip": "knee", "knee": "ankle"}


def _bone_maps(src: BodyShape, dst: BodyShape) -> tuple[np.ndarray, np.ndarray]:
    """Per joint affine maps x -> S_j x + c_j taking the source body's parts roughly onto the target's."""
    mats, offs = [], []
    ratio = np.array(dst.scales) / np.array(src.scales)
    vert = dst.span / src.span
    for name in JOINT_NAMES:
        p0, p1 = src.joints[name], dst.joints[name]
        base = name.split("_")[0]
        if name in ("pelvis", "spine", "chest"):
            r = {"pelvis": ratio[0], "spine": ratio[1], "chest": ratio[2]}[name]
            s = np.diag([r, vert, r])
        elif name == "neck":
            r = dst.r_neck / src.r_neck
            s = np.diag([r, 1.0, r])
        elif name == "head":
            s = np.eye(3) * dst.head_scale / src.head_scale
        elif base in _BONE_END:
            side = name.split("_")[1]
            e0, e1 = src.joints[f"{_BONE_END[base]}_{side}"], dst.joints[f"{_BONE_END[base]}_{side}"]
            u0, u1 = e0 - p0, e1 - p1
            l0, l1 = np.linalg.norm(u0), np.linalg.norm(u1)
            u = u0 / l0
            radial = dst.limb_scale / src.limb_scale if base in ("shoulder", "elbow") else dst.leg_scale / src.leg_scale
            stretch = (l1 / l0) * np.outer(u, u) + radial * (np.eye(3) - np.outer(u, u))
            s = _rotation_between(u0, u1) @ stretch
        elif base == "wrist":  # hands turn with the forearm and scale with the head
            side = name.split("_")[1]
            u0 = p0 - src.joints[f"elbow_{side}"]
            u1 = p1 - dst.joints[f"elbow_{side}"]
            s = _rotation_between(u0, u1) * (dst.head_scale / src.head_scale)
        else:  # ankle: feet scale with the height
            s = np.eye(3) * dst.foot_scale / src.foot_scale
        mats.append(s)
        offs.append(p1 - s @ p0)
    return np.stack(mats), np.stack(offs)


def mannequin(measurements: Measurements | None = None, **kwargs) -> Avatar:
    """The parametric mannequin for ``measurements`` (default: :class:`Measurements` ()).

    Keyword arguments are measurement overrides: ``mannequin(chest=1.0, height=1.80)``.

    Returns:
        An :class:`Avatar` in A-pose: one closed, consistently wound triangle mesh (same triangles for every
        size), 17 joints, 4 skin weights per vertex, landmarks.
    """
    if measurements is None:
        measurements = Measurements(**kwargs)
    elif kwargs:
        measurements = measurements.replace(**kwargs)
    if not isinstance(measurements, Measurements):
        raise InputError(f"mannequin: expected clothsim.avatar.Measurements, got {type(measurements).__name__}")
    tpl = _template()
    v, joints, landmarks = _sized(measurements)
    return Avatar(v.copy(), tpl["triangles"].copy(), JOINT_NAMES, JOINT_PARENTS, joints.copy(), tpl["weights"].copy(),
                  tpl["indices"].copy(), landmarks={k: p.copy() for k, p in landmarks.items()}, name="mannequin",
                  measurements=measurements)


@functools.lru_cache(maxsize=16)
def _sized(measurements: Measurements) -> tuple[np.ndarray, np.ndarray, dict]:
    """Vertices, joints and landmarks for one size (cached: ~3 s each on 2 CPU cores)."""
    tpl = _template()
    src: BodyShape = tpl["shape"]
    dst = src if measurements == src.m else BodyShape(measurements)
    # the same smooth pipeline for every size, the default included: map, project, relax
    s, c = _bone_maps(src, dst)
    v, w, idx = tpl["vertices"], tpl["weights"], tpl["indices"]
    mapped = np.zeros_like(v)
    for k in range(4):
        jk = idx[:, k]
        mapped += w[:, k:k + 1] * (np.einsum("nab,nb->na", s[jk], v) + c[jk])
    v = _relax(dst.project(mapped), tpl["triangles"], tpl["adjacency"], dst, iterations=5, steps=2)
    return v, dst.joint_array(), dst.landmarks()
