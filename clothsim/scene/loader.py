"""load_scene: parse a scene file, then check the files it names (patterns, meshes) and the avatar.

Nothing is simulated here and nothing is built on a device: every check is host-side numpy, so a bad
scene fails before any work starts ("nothing half-loaded is simulated").
"""

from __future__ import annotations

from pathlib import Path

from ..errors import InputError
from .schema import AvatarKind, Scene, parse_scene


def load_scene(path: str | Path) -> Scene:
    """Load and validate a scene file.

    Checks the TOML (structure, key names, types, ranges, units), that every referenced file exists, and
    the referenced content: each garment pattern parses and its seams join edges of equal length, each
    mesh file is a non-empty, finite, manifold triangle mesh (the avatar's closed and consistently
    wound), the measurements build a mannequin and the pose names joints the avatar has.

    Args:
        path: the ``.toml`` scene file.

    Returns:
        A frozen :class:`~clothsim.scene.Scene` (paths absolute, numbers in SI units, enums).

    Raises:
        clothsim.InputError: the message names the scene file, the key and what was expected.
    """
    from . import sources

    scene = parse_scene(path)
    where = str(scene.path)
    avatar_info = sources.check_avatar(scene)
    for i, g in enumerate(scene.garments):
        key = f"garments[{i}]"
        try:
            if g.pattern is not None:
                sources.check_pattern(g)
            else:
                sources.check_garment_mesh(g)
        except InputError as e:
            raise InputError(f"{where}: {key}.{'pattern' if g.pattern else 'mesh'}: {e}") from None
    joints = avatar_info.get("joints")
    if scene.pose.joints and joints is not None:
        for name in scene.pose.joints:
            if name not in joints:
                import difflib

                close = difflib.get_close_matches(name, joints, n=1, cutoff=0.6)
                hint = f" (did you mean {close[0]!r}?)" if close else ""
                raise InputError(f"{where}: pose.joints.{name}: the avatar has no joint {name!r}{hint}; "
                                 f"expected one of {', '.join(joints)}")
    if scene.pose.joints and scene.avatar.kind is AvatarKind.FILE:
        raise InputError(f"{where}: pose.joints: a mesh-file avatar has no skeleton to pose; "
                         "use kind = 'mannequin' or 'makehuman', or remove [pose]")
    return scene
