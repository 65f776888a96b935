"""Input conversion shared by the collision modules (host side, not hot path).

Accepted inputs:

* positions: numpy ``(N, 3)`` float, a ``wp.array(dtype=wp.vec3)`` of shape ``(N,)``,
  or a ``wp.array2d`` of float32 with shape ``(N, 3)``;
* triangles/edges: numpy ``(M, k)`` int, a ``wp.array2d(dtype=wp.int32)`` of shape ``(M, k)``,
  or a 1D ``wp.array`` of ``wp.vec3i`` (triangles) / ``wp.vec2i`` (edges).

wp.arrays already on the target device with the right dtype are used without copying.
"""

from __future__ import annotations

import numpy as np
import warp as wp


# the most entries one list array may hold: Warp's array shapes and the kernels' list indices
# (primitive * capacity + slot) are 32-bit signed integers
MAX_LIST_ENTRIES = 2**31 - 1


def grown_capacities(old, required, counts, limit: int, names, advice) -> list[int]:
    """New capacities for lists that overflowed (a detector's ``grow()``): each kind whose longest list seen
    (``required``) exceeds its capacity is doubled until it holds it; with none recorded, every kind is doubled.
    A kind whose doubled array (capacity × ``counts``) would pass ``limit`` entries (the detector's
    ``MAX_LIST_ENTRIES``) gets the largest capacity that fits instead, if that holds its longest list and is
    more than before. A kind that still does not fit raises a SimulationError naming it (``names``: one per
    kind, e.g. "self-contact edge-edge") with ``advice()``'s text on what to change; the caller has changed
    nothing yet."""
    from ..errors import SimulationError

    caps = [int(c) for c in old]
    if any(int(r) > c for r, c in zip(required, caps)):
        for i, r in enumerate(required):
            while caps[i] < r:
                caps[i] *= 2
    else:
        caps = [2 * c for c in caps]
    for i, count in enumerate(counts):
        if count and caps[i] * count > limit:
            # the largest that fits still serves (N = 1024 fold, 3.1M edges: a list of 534 entries needs 1.68e9
            # entries at 534 a list, 3.2e9 at the doubled 1024)
            fit = limit // count
            if fit > old[i] and fit >= required[i]:
                caps[i] = fit
        if caps[i] * count > limit:
            need = (f"a list needs {int(required[i])} entries" if required[i] > 0 else
                    f"the lists were to double to {caps[i]} entries")
            raise SimulationError(
                f"{names[i]} lists: {need}, and {count} lists of {caps[i]} entries ({caps[i] * count}) exceed the "
                f"{limit} one list array can index. {advice()} Nothing was changed: the lists keep their capacities.")
    return caps


def resolve_device(device, *arrays):
    """The device to run on: ``device`` if given, else that of the first wp.array among ``arrays``."""
    if device is not None:
        return wp.get_device(device)
    for a in arrays:
        if isinstance(a, wp.array):
            return a.device
    return wp.get_device()


def as_vec3_array(x, device) -> wp.array:
    """Positions as a contiguous ``wp.array(dtype=wp.vec3)`` of shape ``(N,)`` [m] on ``device``."""
    if isinstance(x, wp.array):
        if x.dtype == wp.vec3 and x.ndim == 1:
            return x if x.device == device else x.to(device)
        if x.dtype == wp.float32 and x.ndim == 2 and x.shape[1] == 3 and x.is_contiguous:
            v = x.view(wp.vec3)
            return v if v.device == device else v.to(device)
        x = x.numpy()
    a = np.ascontiguousarray(np.asarray(x, dtype=np.float32))
    if a.ndim != 2 or a.shape[1] != 3:
        raise ValueError(f"positions must have shape (N, 3), got {a.shape}")
    return wp.array(a, dtype=wp.vec3, device=device)


def as_index_array(x, width: int, device) -> wp.array:
    """Index table as a contiguous ``wp.array2d(dtype=wp.int32)`` of shape ``(M, width)``."""
    if isinstance(x, wp.array):
        if x.dtype == wp.int32 and x.ndim == 2 and x.shape[1] == width and x.is_contiguous:
            return x if x.device == device else x.to(device)
        vec_type = {3: wp.vec3i, 2: wp.vec2i}.get(width)
        if x.ndim == 1 and x.is_contiguous and x.dtype == vec_type:
            v = x.view(wp.int32)
            return v if v.device == device else v.to(device)
        x = x.numpy()
    a = np.ascontiguousarray(np.asarray(x).astype(np.int32, copy=False))
    if a.ndim != 2 or a.shape[1] != width:
        raise ValueError(f"index table must have shape (M, {width}), got {a.shape}")
    return wp.array(a, dtype=wp.int32, device=device)


def unique_edges(triangles: np.ndarray) -> np.ndarray:
    """Undirected edges of a triangle mesh, ``(E, 2)`` int32, each with ``e[0] < e[1]``, sorted."""
    t = np.asarray(triangles, dtype=np.int64)
    e = np.concatenate([t[:, [0, 1]], t[:, [1, 2]], t[:, [2, 0]]], axis=0)
    e.sort(axis=1)
    return np.unique(e, axis=0).astype(np.int32)


def query_block_dim(device, count: int) -> int:
    """Threads per block for a launch of ``count`` BVH queries (one per thread).

    A BVH traversal diverges within a warp, and a launch too small to fill the GPU is latency bound: with
    Warp's default 256 threads per block a 16k-query launch occupies 64 of an H200's 132 SMs. Small blocks
    spread it over every SM: about 16 blocks per SM, 8 to 32 threads each (the rule Newton's
    ``TriMeshCollisionDetector`` uses). The CPU ignores the block size.

    Warp compiles a module once per block size it is launched with, so every kernel launched with this
    block size lives in a module of its own (``@wp.kernel(module="unique")``): a new size compiles that
    kernel alone (~1-2 s on the H200), not its whole module (``clothsim.solver.kernels`` took 42 s there: the
    first 5 mm cape and circle skirt paid it inside their level switch)."""
    dev = wp.get_device(device)
    if not dev.is_cuda:
        return 256
    per_sm = max(count / (16.0 * dev.sm_count), 1.0)
    return int(min(32, max(8, 2 ** round(float(np.log2(per_sm))))))
