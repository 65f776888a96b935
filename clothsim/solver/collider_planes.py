"""Per-substep collider kernels: a moving collider's pose at the substep, and each cloth vertex's contact
plane against a collider mesh (its closest point, inside or outside). The vertex solve reads the planes
(clothsim.solver.kernels.vertex_local); SolverVBD launches these before each substep's iterations."""

import warp as wp

wp.set_module_options({"enable_backward": False})


@wp.kernel
def lerp_points_kernel(a: wp.array(dtype=wp.vec3), b: wp.array(dtype=wp.vec3), t: float, out: wp.array(dtype=wp.vec3)):
    i = wp.tid()
    out[i] = wp.lerp(a[i], b[i], t)


# [m] a vertex closer than this to a collider's surface takes the closest face's normal
NORMAL_FROM_FACE = wp.constant(1.0e-6)


@wp.kernel(module="unique", enable_backward=False)  # launched with query_block_dim: see its docstring
def collider_detect_kernel(
    x: wp.array(dtype=wp.vec3),
    mesh: wp.uint64,
    slot: int,
    slots: int,
    query_radius: float,
    closed: int,
    c_point: wp.array(dtype=wp.vec3),
    c_normal: wp.array(dtype=wp.vec3),
    c_vel: wp.array(dtype=wp.vec3),
    c_active: wp.array(dtype=wp.int32),
):
    """Closest collider point of each cloth vertex (inside or outside), kept as a contact plane.

    Inside or outside: the closest face's normal says, except on a closed mesh where the closest point lies
    on an edge or corner of that face: there the face picked among those sharing the feature may face
    away from the vertex (Warp's normal sign was wrong for 7 of 50 899 points within 1 cm of a 20° wedge,
    tests/test_multires.py), and the ray parity decides.

    The normal is the face's (outward by the winding) where the closest point lies inside a face, where it is
    the same direction as the separation's, exactly, and where the vertex lies within NORMAL_FROM_FACE of the
    surface: there the separation's direction is float32 rounding (a vertex held on the plane by the collider
    floor, position_limits.above_collider_planes, sits ~1e-8 m from it)."""
    i = wp.tid()
    p = x[i]
    q = wp.mesh_query_point_sign_normal(mesh, p, query_radius)
    k = i * slots + slot
    if q.result:
        sign = q.sign
        interior = wp.min(wp.min(q.u, q.v), 1.0 - q.u - q.v) >= 1.0e-5
        if closed != 0 and not interior:
            sign = wp.mesh_query_point_sign_parity(mesh, p, query_radius).sign
        cp = wp.mesh_eval_position(mesh, q.face, q.u, q.v)
        d = p - cp
        dl = wp.length(d)
        n = wp.vec3(0.0)
        if interior or dl <= NORMAL_FROM_FACE:
            m = wp.mesh_get(mesh)
            i0 = m.indices[q.face * 3 + 0]
            i1 = m.indices[q.face * 3 + 1]
            i2 = m.indices[q.face * 3 + 2]
            n = wp.normalize(wp.cross(m.points[i1] - m.points[i0], m.points[i2] - m.points[i0]))
        else:
            n = d / dl * sign
        c_point[k] = cp
        c_normal[k] = n
        c_vel[k] = wp.mesh_eval_velocity(mesh, q.face, q.u, q.v)
        c_active[k] = 1
    else:
        c_active[k] = 0
