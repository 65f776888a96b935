"""Vertex Block Descent kernels (He Chen et al., SIGGRAPH 2024), clothsim's own.

A substep of length h minimises the incremental potential
``G(x) = Σ m/(2h²)‖x − y‖² + E_elastic(x) + E_contact(x) + E_damping``, ``y = x_t + h·v_t + h²·g``,
by block Gauss–Seidel over vertices: vertices of one colour share no element, so each colour is one
parallel launch in which every vertex takes one Newton step on its own 3×3 block.

Damping is stiffness-proportional (Rayleigh β = k_d [s]): each element adds ``(k_d/h)·H_e`` to the
block and ``−(k_d/h)·H_e·(x − x_t)`` to the force. Aerodynamic drag acts along the vertex normal.
Contacts (ground plane, colliders) are quadratic penalties ½·k_c·(r − d)² with lagged Coulomb friction.
"""

import warp as wp

from .contact_blocks import collider_pair_crossings, contact_plane, crossing_plane, vertex_pair_contacts
from .cpu_sweep import SWEEP_MAX_COLORS, cpu_barrier, cpu_claim
from .elastic import bending_force_hessian, dihedral_angle, membrane_force_hessian
from .lane_sums import half_warp_sum_block, warp_sum_block
from .position_limits import bounded

wp.set_module_options({"enable_backward": False})  # no autodiff here: forward code only, compiles ~4x faster


# The per-vertex and per-hinge kernels of a substep take (count, chunk): thread t handles items
# [t·chunk, (t + 1)·chunk). CUDA launches them with chunk 1; the CPU with SolverVBD's CPU_SLOTS_PER_THREAD,
# since a Warp CPU thread's set-up (reading its arguments) costs ~10 ns, as much as the work of one item
# here (finish_substep: 12 ns a vertex with one thread each).
@wp.kernel
def predict_kernel(
    count: int,
    chunk: int,
    x: wp.array(dtype=wp.vec3),
    v: wp.array(dtype=wp.vec3),
    v_last: wp.array(dtype=wp.vec3),
    inv_mass: wp.array(dtype=float),
    gravity: wp.vec3,
    h: float,
    keep: float,
    guess_mode: int,
    max_acc: float,
    ext_acc: wp.array(dtype=wp.vec3),
    use_ext: int,
    pin_slot: wp.array(dtype=wp.int32),
    pin_start: wp.array(dtype=wp.vec3),
    pin_end: wp.array(dtype=wp.vec3),
    alpha: float,
    cheb_start: int,
    x_prev: wp.array(dtype=wp.vec3),
    y: wp.array(dtype=wp.vec3),
    cheb_prev2: wp.array(dtype=wp.vec3),
):
    """Start a substep: remember x_t, form the inertial target y = x_t + h·v_t + h²·g, and the first guess.

    Air damping c [1/s] (a force −c·m·v, taken implicitly) scales the velocity first: v_t ← v_t/(1 + c·h),
    passed as ``keep`` = 1/(1 + c·h) (1 without air damping).

    The first guess (``guess_mode``) is y itself (0, "inertia"); VBD's adaptive initialisation (1; He
    Chen et al. 2024, sec. 3.6): x_t + h·v_t + h²·ã with ã the part of gravity the vertex actually
    followed last substep (its acceleration projected on ĝ, clamped to [0, |g|]); or (2, "extrapolate")
    x_t + h·v_t + h²·a with a = (v_t − v_{t−1})/h the vertex's whole acceleration over the last substep,
    its length clamped to ``max_acc`` (a second-order predictor: its distance from the substep's solution
    is O(h³·da/dt) where y's is O(h²·|a − g|)). Adaptive suits cloth at rest: from y, a hanging strip
    (tests/test_hanging_strip.py, damping 0.02 s, 10 iterations) came to rest 13 % over-extended, the
    h²·g the iterations did not remove each substep. For moving cloth y is better than adaptive (on the
    swinging 32×32 sheet of benchmarks/sim_grid.py the error after one iteration per substep was
    1.7e-2 m from y against 6.8e-2 m adaptive), and the extrapolation better still (Simulator docstring).
    Unclamped, the extrapolation fed the unconverged iterates' noise back and the 1-iteration run
    diverged. The minimiser is unchanged.

    ``ext_acc`` (read when ``use_ext`` = 1) is a per-vertex external acceleration f_i/m_i [m/s²] added
    to gravity in y and in the first guess (Simulator.set_external_forces).

    A pinned vertex (inverse mass 0; ``pin_slot`` its index in the pin list) moves exactly to its
    target, linear in time over the frame: lerp(pin_start, pin_end, ``alpha``). With ``cheb_start`` = 1
    the first guess is also recorded as the Chebyshev history x⁽⁰⁾ (``cheb_prev2``), as a copy of x
    after this kernel would: one launch per substep instead of three (predict, pins, history copy).
    """
    t = wp.tid()
    for i in range(t * chunk, wp.min(t * chunk + chunk, count)):
        xi = x[i]
        x_prev[i] = xi
        vi = v[i] * keep
        if inv_mass[i] > 0.0:
            acc = gravity
            if use_ext != 0:
                acc = acc + ext_acc[i]
            y[i] = xi + h * vi + (h * h) * acc
            gl = wp.length(gravity)
            guess = xi + h * vi + (h * h) * acc
            if guess_mode == 2:
                ae = (vi - v_last[i]) / h  # external forces included: they acted last substep too
                la = wp.length(ae)
                if la > max_acc:
                    ae = ae * (max_acc / la)
                guess = xi + h * vi + (h * h) * ae
            elif guess_mode == 1 and gl > 0.0:
                guess = xi + h * vi
                gdir = gravity / gl
                a = wp.dot(vi - v_last[i], gdir) / h
                a = wp.clamp(a, 0.0, gl)
                guess = guess + (h * h * a) * gdir
                if use_ext != 0:
                    guess = guess + (h * h) * ext_acc[i]
            x[i] = guess
        else:
            y[i] = xi
            k = pin_slot[i]
            if k >= 0:
                x[i] = wp.lerp(pin_start[k], pin_end[k], alpha)
        if cheb_start != 0:
            cheb_prev2[i] = x[i]
        v_last[i] = vi


@wp.kernel
def vertex_normals_kernel(
    x: wp.array(dtype=wp.vec3),
    tri: wp.array(dtype=wp.vec3i),
    v_tri_offsets: wp.array(dtype=wp.int32),
    v_tri: wp.array(dtype=wp.int32),
    normals: wp.array(dtype=wp.vec3),
):
    """Area-weighted vertex normals, gathered per vertex (no atomics: deterministic)."""
    i = wp.tid()
    n = wp.vec3(0.0)
    for a in range(v_tri_offsets[i], v_tri_offsets[i + 1]):
        t = tri[v_tri[a] // 3]
        n += wp.cross(x[t[1]] - x[t[0]], x[t[2]] - x[t[0]])
    ln = wp.length(n)
    if ln > 0.0:
        n = n / ln
    normals[i] = n


@wp.kernel
def edge_angles_kernel(
    count: int,
    chunk: int,
    x: wp.array(dtype=wp.vec3),
    bend: wp.array(dtype=wp.vec4i),
    theta: wp.array(dtype=float),
):
    """Dihedral angle of every bending stencil at the step start (for bending damping)."""
    t = wp.tid()
    for e in range(t * chunk, wp.min(t * chunk + chunk, count)):
        q = bend[e]
        theta[e] = dihedral_angle(x[q[0]], x[q[1]], x[q[2]], x[q[3]])


# --------------------------------------------------------------------------------------------------
# the vertex solve
#
# A vertex's block gathers terms of three kinds. The per-element terms (membrane triangles, bending
# hinges, collider feature pairs, self-contact pairs) are spread over ``lanes`` threads: lane l takes
# adjacency entries l, l + lanes, ...; on CUDA a block of ``lanes`` threads solves one vertex and sums
# its lanes with a tile reduction (a fixed tree: deterministic). The per-vertex terms (inertia, seams,
# drag, ground, collider planes) and the update are done once, by lane 0. On CPU lanes = 1 and one
# launch sweeps every colour in order.



@wp.func
def vertex_elastic(
    i: int, lane: int, lanes: int,
    x: wp.array(dtype=wp.vec3), x_prev: wp.array(dtype=wp.vec3), theta_prev: wp.array(dtype=float),
    tri: wp.array(dtype=wp.vec3i), tri_dm_inv: wp.array(dtype=wp.mat22), tri_area: wp.array(dtype=float),
    v_tri_offsets: wp.array(dtype=wp.int32), v_tri: wp.array(dtype=wp.int32),
    bend: wp.array(dtype=wp.vec4i), bend_k: wp.array(dtype=float), bend_rest: wp.array(dtype=float),
    v_bend_offsets: wp.array(dtype=wp.int32), v_bend: wp.array(dtype=wp.int32),
    coef: wp.vec4, kd_h: float, nh_block: int,
):
    """Membrane and bending blocks of vertex i over this lane's share of its triangles and hinges.

    ``coef`` and ``kd_h`` (k_d/h) are those of i's cloth: an element never spans two cloths."""
    f = wp.vec3(0.0)
    H = wp.mat33(0.0)
    for a in range(v_tri_offsets[i] + lane, v_tri_offsets[i + 1], lanes):
        code = v_tri[a]
        t = code // 3
        k = code - 3 * t
        ids = tri[t]
        fe, He = membrane_force_hessian(x[ids[0]], x[ids[1]], x[ids[2]], x_prev[ids[0]], x_prev[ids[1]], x_prev[ids[2]],
                                        tri_dm_inv[t], tri_area[t], k, coef, kd_h, nh_block)
        f += fe
        H += He
    for a in range(v_bend_offsets[i] + lane, v_bend_offsets[i + 1], lanes):
        code = v_bend[a]
        e = code // 4
        k = code - 4 * e
        q = bend[e]
        fe, He = bending_force_hessian(x[q[0]], x[q[1]], x[q[2]], x[q[3]], theta_prev[e], k, bend_k[e], bend_rest[e],
                                       kd_h)
        f += fe
        H += He
    return f, H


@wp.func
def vertex_local(
    i: int,
    x: wp.array(dtype=wp.vec3), x_prev: wp.array(dtype=wp.vec3), y: wp.array(dtype=wp.vec3),
    normals: wp.array(dtype=wp.vec3), mass: wp.array(dtype=float), vertex_area: wp.array(dtype=float),
    spring: wp.array(dtype=wp.vec2i), spring_k: wp.array(dtype=float), v_spring_offsets: wp.array(dtype=wp.int32),
    v_spring: wp.array(dtype=wp.int32),
    h: float, drag: float, wind: wp.vec3, ground_enabled: int, ground_height: float,
    r: float, kc: float, mu: float, friction_eps: float, kd: float,
    c_point: wp.array(dtype=wp.vec3), c_normal: wp.array(dtype=wp.vec3), c_vel: wp.array(dtype=wp.vec3),
    c_active: wp.array(dtype=wp.int32), slots: int,
):
    """Per-vertex terms: inertia, seams, drag, ground and collider contact planes."""
    xi = x[i]
    xpi = x_prev[i]
    inv_h = 1.0 / h
    w = mass[i] * inv_h * inv_h
    f = w * (y[i] - xi)
    H = wp.identity(n=3, dtype=float) * w
    # seams: zero-length springs ½·k·|x_i − x_j|²
    for a in range(v_spring_offsets[i], v_spring_offsets[i + 1]):
        code = v_spring[a]
        s = code // 2
        k = code - 2 * s
        pair = spring[s]
        j = pair[1 - k]
        ks = spring_k[s]
        f += -ks * (xi - x[j])
        H += wp.identity(n=3, dtype=float) * ks
    # aerodynamic drag along the normal: f = -drag·A·((v − wind)·n)·n
    if drag > 0.0:
        n = normals[i]
        ca = drag * vertex_area[i]
        vrel = (xi - xpi) * inv_h - wind
        f += -ca * wp.dot(vrel, n) * n
        H += (ca * inv_h) * wp.outer(n, n)
    if ground_enabled != 0:
        fc, Hc = contact_plane(xi, xpi, wp.vec3(0.0, ground_height, 0.0), wp.vec3(0.0, 1.0, 0.0), wp.vec3(0.0),
                               r, kc, mu, h, friction_eps, kd)
        f += fc
        H += Hc
    for s in range(slots):
        k = i * slots + s
        if c_active[k] != 0:
            fc, Hc = contact_plane(xi, xpi, c_point[k], c_normal[k], c_vel[k], r, kc, mu, h, friction_eps, kd)
            f += fc
            H += Hc
    return f, H


@wp.func
def block_step(H: wp.mat33, f: wp.vec3):
    """(H⁻¹f, True), or (0, False) where |det H| ≤ 1e-20 or the step is not finite (a determinant, cubic in
    H, overflows float32 once H's entries pass ~1e12: near-degenerate elements of a crushed pile): by the
    adjugate, the determinant computed once."""
    c0 = wp.vec3(H[1, 1] * H[2, 2] - H[1, 2] * H[2, 1], H[1, 2] * H[2, 0] - H[1, 0] * H[2, 2],
                 H[1, 0] * H[2, 1] - H[1, 1] * H[2, 0])
    det = H[0, 0] * c0[0] + H[0, 1] * c0[1] + H[0, 2] * c0[2]
    if wp.abs(det) <= 1.0e-20:
        return wp.vec3(0.0), False
    c1 = wp.vec3(H[0, 2] * H[2, 1] - H[0, 1] * H[2, 2], H[0, 0] * H[2, 2] - H[0, 2] * H[2, 0],
                 H[0, 1] * H[2, 0] - H[0, 0] * H[2, 1])
    c2 = wp.vec3(H[0, 1] * H[1, 2] - H[0, 2] * H[1, 1], H[0, 2] * H[1, 0] - H[0, 0] * H[1, 2],
                 H[0, 0] * H[1, 1] - H[0, 1] * H[1, 0])
    # H⁻¹ = adj(H)/det, adj(H) having the cofactor vectors c0, c1, c2 as its columns
    dx = (c0 * f[0] + c1 * f[1] + c2 * f[2]) / det
    if not wp.isfinite(dx):
        return wp.vec3(0.0), False
    return dx, True


@wp.func
def vertex_update(
    i: int, f: wp.vec3, H: wp.mat33, x: wp.array(dtype=wp.vec3), x_prev: wp.array(dtype=wp.vec3),
    self_enabled: int, min_dist: wp.array(dtype=float), bound_fraction: float,
    ground_enabled: int, ground_height: float, r: float, kc: float, h: float, kd: float,
    c_point: wp.array(dtype=wp.vec3), c_normal: wp.array(dtype=wp.vec3), c_vel: wp.array(dtype=wp.vec3),
    c_active: wp.array(dtype=wp.int32), slots: int,
    jacobi: int, x_out: wp.array(dtype=wp.vec3), relax: float, cheb_omega: float,
):
    """x_i ← x_i + H⁻¹f, limited by the self-contact conservative bound.

    Gauss–Seidel (``jacobi`` = 0): x_i is moved in place. Jacobi (``jacobi`` = 1): ``x`` is the iterate
    x⁽ⁿ⁻¹⁾, read by every vertex, and the result goes to ``x_out``, which holds x⁽ⁿ⁻²⁾ (the solver
    alternates two arrays): x̂ = x_i + relax·Δx, then the Chebyshev step x⁽ⁿ⁾ = ω(x̂ − x⁽ⁿ⁻²⁾) + x⁽ⁿ⁻²⁾
    (``cheb_omega`` = ω; 1 = none), so an iteration is one launch with no copy.

    Contact planes (ground, colliders) are piecewise quadratic: zero while the vertex is clear of them.
    A Newton step from a point clear of a plane does not see it and can cross it by as much as the rest of
    the block pulls (a tight waistband pulled a vertex several mm into the body), and the next iteration
    pushes it back out: the iterations then end anywhere between, and (x − x_t)/h carries that as a pop of
    up to ~2 m/s. So the local minimisation is done exactly: a plane the step crosses is added as active
    (linearised at x_i) and the step is solved again: the exact minimiser of the vertex's local energy
    with one plane, and with several a step that ends at the planes instead of through them."""
    dx0, ok = block_step(H, f)
    # a failed solve (singular or overflowing block) leaves the vertex where it is (dx0 = 0), but still
    # inside the bound and above the floor: in a substep's first iteration "where it is" is the first guess
    xi = x[i]
    xpi = x_prev[i]
    xn = xi + dx0
    if ok:
        fa = wp.vec3(0.0)
        Ha = wp.mat33(0.0)
        if ground_enabled != 0:
            fc, Hc = crossing_plane(xi, xpi, xn, wp.vec3(0.0, ground_height, 0.0), wp.vec3(0.0, 1.0, 0.0),
                                    wp.vec3(0.0), r, kc, h, kd)
            fa += fc
            Ha += Hc
        for s in range(slots):
            k = i * slots + s
            if c_active[k] != 0:
                fc, Hc = crossing_plane(xi, xpi, xn, c_point[k], c_normal[k], c_vel[k], r, kc, h, kd)
                fa += fc
                Ha += Hc
        if Ha[0, 0] + Ha[1, 1] + Ha[2, 2] > 0.0:
            dx1, ok1 = block_step(H + Ha, f + fa)
            xn = xi + dx1
    xn = bounded(xn, xpi, i, self_enabled, min_dist, bound_fraction, ground_enabled, ground_height, c_point, c_normal,
                 c_active, slots)
    if jacobi == 0:
        x[i] = xn
    else:
        xh = xi + relax * (xn - xi)
        if cheb_omega != 1.0:
            xo = x_out[i]
            xh = cheb_omega * (xh - xo) + xo
        # over-relaxation (relax > 1) and the extrapolation can leave the bound's ball and go under the floor
        x_out[i] = bounded(xh, xpi, i, self_enabled, min_dist, bound_fraction, ground_enabled, ground_height, c_point,
                           c_normal, c_active, slots)


# collider feature planes are checked for crossing (collider_pair_crossings) only when the vertex's trial
# step is longer than this fraction of the contact thickness r: a shorter step crosses a plane by less
CROSS_MIN_FRACTION = 0.1

# threads per vertex in the CUDA kernels: a half warp (the shuffle width above); the variant with
# contact pairs may use a whole warp (WARP_LANES), whose lanes share a vertex's contact pairs
LANES = 16
WARP_LANES = 32


def _make_vbd_solve_kernel(tiled: bool, pair_contacts: bool = True, whole_warp: bool = False, sweep: bool = False):
    """The VBD vertex pass, in variants built from this one source.

    tiled = False: one thread per vertex (CPU, lanes = 1, one launch may sweep every colour in order;
    CUDA colours too large to pay for idle lanes). tiled = True (CUDA only): a half warp of LANES = 16
    threads per vertex, two vertices per warp; the lanes share the vertex's elements and contact pairs,
    a half-warp shuffle butterfly sums their blocks, lane 0 adds the per-vertex terms and moves the vertex:
    x_i ← x_i + H_i⁻¹ f_i. pair_contacts = False leaves out the contact-pair loops (collider features and
    self contact) at code generation, for models without them: fewer registers, more resident warps.
    whole_warp = True (with tiled): a whole warp of WARP_LANES = 32 threads per vertex, for colours whose
    vertices carry many contact pairs (a folded cloth: up to ~200 pairs per vertex).
    sweep = True (CPU, untiled): one launch (one Warp thread) per CPU thread sweeps every colour of a
    Gauss–Seidel iteration (``color_count`` colours, from ``color_offsets``); thread ``color_start`` of
    ``threads`` walks a colour's chunks of ``chunk`` vertices from the start of its share, round, solving
    each one no other thread has claimed (``claims``: a fold's contacts crowd some rows, and fixed shares
    left a thread waiting: 2-core CPU, fold N = 64, 1 iteration, 92.7 against 87.4 ms a frame), and the
    threads meet at a spin barrier (``sync[0]``) before the next colour: one hand-off to the worker threads
    an iteration instead of one a colour (see SolverVBD._solve_cpu_sweep).
    Every variant but the CPU kernel with contact pairs gets a module of its own ("unique"), compiled
    only where it is launched: the tiled ones on CUDA only; the untiled one without contact pairs on the
    CPU for models without them (pinned 64×64 grid, 1 iteration: 40.3 against 42.3 ms a frame, 2-core
    CPU) and on CUDA for colours too large for tiles.
    """

    color_loop = SWEEP_MAX_COLORS if sweep else 1

    def vbd_solve(
        color_vertices: wp.array(dtype=wp.int32),
        color_start: int,
        color_count: int,
        lanes: int,
        chunk: int,
        # sweep (CPU): colour c is color_vertices[color_offsets[c] : color_offsets[c + 1]]; ``threads`` threads
        # meet at the barrier in sync[0], sync[1] flags a barrier that timed out, claims[k] marks the chunk
        # that starts at colour-order position k as taken (unused by the other variants)
        color_offsets: wp.array(dtype=wp.int32),
        sync: wp.array(dtype=wp.int32),
        claims: wp.array(dtype=wp.int32),
        threads: int,
        # state
        x: wp.array(dtype=wp.vec3),
        x_prev: wp.array(dtype=wp.vec3),
        y: wp.array(dtype=wp.vec3),
        normals: wp.array(dtype=wp.vec3),
        theta_prev: wp.array(dtype=float),
        # model
        mass: wp.array(dtype=float),
        vertex_area: wp.array(dtype=float),
        vertex_cloth: wp.array(dtype=wp.int32),
        tri: wp.array(dtype=wp.vec3i),
        tri_dm_inv: wp.array(dtype=wp.mat22),
        tri_area: wp.array(dtype=float),
        v_tri_offsets: wp.array(dtype=wp.int32),
        v_tri: wp.array(dtype=wp.int32),
        bend: wp.array(dtype=wp.vec4i),
        bend_k: wp.array(dtype=float),
        bend_rest: wp.array(dtype=float),
        v_bend_offsets: wp.array(dtype=wp.int32),
        v_bend: wp.array(dtype=wp.int32),
        spring: wp.array(dtype=wp.vec2i),
        spring_k: wp.array(dtype=float),
        v_spring_offsets: wp.array(dtype=wp.int32),
        v_spring: wp.array(dtype=wp.int32),
        mat_coef: wp.array(dtype=wp.vec4),
        mat_damping: wp.array(dtype=float),
        mat_friction: wp.array(dtype=float),
        mat_thickness: wp.array(dtype=float),
        # environment
        h: float,
        drag: float,
        wind: wp.vec3,
        ground_enabled: int,
        ground_height: float,
        contact_stiffness: float,
        contact_damping: float,
        friction_eps: float,
        nh_block: int,
        # collider contact planes (N * slots)
        c_point: wp.array(dtype=wp.vec3),
        c_normal: wp.array(dtype=wp.vec3),
        c_vel: wp.array(dtype=wp.vec3),
        c_active: wp.array(dtype=wp.int32),
        slots: int,
        # edges and vertex -> edge adjacency
        edges: wp.array(dtype=wp.vec2i),
        v_edge_offsets: wp.array(dtype=wp.int32),
        v_edge: wp.array(dtype=wp.int32),
        # collider feature pairs (ColliderContacts), used when collider_enabled != 0
        collider_enabled: int,
        cpts: wp.array(dtype=wp.vec3),
        cvel: wp.array(dtype=wp.vec3),
        cvn: wp.array(dtype=wp.vec3),
        cedges: wp.array2d(dtype=wp.int32),
        cen: wp.array(dtype=wp.vec4),
        kce: int,
        ce_count: wp.array(dtype=wp.int32),
        ce_edge: wp.array(dtype=wp.int32),
        kct: int,
        ct_count: wp.array(dtype=wp.int32),
        ct_vertex: wp.array(dtype=wp.int32),
        # self-contact lists (clothsim.collision.SelfContactDetector), used when self_enabled != 0
        self_enabled: int,
        kv: int,
        kt: int,
        ke: int,
        vt_count: wp.array(dtype=wp.int32),
        vt_tri: wp.array(dtype=wp.int32),
        tv_count: wp.array(dtype=wp.int32),
        tv_vertex: wp.array(dtype=wp.int32),
        ee_count: wp.array(dtype=wp.int32),
        ee_edge: wp.array(dtype=wp.int32),
        min_dist: wp.array(dtype=float),
        bound_fraction: float,
        vertex_color: wp.array(dtype=wp.int32),
        x_iter: wp.array(dtype=wp.vec3),
        # Jacobi sweep (vertex_update): 0 = Gauss–Seidel in place; else the output array (holding x⁽ⁿ⁻²⁾),
        # the step's scale and the Chebyshev ω
        jacobi: int,
        x_out: wp.array(dtype=wp.vec3),
        relax: float,
        cheb_omega: float,
    ):
        tid = wp.tid()
        # the sweep variant's loop over colours; the others run it once (a constant range of one, unrolled at
        # code generation: the same code as without it; a break in the loop would keep it a loop)
        for c in range(color_loop):
            cstart = color_start
            ccount = color_count
            first = int(0)
            mine = int(0)
            if wp.static(sweep):  # past the last colour ccount is 0
                cstart = color_offsets[c]
                ccount = color_offsets[c + 1] - cstart
                # thread color_start of threads begins its walk over the colour's chunks at its share's start
                first = ((color_start * ccount // threads) // chunk) * chunk
            # untiled: thread tid sweeps slots [tid·chunk, (tid + 1)·chunk) in order (on the CPU a thread's
            # set-up, reading the ~90 arguments, costs ~10 ns: one thread per vertex spent it 4096 times a sweep)
            s0 = tid
            s1 = tid + 1
            if wp.static(not tiled):
                s0 = tid * chunk
                s1 = wp.min(s0 + chunk, ccount)
            if wp.static(sweep):  # the whole colour, walked from ``first`` round to it (the chunks it claims)
                s0 = 0
                s1 = ccount
            for slot_ in range(s0, s1):
                slot = slot_
                lane = int(0)
                step = int(1)  # lanes: a constant 1 lets the compiler make the untiled loops plain ones
                if wp.static(tiled):
                    step = lanes
                    slot = tid // lanes
                    lane = tid - slot * lanes
                valid = slot < ccount
                if wp.static(sweep):
                    slot = (slot_ + first) % ccount
                    if slot % chunk == 0:  # a chunk starts: solve it if no other thread has claimed it
                        mine = cpu_claim(claims, cstart + slot)
                    valid = mine != 0
                i = int(0)
                if valid:
                    i = color_vertices[cstart + slot]
                ci = vertex_cloth[i]
                r = mat_thickness[ci]
                mu = mat_friction[ci]
                inv_h = 1.0 / h
                kd = contact_stiffness * contact_damping
                fe = wp.vec3(0.0)
                He = wp.mat33(0.0)
                if valid:
                    fe, He = vertex_elastic(i, lane, step, x, x_prev, theta_prev, tri, tri_dm_inv, tri_area, v_tri_offsets,
                                            v_tri, bend, bend_k, bend_rest, v_bend_offsets, v_bend, mat_coef[ci],
                                            mat_damping[ci] * inv_h, nh_block)
                    if wp.static(pair_contacts):
                        fc, Hc = vertex_pair_contacts(i, lane, step, x, x_prev, tri, v_tri_offsets, v_tri, edges,
                                                      v_edge_offsets, v_edge, r, contact_stiffness, mu, h, friction_eps, kd,
                                                      collider_enabled, cpts, cvel, cvn, cedges, cen, kce, ce_count, ce_edge,
                                                      kct, ct_count, ct_vertex, self_enabled, kv, kt, ke, vt_count, vt_tri,
                                                      tv_count, tv_vertex, ee_count, ee_edge, vertex_color, x_iter)
                        fe = fe + fc
                        He = He + Hc
                if wp.static(tiled and whole_warp):
                    fe, He = warp_sum_block(fe, He)
                elif wp.static(tiled):
                    fe, He = half_warp_sum_block(fe, He)
                if wp.static(pair_contacts):
                    if collider_enabled != 0:
                        # collider feature planes the step would cross (every lane needs the trial step: the
                        # butterfly above left the sums in every lane)
                        fa = wp.vec3(0.0)
                        Ha = wp.mat33(0.0)
                        if valid:
                            fl, Hl = vertex_local(i, x, x_prev, y, normals, mass, vertex_area, spring, spring_k,
                                                  v_spring_offsets, v_spring, h, drag, wind, ground_enabled, ground_height, r,
                                                  contact_stiffness, mu, friction_eps, kd, c_point, c_normal, c_vel, c_active,
                                                  slots)
                            Ht = Hl + He
                            dx = wp.vec3(0.0)
                            dx, ok = block_step(Ht, fl + fe)
                            # a plane crossed by less than CROSS_MIN_FRACTION of the thickness is left to the next
                            # iteration (the walk over the pairs again costs as much as the first one)
                            if wp.length(dx) > CROSS_MIN_FRACTION * r:
                                fa, Ha = collider_pair_crossings(i, lane, step, dx, x, x_prev, tri,
                                                                 v_tri_offsets, v_tri, edges, v_edge_offsets, v_edge, r,
                                                                 contact_stiffness, h, kd, cpts, cvel, cvn, cedges, cen, kce,
                                                                 ce_count, ce_edge, kct, ct_count, ct_vertex)
                        if wp.static(tiled and whole_warp):
                            fa, Ha = warp_sum_block(fa, Ha)
                        elif wp.static(tiled):
                            fa, Ha = half_warp_sum_block(fa, Ha)
                        fe = fe + fa
                        He = He + Ha
                if valid and lane == 0:
                    fl, Hl = vertex_local(i, x, x_prev, y, normals, mass, vertex_area, spring, spring_k, v_spring_offsets,
                                          v_spring, h, drag, wind, ground_enabled, ground_height, r, contact_stiffness, mu,
                                          friction_eps, kd, c_point, c_normal, c_vel, c_active, slots)
                    vertex_update(i, fl + fe, Hl + He, x, x_prev, self_enabled, min_dist, bound_fraction, ground_enabled,
                                  ground_height, r, contact_stiffness, h, kd, c_point, c_normal, c_vel, c_active, slots,
                                  jacobi, x_out, relax, cheb_omega)
            if wp.static(sweep):  # every thread done with colour c before any starts the next
                if c < color_count:
                    cpu_barrier(sync, (c + 1) * threads)  # a wait that timed out flags sync[1]: the solver raises

    if not tiled and pair_contacts and not sweep:
        return wp.kernel(vbd_solve, name="vbd_solve_kernel")  # the CPU kernel, in this module
    name = (("vbd_solve_warp" if whole_warp else "vbd_solve_half_warp") if tiled else
            ("vbd_solve_sweep" if sweep else "vbd_solve")) + (
        "_kernel" if pair_contacts else "_elastic_kernel")
    return wp.kernel(vbd_solve, name=name, module="unique", enable_backward=False)


vbd_solve_kernel = _make_vbd_solve_kernel(tiled=False)
# each in a module of its own: the tiled ones CUDA only, with and without the contact-pair loops; the
# untiled one without them (CPU and CUDA)
vbd_solve_half_warp_kernel = _make_vbd_solve_kernel(tiled=True, pair_contacts=True)
vbd_solve_half_warp_elastic_kernel = _make_vbd_solve_kernel(tiled=True, pair_contacts=False)
vbd_solve_warp_kernel = _make_vbd_solve_kernel(tiled=True, pair_contacts=True, whole_warp=True)
vbd_solve_warp_elastic_kernel = _make_vbd_solve_kernel(tiled=True, pair_contacts=False, whole_warp=True)
vbd_solve_elastic_kernel = _make_vbd_solve_kernel(tiled=False, pair_contacts=False)
# CPU only: every colour of an iteration in one launch per thread (SolverVBD._solve_cpu_sweep), with and without
# the contact-pair loops
vbd_solve_sweep_kernel = _make_vbd_solve_kernel(tiled=False, sweep=True)
vbd_solve_sweep_elastic_kernel = _make_vbd_solve_kernel(tiled=False, pair_contacts=False, sweep=True)


@wp.kernel
def chebyshev_kernel(
    count: int,
    chunk: int,
    omega: float,
    inv_mass: wp.array(dtype=float),
    x: wp.array(dtype=wp.vec3),
    prev: wp.array(dtype=wp.vec3),
    prev2: wp.array(dtype=wp.vec3),
    ground_enabled: int,
    ground_height: float,
    x_prev: wp.array(dtype=wp.vec3),
    self_enabled: int,
    min_dist: wp.array(dtype=float),
    bound_fraction: float,
    c_point: wp.array(dtype=wp.vec3),
    c_normal: wp.array(dtype=wp.vec3),
    c_active: wp.array(dtype=wp.int32),
    slots: int,
    skip_dist: float,
):
    """Chebyshev step after an iteration: x ← ω(x − x⁽ⁿ⁻²⁾) + x⁽ⁿ⁻²⁾, kept inside the self-contact bound,
    outside the collider planes and above the ground's floor (:func:`bounded`: the extrapolation can carry a
    vertex out of the ball the bound allows, and one resting on a surface through it); shift the history.
    With self contact, a vertex whose nearest non-adjacent primitive at detection lies closer than
    ``skip_dist`` (``min_dist``; 0: none) keeps its solved position (Simulator(chebyshev_contacts="skip")).

    x⁽ⁿ⁻²⁾ is held to the same limits first: the oldest history point of a substep is its first guess, which
    the bound and the floor have not seen, and a vertex the bound stopped short of it (a sheet falling at the
    speed cap) or the floor held above it was extrapolated back from the limit by (ω − 1) times that
    excess (N = 32, 0.98 mm edges, 0.3 + 0.3 mm contact, standing sheet falling: 0.1457 m/s at 4 iterations and
    0.1454 at 10 against the 0.1528 of the cap and of the runs without the step)."""
    t = wp.tid()
    for i in range(t * chunk, wp.min(t * chunk + chunk, count)):
        xn = x[i]
        if inv_mass[i] > 0.0 and not (self_enabled != 0 and min_dist[i] < skip_dist):
            xp = x_prev[i]
            p2 = bounded(prev2[i], xp, i, self_enabled, min_dist, bound_fraction, ground_enabled, ground_height,
                         c_point, c_normal, c_active, slots)
            xn = bounded(omega * (xn - p2) + p2, xp, i, self_enabled, min_dist, bound_fraction,
                         ground_enabled, ground_height, c_point, c_normal, c_active, slots)
            x[i] = xn
        prev2[i] = prev[i]
        prev[i] = xn


@wp.kernel
def finish_substep_kernel(
    count: int,
    chunk: int,
    nv: int,
    x: wp.array(dtype=wp.vec3),
    x_prev: wp.array(dtype=wp.vec3),
    h: float,
    v: wp.array(dtype=wp.vec3),
    bad: wp.array(dtype=wp.int32),
    n_angles: int,
    bend: wp.array(dtype=wp.vec4i),
    theta: wp.array(dtype=float),
):
    """End a substep over ``count`` = max(nv, n_angles) items: for vertices i < nv, v = (x − x_t)/h and
    flag non-finite positions (read once per frame); for hinges e < n_angles, the dihedral angle at
    the next substep's start (edge_angles_kernel's work, fused here: the end positions are the next
    start positions, and this kernel writes no position). ``n_angles`` is 0 after a frame's last substep,
    since positions may be set between frames."""
    t = wp.tid()
    for i in range(t * chunk, wp.min(t * chunk + chunk, count)):
        if i < nv:
            xi = x[i]
            vi = (xi - x_prev[i]) / h
            v[i] = vi
            if not (wp.isfinite(xi) and wp.isfinite(vi)):
                bad[0] = 1
        if i < n_angles:
            q = bend[i]
            theta[i] = dihedral_angle(x[q[0]], x[q[1]], x[q[2]], x[q[3]])
