"""Collision detection and contact building blocks for clothsim (Warp kernels, device-agnostic).

Modules:

* :mod:`.intersections` — exact triangle–triangle intersection counting and penetration depth (diagnostics);
* :mod:`.contact_funcs` — ``@wp.func`` contact/friction force and Hessian blocks the solver calls per vertex;
* :mod:`.self_contact` — :class:`SelfContactDetector`, fixed-capacity vertex–triangle/edge–edge lists;
* :mod:`.mesh_collider` — :class:`MeshCollider` (deforming triangle-mesh collider) and :class:`ClothColliderContacts`.
"""

from .intersections import (count_mesh_intersections, count_self_intersections, max_penetration,
                            self_intersection_pairs)
from .mesh_collider import ClothColliderContacts, MeshCollider
from .self_contact import SelfContactDetector

__all__ = [
    "ClothColliderContacts",
    "MeshCollider",
    "SelfContactDetector",
    "count_mesh_intersections",
    "count_self_intersections",
    "self_intersection_pairs",
    "max_penetration",
]
