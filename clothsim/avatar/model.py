"""The skinned avatar: a closed triangle mesh, a joint hierarchy, skin weights and linear blend skinning.

Conventions (shared by every avatar, the mannequin and the converted MakeHuman body): metres, Y up,
feet on ``y = 0``, the body faces +Z, +X is the body's left; the rest pose is the pose the mesh is
modelled in. Joint frames are aligned with the world axes in the rest pose, so a joint rotation is
given in world axes, about the joint's rest position, and composes down the hierarchy.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from ..errors import InputError

__all__ = ["Avatar", "rotation_matrix"]


def rotation_matrix(rotation: Any, what: str = "rotation") -> np.ndarray:
    """A 3x3 rotation matrix from a rotation vector (3,) [rad, axis * angle] or a 3x3 matrix."""
    r = np.asarray(rotation, dtype=np.float64)
    if r.shape == (3, 3):
        if not np.all(np.isfinite(r)):
            raise InputError(f"{what}: the matrix has non-finite entries")
        if np.abs(r @ r.T - np.eye(3)).max() > 1e-6 or np.linalg.det(r) < 0.0:
            raise InputError(f"{what}: expected a proper rotation matrix (R R^T = I, det R = +1)")
        return r
    if r.shape != (3,):
        raise InputError(f"{what}: expected a rotation vector of shape (3,) [rad] or a 3x3 matrix, got shape {r.shape}")
    if not np.all(np.isfinite(r)):
        raise InputError(f"{what}: the rotation vector has non-finite entries {r.tolist()}")
    angle = float(np.linalg.norm(r))
    if angle == 0.0:
        return np.eye(3)
    k = r / angle
    kx = np.array([[0.0, -k[2], k[1]], [k[2], 0.0, -k[0]], [-k[1], k[0], 0.0]])
    return np.eye(3) + np.sin(angle) * kx + (1.0 - np.cos(angle)) * (kx @ kx)


class Avatar:
    """A skinned body: rest mesh, joints, skin weights and landmarks.

    Attributes:
        name: a label ("mannequin", "makehuman").
        vertices: rest-pose positions [m], shape (N, 3) float64.
        triangles: vertex indices, shape (M, 3) int64, counter-clockwise seen from outside.
        joint_names: J names; ``joint_parents[j]`` is the parent index, -1 for the root. Parents come
            before their children.
        joint_positions: rest positions [m], shape (J, 3).
        weights: skin weights, shape (N, 4) float64, non-negative, each row summing to 1.
        indices: joint index of each weight, shape (N, 4) int64 (unused slots have weight 0).
        landmarks: named points [m] for garment placement, each shape (3,).
        measurements: the measurements the body was built from (None for a scanned/modelled body).
    """

    def __init__(self, vertices, triangles, joint_names, joint_parents, joint_positions, weights, indices,
                 landmarks: Mapping[str, Any] | None = None, name: str = "avatar", measurements=None):
        self.name = name
        self.vertices = np.ascontiguousarray(vertices, dtype=np.float64)
        self.triangles = np.ascontiguousarray(triangles, dtype=np.int64)
        self.joint_names = list(joint_names)
        self.joint_parents = np.asarray(joint_parents, dtype=np.int64)
        self.joint_positions = np.ascontiguousarray(joint_positions, dtype=np.float64)
        self.weights = np.ascontiguousarray(weights, dtype=np.float64)
        self.indices = np.ascontiguousarray(indices, dtype=np.int64)
        self.landmarks = {k: np.asarray(v, dtype=np.float64) for k, v in (landmarks or {}).items()}
        self.measurements = measurements
        self._check()

    def _check(self) -> None:
        n, j = len(self.vertices), len(self.joint_names)
        where = f"Avatar {self.name!r}"
        if self.vertices.ndim != 2 or self.vertices.shape[1] != 3 or n == 0:
            raise InputError(f"{where}: vertices must have shape (N, 3) with N > 0, got {self.vertices.shape}")
        if self.triangles.ndim != 2 or self.triangles.shape[1] != 3 or len(self.triangles) == 0:
            raise InputError(f"{where}: triangles must have shape (M, 3) with M > 0, got {self.triangles.shape}")
        if self.triangles.min() < 0 or self.triangles.max() >= n:
            raise InputError(f"{where}: triangle indices must lie in [0, {n})")
        if len(set(self.joint_names)) != j:
            raise InputError(f"{where}: joint names are not unique")
        if self.joint_parents.shape != (j,) or self.joint_positions.shape != (j, 3):
            raise InputError(f"{where}: joint_parents must have shape ({j},) and joint_positions ({j}, 3)")
        for k, p in enumerate(self.joint_parents):
            if not -1 <= p < k:
                raise InputError(f"{where}: joint {self.joint_names[k]!r} has parent index {p}; "
                                 f"expected -1 (root) or an earlier joint")
        if self.weights.shape != (n, 4) or self.indices.shape != (n, 4):
            raise InputError(f"{where}: weights and indices must have shape ({n}, 4), got "
                             f"{self.weights.shape} and {self.indices.shape}")
        if self.indices.min() < 0 or self.indices.max() >= j:
            raise InputError(f"{where}: weight joint indices must lie in [0, {j})")
        if self.weights.min() < 0.0 or np.abs(self.weights.sum(axis=1) - 1.0).max() > 1e-6:
            raise InputError(f"{where}: skin weights must be non-negative and sum to 1 per vertex")

    # ------------------------------------------------------------------ properties
    @property
    def vertex_count(self) -> int:
        return len(self.vertices)

    @property
    def joint_count(self) -> int:
        return len(self.joint_names)

    def joint_index(self, name: str) -> int:
        try:
            return self.joint_names.index(name)
        except ValueError:
            raise InputError(f"Avatar {self.name!r}: no joint {name!r}; joints: {', '.join(self.joint_names)}") from None

    def height(self) -> float:
        """Rest-pose height [m] (top of the mesh; the feet are on y = 0)."""
        return float(self.vertices[:, 1].max() - self.vertices[:, 1].min())

    def section(self, y: float, vertices=None, near=(0.0, 0.0)) -> np.ndarray:
        """The closed loop of the horizontal cut of the mesh at height ``y`` [m] nearest to the point
        ``near`` = (x, z) [m] (default: the body axis), as (K, 2) points (x, z) [m].

        Garment placement reads body outlines from it (e.g. a skirt's waistband radius)."""
        mesh = self.to_trimesh(vertices)
        sec = mesh.section(plane_origin=[0.0, float(y), 0.0], plane_normal=[0.0, 1.0, 0.0])
        if sec is None:
            lo, hi = mesh.bounds[:, 1]
            raise InputError(f"Avatar {self.name!r}: no section at y = {y:.3f} m; the body spans y = {lo:.3f} to {hi:.3f} m")
        c = np.asarray(near, dtype=np.float64)
        loop = min(sec.discrete, key=lambda p: float(np.linalg.norm(p.mean(axis=0)[[0, 2]] - c)))
        return loop[:, [0, 2]]

    def girth(self, y: float, vertices=None, near=(0.0, 0.0)) -> float:
        """Tape-measure girth [m] at height ``y``: the convex-hull perimeter of :meth:`section`."""
        from scipy.spatial import ConvexHull

        return float(ConvexHull(self.section(y, vertices, near)).area)  # 2D hull: area is the perimeter

    # ------------------------------------------------------------------ skinning
    def joint_transforms(self, rotations=None, translation=None) -> tuple[np.ndarray, np.ndarray]:
        """World skinning transforms of every joint: ``x' = x + D_j x + t_j`` with ``D_j = R_j - I``.

        Args:
            rotations: None (rest pose); a mapping joint name -> rotation vector (3,) [rad] or 3x3 matrix;
                or an array (J, 3) of rotation vectors or (J, 3, 3) of matrices. Each rotation turns the
                joint's subtree about the joint's rest position, in world axes of the rest pose.
            translation: optional root translation [m], shape (3,).

        Returns:
            ``(D, t)``: D (J, 3, 3) = R_world - I, t (J, 3) [m]. Written as a displacement so the rest
            pose gives exactly zero (no rounding): the identity pose returns the rest mesh bit for bit.
        """
        j = self.joint_count
        local = np.broadcast_to(np.eye(3), (j, 3, 3)).copy()
        if rotations is not None:
            if isinstance(rotations, Mapping):
                for name, r in rotations.items():
                    local[self.joint_index(name)] = rotation_matrix(r, f"rotation of joint {name!r}")
            else:
                arr = np.asarray(rotations, dtype=np.float64)
                if arr.shape not in ((j, 3), (j, 3, 3)):
                    raise InputError(f"rotations: expected shape ({j}, 3) or ({j}, 3, 3) or a dict of joint "
                                     f"name -> rotation, got shape {arr.shape}")
                for k in range(j):
                    local[k] = rotation_matrix(arr[k], f"rotation of joint {self.joint_names[k]!r}")
        root_t = np.zeros(3)
        if translation is not None:
            root_t = np.asarray(translation, dtype=np.float64)
            if root_t.shape != (3,) or not np.all(np.isfinite(root_t)):
                raise InputError(f"translation: expected 3 finite numbers [m], got {translation!r}")
        rot = np.empty((j, 3, 3))
        trans = np.empty((j, 3))
        for k in range(j):
            p = self.joint_positions[k]
            # local affine map about the joint: x -> L (x - p) + p = L x + (p - L p)
            lt = p - local[k] @ p
            par = self.joint_parents[k]
            if par < 0:
                rot[k] = local[k]
                trans[k] = lt + root_t
            else:
                rot[k] = rot[par] @ local[k]
                trans[k] = rot[par] @ lt + trans[par]
        # exact zeros in the rest pose: R = I gives D = 0; p - I p = 0; sums of zeros stay zero
        return rot - np.eye(3), trans

    def pose(self, rotations=None, translation=None) -> np.ndarray:
        """Linear blend skinning: the posed vertices [m], shape (N, 3) float64.

        ``x' = x + sum_k w_k (D_{j_k} x + t_{j_k})`` with the transforms of :meth:`joint_transforms`;
        ``rotations=None`` (or all identity) returns exactly the rest vertices.
        """
        d, t = self.joint_transforms(rotations, translation)
        x = self.vertices
        disp = np.zeros_like(x)
        for k in range(4):
            jk = self.indices[:, k]
            disp += self.weights[:, k:k + 1] * (np.einsum("nab,nb->na", d[jk], x) + t[jk])
        return x + disp

    # ------------------------------------------------------------------ collision / export
    def vertex_normals(self, vertices=None) -> np.ndarray:
        """Area-weighted unit outward normals, shape (N, 3) float64."""
        v = self.vertices if vertices is None else np.asarray(vertices, dtype=np.float64)
        t = self.triangles
        fn = np.cross(v[t[:, 1]] - v[t[:, 0]], v[t[:, 2]] - v[t[:, 0]])
        n = np.zeros_like(v)
        for k in range(3):
            np.add.at(n, t[:, k], fn)
        length = np.linalg.norm(n, axis=1, keepdims=True)
        return n / np.where(length > 0.0, length, 1.0)

    def offset_vertices(self, skin_thickness: float = 0.002, vertices=None) -> np.ndarray:
        """Vertices pushed out along their normals by ``skin_thickness`` [m], shape (N, 3)."""
        st = float(skin_thickness)
        if not np.isfinite(st) or st < 0.0 or st > 0.05:
            raise InputError(f"skin_thickness = {skin_thickness!r} m; expected 0 <= skin_thickness <= 0.05 m")
        v = self.vertices if vertices is None else np.asarray(vertices, dtype=np.float64)
        return v + st * self.vertex_normals(v)

    def collider(self, skin_thickness: float = 0.002, rotations=None, translation=None):
        """The body as a :class:`clothsim.Collider` (triangle mesh), offset out by ``skin_thickness`` [m].

        With ``rotations``/``translation`` the posed body (see :meth:`pose`). For an animated body, add the
        rest collider once and feed later poses with ``sim.set_collider_vertices(i, avatar.offset_vertices(
        thickness, avatar.pose(rotations)))``.
        """
        from ..colliders import Collider

        v = self.vertices if rotations is None and translation is None else self.pose(rotations, translation)
        return Collider.mesh(self.offset_vertices(skin_thickness, v), self.triangles, name=self.name)

    def to_trimesh(self, vertices=None):
        import trimesh

        v = self.vertices if vertices is None else vertices
        return trimesh.Trimesh(vertices=v, faces=self.triangles, process=False)

    def __repr__(self) -> str:
        return (f"Avatar({self.name!r}, {self.vertex_count} vertices, {len(self.triangles)} triangles, "
                f"{self.joint_count} joints, height {self.height():.3f} m)")
