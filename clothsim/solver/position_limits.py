"""Where a vertex's position may go within a substep: the self-contact conservative bound, and the ground and
the collider contact planes as floors. Every position the VBD solve (clothsim.solver.kernels.vertex_update)
and the Chebyshev step (kernels.chebyshev_kernel) give a vertex passes through :func:`bounded`."""

import warp as wp


@wp.func
def above_floor(xn: wp.vec3, xpi: wp.vec3, ground_height: float):
    """``xn`` with its height raised to the ground plane if it ends below it (the plane itself, not the
    thickness above it: that is the penalty's). The penalty is one quadratic of the contact stiffness,
    and the self-contact pairs of a pile pressing a vertex down are many of the same stiffness, so the
    local step alone let the bottom layer sink (fold, 1 iteration: 5 cm after 140 frames, and once under,
    the self-contact bound held it there). Raising the height only brings xn nearer to a start x_prev
    that is above the plane, so the move stays inside the self-contact bound's ball around x_prev; from a
    start already under the plane (set from outside) the vertex may rise as far as its step takes it, and
    does not sink further."""
    floor = wp.min(ground_height, xpi[1])
    if xn[1] < floor:
        return wp.vec3(xn[0], floor, xn[2])
    return xn


# [m] a collider plane is a floor for a vertex that starts the substep outside it, on it, or inside it by at most
# this much (float32 rounding of a point put on the plane); one that starts deeper (a collider moving into the
# cloth, a vertex behind an open surface) is left to the penalty
COLLIDER_FLOOR_TOL = wp.constant(1.0e-6)


@wp.func
def above_collider_planes(xn: wp.vec3, xpi: wp.vec3, i: int, c_point: wp.array(dtype=wp.vec3),
                          c_normal: wp.array(dtype=wp.vec3), c_active: wp.array(dtype=wp.int32), slots: int):
    """``xn`` moved out along the normal onto each active collider contact plane (closest point, outward
    normal, found at the substep start) that it ends inside of, when the substep start ``xpi`` lies outside
    it or on it (within COLLIDER_FLOOR_TOL): the collider's counterpart of :func:`above_floor`. A vertex
    pressed onto a collider by a pile of self-contact pairs sank to the penalty's equilibrium, 1.79 mm into a
    box's top face and 1.29 mm into a sphere (tests/test_contacts.py::test_pressed_cloth_stays_outside_a_collider).
    The floor is the plane itself, not min(plane, start) as on the ground: a start put on the plane lies
    ~1e-8 m to either side of it after rounding, and a floor at the start let that ratchet down (0.4 µm in
    100 substeps). On a convex part of a body the plane touches the surface at the closest point and lies
    outside it elsewhere; in a concave one (two faces meeting in a valley) the closest point lies on one
    face, whose plane the step is kept above, and the other face has its own penalty."""
    for s in range(slots):
        k = i * slots + s
        if c_active[k] != 0:
            n = c_normal[k]
            cp = c_point[k]
            if wp.dot(xpi - cp, n) >= -COLLIDER_FLOOR_TOL:
                dn = wp.dot(xn - cp, n)
                if dn < 0.0:
                    xn = xn - dn * n
    return xn


@wp.func
def bounded(xn: wp.vec3, xpi: wp.vec3, i: int, self_enabled: int, min_dist: wp.array(dtype=float),
            bound_fraction: float, ground_enabled: int, ground_height: float,
            c_point: wp.array(dtype=wp.vec3), c_normal: wp.array(dtype=wp.vec3), c_active: wp.array(dtype=wp.int32),
            slots: int):
    """``xn`` outside the collider planes it started outside of (:func:`above_collider_planes`), then inside
    the self-contact conservative bound, then above the ground's floor: never farther from the substep start
    ``xpi`` than ``bound_fraction`` of the distance to the nearest non-adjacent primitive found at detection
    (He Chen et al. 2024), and not under the ground plane (:func:`above_floor`, which keeps a point inside
    that ball). The bound comes after the collider planes and shortens the step toward ``xpi``, which lies
    outside each of them (or within COLLIDER_FLOOR_TOL inside), so the point stays outside them too. Every
    position a vertex takes in a substep passes here: the vertex solve's and the Chebyshev extrapolation's,
    which from two points inside the ball can land outside it."""
    if slots > 0:
        xn = above_collider_planes(xn, xpi, i, c_point, c_normal, c_active, slots)
    if self_enabled != 0:
        d = xn - xpi
        dl = wp.length(d)
        bound = bound_fraction * min_dist[i]
        if dl > bound:
            xn = xpi + d * (bound / dl)
    if ground_enabled != 0:
        xn = above_floor(xn, xpi, ground_height)
    return xn
