"""Where a scene's content comes from: the avatar (clothsim.avatar), garment patterns
(clothsim.garments) and mesh files (clothsim.exchange). Host-side (numpy) only.

``check_*`` functions validate without building anything heavy (used by :func:`load_scene`);
``build_*`` functions make what :class:`~clothsim.scene.Drape` simulates.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Callable

import numpy as np

from ..errors import InputError
from ..multires.proxy import vertex_normals
from .meshcheck import check_mesh
from .schema import AvatarKind, GarmentSpec, Scene


# ---------------------------------------------------------------------------------------------- avatar
@dataclass
class Body:
    """The avatar as the drape sees it.

    rest_vertices (N, 3) [m]: the body in its rest pose; triangles (M, 3); collider_vertices: the
    rest body pushed out by the skin thickness (what the cloth collides with); current_vertices: the
    body (not offset) at the current frame, for the penetration check; avatar: the skinned
    :class:`clothsim.avatar.Avatar`, or None for a mesh file.
    """

    name: str
    rest_vertices: np.ndarray
    triangles: np.ndarray
    collider_vertices: np.ndarray
    current_vertices: np.ndarray
    skin_thickness: float
    avatar: Any = None
    landmarks: dict = field(default_factory=dict)


def _make_avatar(scene: Scene):
    """The skinned Avatar of a mannequin/makehuman scene (raises InputError naming the key)."""
    where = f"{scene.path}: avatar"
    a = scene.avatar
    try:
        if a.kind is AvatarKind.MANNEQUIN:
            from ..avatar import Measurements, mannequin

            return mannequin(Measurements(**a.measurements))
        from ..avatar import load_makehuman  # AvatarKind.MAKEHUMAN

        return load_makehuman()
    except InputError as e:
        raise InputError(f"{where}: {e}") from None
    except ImportError as e:
        raise InputError(f"{where}: kind = {a.kind.value!r} is not available in this install ({e})") from None


def _body_mesh_file(scene: Scene):
    from ..exchange.meshio import import_mesh

    key = f"{scene.path}: avatar.file"
    try:
        m = import_mesh(scene.avatar.file)
    except InputError as e:
        raise InputError(f"{key}: {e}") from None
    check_mesh(m.vertices, m.triangles, where=f"{key} ({scene.avatar.file.name})", closed=True)
    return m


def check_avatar(scene: Scene) -> dict:
    """Validate the avatar section's content; returns ``{"joints": [...] or None}``."""
    if scene.avatar.kind is AvatarKind.FILE:
        _body_mesh_file(scene)
        return {"joints": None}
    where = f"{scene.path}: avatar.measurements"
    if scene.avatar.kind is AvatarKind.MANNEQUIN:
        from ..avatar import JOINT_NAMES, Measurements

        try:  # cheap: the body itself is built by Drape
            Measurements(**scene.avatar.measurements)
        except InputError as e:
            raise InputError(f"{where}: {e}") from None
        return {"joints": list(JOINT_NAMES)}
    av = _make_avatar(scene)
    return {"joints": list(av.joint_names)}


def build_body(scene: Scene) -> Body:
    st = scene.simulation.skin_thickness
    if scene.avatar.kind is AvatarKind.FILE:
        m = _body_mesh_file(scene)
        v = np.asarray(m.vertices, dtype=np.float64)
        t = np.asarray(m.triangles, dtype=np.int64)
        n = vertex_normals(v, t)
        return Body(name=m.name, rest_vertices=v, triangles=t, collider_vertices=v + st * n,
                    current_vertices=v.copy(), skin_thickness=st)
    av = _make_avatar(scene)
    v = np.asarray(av.vertices, dtype=np.float64)
    return Body(name=av.name, rest_vertices=v, triangles=np.asarray(av.triangles, dtype=np.int64),
                collider_vertices=av.offset_vertices(st), current_vertices=v.copy(), skin_thickness=st,
                avatar=av, landmarks=dict(av.landmarks))


def pose_schedule(scene: Scene, body: Body) -> Callable[[int], np.ndarray | None] | None:
    """Collider targets per frame that turn the body from rest into the scene's pose.

    Frame f (1-based) gets the pose scaled by ``s = min(f / blend_frames, 1)`` (each joint's rotation
    vector times s: the rotation about the same axis by s times the angle), so the body moves at a
    constant angular speed; frame ``blend_frames + 1`` repeats the final pose so the collider's velocity
    returns to zero; later frames return None (the collider stays). Also updates ``body.current_vertices``.
    """
    if not scene.pose.joints or body.avatar is None:
        return None
    av = body.avatar
    rot = {k: np.radians(np.asarray(v, dtype=np.float64)) for k, v in scene.pose.joints.items()}
    n = scene.pose.blend_frames
    st = body.skin_thickness

    def target(frame: int):
        if frame > n + 1:
            return None
        s = min(frame / n, 1.0)
        posed = av.pose({k: s * r for k, r in rot.items()})
        body.current_vertices = posed
        return av.offset_vertices(st, posed)

    return target



# ---------------------------------------------------------------------------------------------- garments
@dataclass
class BuiltGarment:
    """A garment ready to simulate: its Cloth (placed, sewn, pinned), the level it was built at, and
    ``uv`` (N, 2) texture coordinates for export (the rest shape in metres), or None."""

    name: str
    cloth: Any
    level: int
    edge_length: float | None
    uv: np.ndarray | None = None


def check_garment_mesh(g: GarmentSpec) -> dict:
    from ..exchange.meshio import import_mesh

    m = import_mesh(g.mesh)
    return check_mesh(m.vertices, m.triangles, where=str(g.mesh), closed=False)


def check_pattern(g: GarmentSpec) -> dict:
    """Parse and validate the pattern file (clothsim.garments checks panels, placements and that every
    seam joins edges of equal length within its tolerance)."""
    from ..garments import load_pattern

    return {"pattern": load_pattern(g.pattern)}


DEFAULT_LEVELS = (0.04, 0.02, 0.01, 0.005)  # edge lengths [m] of a pattern's resolution hierarchy, coarse first


def _level_index(levels, spec: GarmentSpec, level, where: str) -> int:
    """Index into ``levels`` (edge lengths [m], coarsest first) for a CLI/scene level request."""
    n = len(levels)
    if level is None:
        if spec.edge_length is not None:
            return int(np.argmin([abs(math.log(e / spec.edge_length)) for e in levels]))
        level = spec.level if spec.level is not None else 0
    if level == "coarsest":
        return 0
    if level == "finest" or level == -1:
        return n - 1
    level = int(level)
    if not (0 <= level < n):
        raise InputError(f"{where}: level {level} does not exist; the garment has levels 0..{n - 1} "
                         f"(edge lengths {', '.join(f'{1e3 * e:g} mm' for e in levels)})")
    return level


def build_garment(scene: Scene, g: GarmentSpec, level, body: Body, mesh=None) -> BuiltGarment:
    """The garment's Cloth: a pattern triangulated at the chosen level (seams and pins from the pattern),
    or a mesh file (rest shape: its UV layout if it has UVs, else its shape), moved by ``offset``.
    ``mesh``: the pattern's GarmentMesh at that level when the caller has it already (a hierarchy's)."""
    where = f"{scene.path}: garments.{g.name}"
    if g.mesh is not None:
        from ..exchange.meshio import import_cloth, import_mesh

        m = import_mesh(g.mesh)
        rest = "uv" if m.corner_uv is not None else "shape"
        cloth = import_cloth(g.mesh, rest=rest, fabric=g.fabric or "cotton", name=g.name)
        cloth.vertices = cloth.vertices + np.asarray(g.offset)
        return BuiltGarment(name=g.name, cloth=cloth, level=0, edge_length=None, uv=cloth.rest_uv)
    from ..garments import load_pattern

    levels = DEFAULT_LEVELS
    k = _level_index(levels, g, level, where)
    if mesh is None:
        mesh = load_pattern(g.pattern).mesh(levels[k])
    cloth = mesh.to_cloth(g.fabric, pin=True, name=g.name)
    cloth.vertices = cloth.vertices + np.asarray(g.offset)
    if len(cloth.pins):
        cloth.pin_targets = cloth.pin_targets + np.asarray(g.offset)
    return BuiltGarment(name=g.name, cloth=cloth, level=k, edge_length=levels[k], uv=mesh.rest_uv)


def scene_level_set(scene: Scene, body) -> tuple[Any, dict]:
    """The scene's pattern garments as a :class:`clothsim.multires.LevelSet` over DEFAULT_LEVELS on ``body``
    (garment i's level mapping from its pattern hierarchy), and the dict the builder fills with each built
    level's BuiltGarments (level index -> list), for callers that need the garments' seams and names."""
    from ..garments import load_pattern
    from ..garments.hierarchy import GarmentHierarchy
    from ..multires import LevelSet

    levels = DEFAULT_LEVELS
    hs = [GarmentHierarchy(load_pattern(g.pattern), levels) for g in scene.garments]
    built: dict[int, list] = {}

    def build(i):
        # the hierarchy's meshes: each level is triangulated once, for its cloth and for the level mappings
        # (the 5 mm T-shirt takes ~0.6 s; switches meshed both levels again, 1.2 s of a 10 -> 5 mm switch)
        bg = [build_garment(scene, spec, i, body, mesh=h.level(i)) for spec, h in zip(scene.garments, hs)]
        built[i] = bg
        return [b.cloth for b in bg]

    return LevelSet(build, lambda src, dst, g: hs[g].mapping(src, dst), len(levels), levels, name=scene.name), built
