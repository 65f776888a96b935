"""Who owns which device array, how many bytes, and independent figures to check that against.

Owners of one :class:`clothsim.Simulator` (one resolution level) and their categories:

=====================  ============  ==========================================================
owner                  category      arrays
=====================  ============  ==========================================================
``model``              constraints   rest shape, topology, adjacency, bending, seams, pins, materials
``state``              state         positions, velocities, last velocities, pin targets
``solver``             scratch       inertial target, step-start positions, normals, angles, frame
                                     backup, placeholder arguments, any other solver array
``contact_planes``     collision     per-vertex collider contact planes
``collider[k]``        collision     collider k's poses, velocities and triangles (its wp.Mesh)
``collider_contacts``  collision     cloth–collider feature contact lists and BVH boxes
``self_contacts``      collision     self-contact lists, BVH boxes, weld map
=====================  ============  ==========================================================

Accounting is by ``wp.array.capacity`` of arrays that own their memory (``deleter`` set), each pointer
counted once. Native BVH nodes of ``wp.Mesh``/``wp.Bvh`` are not wp.arrays and are not in these figures;
on CUDA the mempool figure includes them (and captured graphs), so it is compared by its growth.

Independent figures (:func:`independent_figures`): on every device, the bytes of all live owning
``wp.array`` objects found through the garbage collector; on CUDA also Warp's mempool "used" figure and the
driver's free memory.
"""

from __future__ import annotations

import gc
import warnings

import numpy as np
import warp as wp

from ..collision.self_contact_kernels import GROUP_SIZE
from ..solver.self_collision import detect_workers
from ..solver.cpu_sweep import SWEEP_MAX_COLORS
from ..solver.vbd import default_cpu_threads
from ..topology import bending_stencils, panels, unique_edges

CATEGORIES = ("state", "constraints", "collision", "scratch", "kept_levels")


def _owning(a) -> bool:
    d = a.__dict__
    return d.get("deleter") is not None and d.get("ptr") is not None and "_clothsim_token" not in d


def _arrays_in(obj, out: list, seen: set, depth: int = 0) -> None:
    """Every wp.array reachable from ``obj`` through attributes, lists, tuples and dicts of clothsim
    objects and Warp meshes/BVHs (not through foreign objects)."""
    if depth > 6 or id(obj) in seen:
        return
    seen.add(id(obj))
    if isinstance(obj, wp.array):
        out.append(obj)
        return
    if isinstance(obj, (list, tuple)):
        for x in obj:
            _arrays_in(x, out, seen, depth + 1)
        return
    if isinstance(obj, dict):
        for x in obj.values():
            _arrays_in(x, out, seen, depth + 1)
        return
    mod = type(obj).__module__ or ""
    if (mod.startswith("clothsim") or isinstance(obj, (wp.Mesh, wp.Bvh))) and hasattr(obj, "__dict__"):
        for k, x in vars(obj).items():
            if k in ("model", "s", "settings", "colliders") and mod.startswith("clothsim.solver"):
                continue  # the solver's references to objects owned elsewhere
            _arrays_in(x, out, seen, depth + 1)


def simulator_owners(sim) -> list:
    """[(owner, category, [wp.array, ...]), ...] for one Simulator; each array appears under one owner."""
    solver = sim.solver
    owners = [("model", "constraints", sim.model), ("state", "state", sim.state)]
    for k, c in enumerate(solver.colliders):
        owners.append((f"collider[{k}]", "collision", c))
    if solver.collider_contacts is not None:
        owners.append(("collider_contacts", "collision", solver.collider_contacts))
    if solver.self_contacts is not None:
        owners.append(("self_contacts", "collision", solver.self_contacts))
    planes = [getattr(solver, n, None) for n in ("c_point", "c_normal", "c_vel", "c_active")]
    owners.append(("contact_planes", "collision", [a for a in planes if a is not None]))
    owners.append(("solver", "scratch", solver))  # whatever else the solver holds
    seen_ptr: set = set()
    result = []
    for name, cat, obj in owners:
        found: list = []
        _arrays_in(obj, found, set())
        mine = []
        for a in found:
            if not _owning(a) or a.ptr in seen_ptr:
                continue
            seen_ptr.add(a.ptr)
            mine.append(a)
        result.append((name, cat, mine))
    return result


def owner_bytes(sim) -> dict:
    """{owner: (category, bytes)} of one Simulator."""
    return {name: (cat, int(sum(a.capacity for a in arrs))) for name, cat, arrs in simulator_owners(sim)}


def live_warp_array_bytes(device) -> int:
    """Bytes of every live wp.array on ``device`` that owns its memory, found through the garbage collector
    (each pointer once). Independent of any owner's bookkeeping."""
    dev = wp.get_device(device)
    gc.collect()
    total, seen = 0, set()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # isinstance() on some foreign objects warns (deprecated torch aliases)
        arrays = []
        for o in gc.get_objects():
            try:
                if isinstance(o, wp.array) and _owning(o) and o.device == dev:
                    arrays.append(o)
            except Exception:  # noqa: BLE001 - foreign objects with odd __getattr__/__eq__
                continue
    for o in arrays:
        if o.ptr in seen:
            continue
        seen.add(o.ptr)
        total += int(o.capacity)
    return total


def independent_figures(device) -> dict:
    """{"live_warp_arrays": bytes (gc)} and on CUDA {"mempool_used": bytes, "device_free": bytes}."""
    dev = wp.get_device(device)
    out = {"live_warp_arrays": live_warp_array_bytes(dev)}
    if dev.is_cuda:
        wp.synchronize_device(dev)
        try:
            out["mempool_used"] = int(wp.get_mempool_used_mem_current(dev))
        except Exception:  # noqa: BLE001 - mempool off or unsupported
            out["mempool_used"] = None
        out["device_free"] = int(getattr(dev, "free_memory", 0) or 0)
    return out


# ---------------------------------------------------------------------------------------------- estimates
def estimate_simulator_bytes(cloths, *, self_collision: bool, colliders=(), model_bytes: int | None = None,
                             collider_capacities=(8, 4), self_capacities=(16, 16, 16), jacobi: bool = False,
                             device="cpu", cpu_threads: int | None = None) -> dict:
    """Bytes a :class:`clothsim.Simulator` of ``cloths`` will allocate, by category, computed from host data
    before anything is allocated (the budget check). ``colliders``: host :class:`clothsim.Collider` objects.
    ``model_bytes``: the model's exact bytes if known (a host snapshot). ``collider_capacities``: (edge,
    triangle) list capacities of the collider feature contacts; ``self_capacities``: (vt, tv, ee) of the
    self-contact lists (the solver's defaults; larger once lists have grown). ``jacobi``: the simulator runs
    Jacobi sweeps (a second iterate array). ``device``: where it will run (the self-contact detector keeps
    different side arrays on CUDA and on the CPU); ``cpu_threads``: the Simulator's (None: its default), the
    CPU search's worker threads keeping buffers of their own. Mirrors the allocations of
    ClothModel, ClothState, SolverVBD, ColliderBuffers, ColliderContacts and SelfCollision; the tests check
    it equals the owners' accounting after the level is built."""
    off = np.concatenate([[0], np.cumsum([c.vertex_count for c in cloths])]).astype(np.int64)
    n = int(off[-1])
    tri = np.concatenate([c.triangles + off[i] for i, c in enumerate(cloths)])
    m = len(tri)
    st = bending_stencils(tri)
    b = len(st)
    e = len(unique_edges(tri)[0])
    s = sum(len(c.seams) for c in cloths)
    pins = np.concatenate([c.pins + off[i] for i, c in enumerate(cloths)]) if cloths else np.zeros(0, np.int64)
    p = len(pins)
    f = n - len(np.unique(pins))
    cc = len(cloths)
    if model_bytes is None:
        # per vertex: mass, inverse mass, area, cloth id, pin slot; per pin: its target
        model_bytes = (m * (12 + 16 + 4 + 4 + 12) + n * 20 + b * (16 + 4 + 4 + 16) + s * (8 + 4 + 8)
                       + 4 * 4 * (n + 1) + e * (8 + 8) + 4 * f + p * 12 + cc * (16 + 4 + 4 + 4))
    state = 3 * 12 * n + 2 * 12 * p
    k = len(colliders)
    # x_prev, y, normals, two Chebyshev history buffers (vec3 each), bad flag, θ per hinge, placeholder arguments
    # (contacts off, external forces off: one vec3; collider feature pairs off: one vec4 edge normal), the
    # Jacobi sweep's second iterate (one vec3 when sweeps are Gauss–Seidel), the CPU sweep's colour offsets and
    # barrier (int32, fixed sizes)
    scratch = 5 * 12 * n + 4 + 4 * b + (4 + 4) + (4 + 12 + 8) + 12 + 12 + 16 + 12 * (n if jacobi else 1)
    scratch += 4 * (SWEEP_MAX_COLORS + 1) + 4 * 2 + 4 * (1 if wp.get_device(device).is_cuda else max(1, f))
    if self_collision or k:
        scratch += 3 * 12 * n  # frame backup
    collision = 40 * max(1, k) * n  # contact planes
    nc_tot = mc_tot = 0
    for c in colliders:
        nv, nt = len(c.vertices), len(c.triangles)
        collision += 4 * 12 * nv + 12 * nt
        nc_tot += nv
        mc_tot += nt
    if k:
        ct = np.concatenate([c.triangles + o for c, o in zip(colliders, np.cumsum([0] + [len(c.vertices) for c in colliders]))])
        from ..solver.collider_contacts import feature_edges  # the solver's choice of collider edges

        cx = np.concatenate([np.asarray(c.vertices) for c in colliders])
        ec = len(feature_edges(cx, ct, np.concatenate([c.vertices for c in cloths]), unique_edges(tri)[0],
                               thickness=min(float(c.fabric.thickness) for c in cloths))[0])
        collision += (24 * nc_tot + 8 * ec + 12 * mc_tot + 4 * (nc_tot + 1) + 12 * mc_tot + 8 * ec + 12 * nc_tot
                      + 16 * ec + 24 + 24 * nc_tot + 24 * ec + 8 * e + 12 * m + 4 * e * (1 + collider_capacities[0]) + 4 * m * (1 + collider_capacities[1])
                      + 4 + 8)
    if self_collision:
        # points, and the bounds of the two BVHs: per triangle and per edge (lower, upper vec3 each)
        collision += (12 * n + 24 * m + 24 * max(e, 1) + 4 * n + 4 * m + 4 * e + 4 * n + 4 * n + 4 + 12
                      + 4 * n * self_capacities[0] + 4 * m * self_capacities[1] + 4 * e * self_capacities[2] + 12 * m + 8 * e
                      + 12 * n + 4 * n  # rest positions (vec3) and panel ids (int32) for the rest-neighbour test
                      + 4 * n + 12 * n)  # vertex colours and positions at the iteration's start (same-colour pairs)
        collision += 16 * max(e, 1) + 32 * m  # edge and triangle vertex ids with their weld ids (vec4i)
        if wp.get_device(device).is_cuda:  # the appended vt/tv/ee lists, ranked into the final ones
            collision += 4 * n * self_capacities[0] + 4 * m * self_capacities[1] + 4 * e * self_capacities[2]
            # the grouped searches' vertex and edge orders, each panel's padded to whole groups (group_order)
            pan = panels(n, tri)
            ends = unique_edges(tri)[0]

            def padded(ids):
                c = np.bincount(ids)
                c = c[c > 0]
                return int((-(-c // GROUP_SIZE) * GROUP_SIZE).sum())

            collision += 4 * padded(pan) + (4 * padded(pan[np.asarray(ends)[:, 0]]) if e else 0)
        else:  # the (zero) overflow record merged beside the worker threads' own buffers
            collision += 16
            workers = detect_workers(device, default_cpu_threads() if cpu_threads is None else cpu_threads)
            if workers and e:  # lower-edge lists, their counts, the needed lengths; per worker min_dist and counts
                collision += 4 * e * self_capacities[2] + 8 * e + workers * (4 * n + 4 * e)
    out = {"constraints": int(model_bytes), "state": int(state), "scratch": int(scratch), "collision": int(collision)}
    out["total"] = sum(out.values())
    return out

