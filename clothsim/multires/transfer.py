"""After a level switch: host snapshots of a model, projection out of colliders and the ground, and a
brief quasi-static relaxation.

Projection: a vertex interpolated from a coarser level lies on the coarse triangle's chord, up to κ·h²/8
inside a convex body of curvature κ (h the coarse edge length). Each free vertex closer to a collider
surface than the cloth thickness r, or inside it (its closest face's normal says so, and on a closed mesh the
ray parity too), is moved along the surface normal to distance r; a vertex below ``ground + r`` is lifted to it.
The inward normal velocity of a moved vertex is removed.

Relaxation: ``substeps`` implicit steps of length h_r with the velocities set to zero (so the inertial target
is the current position): each minimises ½·m/h_r²·|x − x_k|² + E(x), a proximal step that lets the stiff,
local energy the interpolation left (corners, bent hinges) relax while moving the vertices by at most
|F|·h_r²/m per step (F the vertex's net force): the large-scale shape stays. Time does not advance; the
carried velocities are put back afterwards.
"""

from __future__ import annotations

import numpy as np
import warp as wp

from ..model import ClothModel

wp.set_module_options({"enable_backward": False})  # no autodiff here: forward code only, compiles ~4x faster


@wp.kernel
def project_out_kernel(
    x: wp.array(dtype=wp.vec3),
    v: wp.array(dtype=wp.vec3),
    inv_mass: wp.array(dtype=float),
    vertex_cloth: wp.array(dtype=wp.int32),
    thickness: wp.array(dtype=float),
    mesh: wp.uint64,
    closed: int,
    max_dist: float,
    use_ground: int,
    ground: float,
    moved: wp.array(dtype=float),
):
    i = wp.tid()
    if inv_mass[i] == 0.0:
        return
    p = x[i]
    r = thickness[vertex_cloth[i]]
    if mesh != wp.uint64(0):
        # on a closed mesh, inside only where the closest face's normal and the ray parity agree: the
        # normal-based sign alone can be wrong where the closest point is a body edge or corner seen from afar
        # (on the H200 a cape vertex 129 mm outside the mannequin was taken as inside at the 10 -> 5 mm switch
        # and put on the shoulder, which set the 5 mm drape flapping); parity means nothing on an open mesh
        q = wp.mesh_query_point_sign_normal(mesh, p, max_dist)
        sign = q.sign
        if q.result and sign < 0.0 and closed != 0:
            if wp.mesh_query_point_sign_parity(mesh, p, max_dist).sign > 0.0:
                sign = 1.0
        if q.result:
            s = wp.mesh_eval_position(mesh, q.face, q.u, q.v)
            diff = p - s
            dist = wp.length(diff)
            n = wp.mesh_eval_face_normal(mesh, q.face)
            if dist > 1.0e-12:
                n = diff / dist * sign
            if sign < 0.0 or dist < r:
                p = s + n * r
                vn = wp.dot(v[i], n)
                if vn < 0.0:
                    v[i] = v[i] - vn * n
    if use_ground != 0:
        if p[1] < ground + r:
            p = wp.vec3(p[0], ground + r, p[2])
            if v[i][1] < 0.0:
                v[i] = wp.vec3(v[i][0], 0.0, v[i][2])
    d0 = wp.length(p - x[i])
    x[i] = p
    moved[i] = wp.max(moved[i], d0)


def project_out(sim, max_dist: float = 0.25) -> np.ndarray:
    """Move ``sim``'s free vertices out of its colliders and above its ground (see module docstring); returns
    (N,) the distance [m] each vertex moved. Runs between steps (allocates one (N,) float array)."""
    m, st, solver = sim.model, sim.state, sim.solver
    dev = m.device
    moved = wp.zeros(m.particle_count, dtype=float, device=dev)
    meshes = [(c.mesh.id, int(c.closed)) for c in solver.colliders] or [(wp.uint64(0), 0)]
    use_ground = int(sim.ground is not None)
    for k, (mid, closed) in enumerate(meshes):
        wp.launch(project_out_kernel, m.particle_count,
                  inputs=[st.x, st.v, m.inv_mass, m.vertex_cloth, m.mat_thickness, mid, closed, float(max_dist),
                          use_ground if k == 0 else 0, float(sim.ground or 0.0)],
                  outputs=[moved], device=dev)
    out = moved.numpy().copy()
    del moved
    return out


def relax(sim, *, substeps: int = 4, iterations: int | None = None, dt: float | None = None) -> None:
    """Quasi-static relaxation of ``sim`` in place (see module docstring): velocities are zeroed during it
    and restored by the caller. ``dt``: length of each relaxation step [s] (default the sim's substep);
    ``iterations``: VBD iterations per step (default the sim's). Colliders and pins must be at rest (start
    pose = end pose) so that the relaxation does not move them."""
    from ..errors import SimulationError

    if substeps <= 0:
        return
    saved = (sim.dt, sim.substeps, sim.iterations)
    solver = sim.solver
    try:
        sim.dt = float(dt if dt is not None else sim.dt / sim.substeps) * substeps
        sim.substeps = int(substeps)
        sim.iterations = int(iterations or sim.iterations)
        solver._graph = None  # the captured frame holds dt/substeps/iterations as constants
        sim.state.v.zero_()
        sim.state.v_last.zero_()
        solver.frame(sim.state)
        if solver.read_bad_flag():
            raise SimulationError("the state became non-finite while relaxing after a level switch")
    finally:
        sim.dt, sim.substeps, sim.iterations = saved
        solver._graph = None


class ModelSnapshot:
    """A host copy of a :class:`ClothModel` (numpy arrays and host attributes), to rebuild the same model on a
    device later without re-deriving topology, colouring and rest shapes (seconds at 10⁶ vertices)."""

    def __init__(self, model: ClothModel):
        self.arrays = {}
        self.host = {}
        for k, val in vars(model).items():
            if isinstance(val, wp.array):
                self.arrays[k] = (val.numpy().copy(), val.dtype, tuple(val.shape))
            else:  # lists copied: the model's fabrics list changes with set_fabric, the snapshot's must not
                self.host[k] = list(val) if isinstance(val, list) else val
        self.nbytes_device = int(sum(getattr(model, k).capacity for k in self.arrays))

    def host_bytes(self) -> int:
        return int(sum(a.nbytes for a, _, _ in self.arrays.values()))

    def restore(self, device, fabrics=None) -> ClothModel:
        """A new ClothModel on ``device`` with the snapshot's arrays (materials rewritten for ``fabrics``)."""
        m = ClothModel.__new__(ClothModel)
        for k, val in self.host.items():
            setattr(m, k, list(val) if isinstance(val, list) else val)
        m.device = wp.get_device(device)
        for k, (a, dtype, shape) in self.arrays.items():
            arr = wp.empty(shape, dtype=dtype, device=m.device)
            if a.size:
                arr.assign(a)
            setattr(m, k, arr)
        if fabrics is not None and list(fabrics) != list(m.fabrics):
            m.fabrics = list(fabrics)
            m._write_materials()
        return m
