"""Where the meshes of a shot come from: a scene file (simulated now), an exported drape or frame
cache (``drape.npz`` / ``frames.npz``), or a mesh file (OBJ/GLB/PLY/STL). Returns MeshItems.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

import clothsim as cs

from .camera import SENSOR_WIDTH_MM, Camera
from .lighting import SceneLights
from .gltf_material import gltf_uv
from .material import Material, MeshItem

# Default display colours of the fabric presets (a catalog run sets its own with colourways).
FABRIC_COLOURS = {"cotton": "#e9e6df", "denim": "#3b5573", "silk": "#d9c7a7", "jersey": "#8a8d91",
                  "polyester": "#2f4f6f", "wool": "#6d5d4b", "linen": "#d6cdb8"}
MESH_SUFFIXES = (".obj", ".glb", ".gltf", ".ply", ".stl", ".off")


@dataclass
class ShotSource:
    """Meshes and metadata for a catalog run.

    garments: the draped garments; avatar: the body or None; cameras: explicit cameras from the
    scene (empty = standard views); lights: the scene's ``[[lights]]`` (None: the studio rig);
    info: JSON-ready description of where it came from.
    """

    garments: list[MeshItem]
    avatar: MeshItem | None = None
    cameras: list[Camera] = field(default_factory=list)
    views: list = field(default_factory=list)   # (camera name, view name, focal_mm) from the scene
    info: dict = field(default_factory=dict)
    lights: SceneLights | None = None


def _fabric_material(name: str, fabric_name: str | None) -> Material:
    colour = FABRIC_COLOURS.get((fabric_name or "").lower(), "#9a9da3")
    return Material.fabric(colour, name=f"{name}:{fabric_name or 'fabric'}")


def load_mesh_file(path: Path) -> ShotSource:
    """A mesh file as one garment (all its geometry merged; trimesh reads it, Y up, metres)."""
    import trimesh

    try:
        loaded = trimesh.load(path, force="mesh", process=False)
    except Exception as e:
        raise cs.InputError(f"cannot read mesh file {path}: {type(e).__name__}: {e}") from e
    if not isinstance(loaded, trimesh.Trimesh) or len(loaded.faces) == 0:
        raise cs.InputError(f"mesh file {path} holds no triangles")
    uv = getattr(loaded.visual, "uv", None)
    uv = np.asarray(uv, dtype=np.float32) if uv is not None and len(uv) == len(loaded.vertices) else None
    material = _fabric_material(path.stem, None)
    if path.suffix.lower() in GLTF_SUFFIXES:
        own = _gltf_material(path, uv is not None)
        if own is not None:
            material = own
            uv = gltf_uv(uv) if uv is not None else None
    item = MeshItem(loaded.vertices, loaded.faces, material, uvs=uv, name=path.stem)
    return ShotSource([item], info={"source": "mesh", "file": str(path), "material": material.name})


GLTF_SUFFIXES = (".glb", ".gltf")


def _gltf_material(path: Path, has_uv: bool) -> Material | None:
    """The file's own glTF material, or None; textures need the mesh's TEXCOORD_0."""
    from .gltf_material import read_gltf_material

    mat = read_gltf_material(path)
    if mat is not None and mat.textured and not has_uv:
        raise cs.InputError(f"{path}: material {mat.name!r} has textures but the mesh has no TEXCOORD_0 (UVs)")
    return mat


def garment_look(spec, name: str, uv: np.ndarray | None, vertex_count: int) -> tuple[Material, np.ndarray | None]:
    """The material and render UVs of a scene garment: the scene's ``color`` when it gives one,
    else a glTF mesh file's own material (with its UVs flipped to glTF's convention), else the
    fabric's display colour (with the rest-shape UVs in metres)."""
    fabric_name = getattr(spec.fabric, "name", None)
    if getattr(spec, "color", None) is not None:
        return Material.fabric(tuple(spec.color), name=f"{name}:scene colour"), uv
    mesh = getattr(spec, "mesh", None)
    if mesh is not None and Path(mesh).suffix.lower() in GLTF_SUFFIXES:
        from clothsim.exchange import import_mesh

        split = import_mesh(mesh).uv_split()   # the cloth of a UV-mapped mesh has the split vertices
        has_uv = split is not None and split.vertex_count == vertex_count
        own = _gltf_material(Path(mesh), has_uv)
        if own is not None:
            return own, (gltf_uv(split.uv) if has_uv else None)
    return _fabric_material(name, fabric_name), uv


def load_drape_npz(path: Path, frame: int = -1) -> ShotSource:
    """A frame of ``drape.npz`` (``clothsim simulate``) or ``frames.npz`` (``clothsim simulate SCENE``)."""
    try:
        data = np.load(path, allow_pickle=False)
        positions = np.asarray(data["positions"], dtype=np.float32)
        triangles = np.asarray(data["triangles"], dtype=np.int64)
    except KeyError as e:
        raise cs.InputError(f"{path}: expected arrays 'positions' (F, N, 3) and 'triangles' (M, 3); missing {e}") from e
    except Exception as e:
        raise cs.InputError(f"cannot read drape cache {path}: {type(e).__name__}: {e}") from e
    if positions.ndim == 2:
        positions = positions[None]
    if positions.ndim != 3 or positions.shape[2] != 3:
        raise cs.InputError(f"{path}: 'positions' must have shape (F, N, 3), got {positions.shape}")
    if not -positions.shape[0] <= frame < positions.shape[0]:
        raise cs.InputError(f"{path}: frame {frame} out of range; the cache holds {positions.shape[0]} frames")
    x = positions[frame]
    offsets = np.asarray(data["garment_offsets"]) if "garment_offsets" in data else np.array([0, len(x)])
    garments = []
    for i in range(len(offsets) - 1):
        a, b = int(offsets[i]), int(offsets[i + 1])
        mask = (triangles >= a).all(axis=1) & (triangles < b).all(axis=1)
        name = f"garment{i}" if len(offsets) > 2 else path.stem
        garments.append(MeshItem(x[a:b], triangles[mask] - a, _fabric_material(name, None), name=name))
    return ShotSource(garments, info={"source": "drape cache", "file": str(path), "frame": int(frame % positions.shape[0])})


def _scene_camera(spec) -> Camera | None:
    if spec.position is None:
        return None
    focal = spec.focal_length_mm * SENSOR_WIDTH_MM / spec.sensor_width_mm  # same field of view on 36 mm
    return Camera(position=spec.position, target=spec.target, focal_mm=focal, name=spec.name)


def _close_seams(x: np.ndarray, seams: np.ndarray) -> np.ndarray:
    """Draw each sewn vertex pair at its midpoint, as a sewn seam looks (the simulation holds a pair
    within the scene's seam-gap check, ~1 mm; drawn apart, that shows as a hairline of light)."""
    if len(seams) == 0:
        return x
    x = np.array(x, dtype=np.float64)
    mid = 0.5 * (x[seams[:, 0]] + x[seams[:, 1]])
    x[seams[:, 0]] = mid
    x[seams[:, 1]] = mid
    return x.astype(np.float32)


def simulate_scene(path: Path, *, frames: int | None = None, device: str | None = None, level=None,
                   progress: bool = True) -> ShotSource:
    """Load a scene TOML, drape it with clothsim (Warp) and return the last frame's meshes."""
    from clothsim.scene import Drape
    from clothsim.scene.run import with_overrides

    scene = cs.load_scene(path)
    scene = with_overrides(scene, frames=frames, device=device)
    t0 = time.perf_counter()
    with Drape(scene, level=level) as drape:
        result = drape.run(progress=progress)
        x = drape.positions()
        garments = []
        for i, g in enumerate(drape.garments):
            a, b = int(drape.offsets[i]), int(drape.offsets[i + 1])
            spec = scene.garments[i]
            xg = _close_seams(x[a:b], np.asarray(g.cloth.seams))
            material, uv = garment_look(spec, g.name, g.uv, len(xg))
            garments.append(MeshItem(xg, np.asarray(g.cloth.triangles), material, uvs=uv, name=g.name))
        body = drape.body
        avatar = MeshItem(np.asarray(body.current_vertices), np.asarray(body.triangles), Material.skin(), name="avatar")
        frames_run = drape.frame
    sim_s = time.perf_counter() - t0
    cameras = [c for c in (_scene_camera(s) for s in scene.cameras) if c is not None]
    views = [(s.name, s.view.value, s.focal_length_mm * SENSOR_WIDTH_MM / s.sensor_width_mm)
             for s in scene.cameras if s.view is not None]
    info = {"source": "scene", "file": str(path), "scene_name": scene.name, "frames": int(frames_run),
            "drape_passed": bool(result.passed), "simulate_s": sim_s}
    return ShotSource(garments, avatar, cameras, views, info, lights=SceneLights.from_scene(scene.lights))


def load_source(path, *, frames: int | None = None, device: str | None = None, level=None,
                progress: bool = True) -> ShotSource:
    """Dispatch on the file type: ``.toml`` scene (simulated), ``.npz`` drape cache, or a mesh file."""
    path = Path(path)
    if not path.exists():
        raise cs.InputError(f"scene file not found: {path}")
    suffix = path.suffix.lower()
    if suffix == ".toml":
        return simulate_scene(path, frames=frames, device=device, level=level, progress=progress)
    if suffix == ".npz":
        return load_drape_npz(path)
    if suffix in MESH_SUFFIXES:
        return load_mesh_file(path)
    raise cs.InputError(f"{path}: expected a scene (.toml), a drape cache (.npz) or a mesh "
                        f"({', '.join(MESH_SUFFIXES)}), got {suffix or 'no suffix'!r}")
