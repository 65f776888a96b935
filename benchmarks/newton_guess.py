"""Newton's SolverVBD started from clothsim's extrapolated first guess, for references only
(``newton_side.NewtonCloth.set_initial_guess``): x + h·v + h²·a, a the last substep's acceleration clamped to 2 g,
as clothsim's ``predict_kernel`` (guess_mode 2). Newton's solver code is untouched: its ``forward_step`` leaves
the inertial guess as a displacement from the step start, and one kernel rewrites that displacement before Newton's
first truncation (so the self-contact bound still applies to the guess)."""

from __future__ import annotations

_EXTRAPOLATE_KERNEL = None

# NewtonCloth.set_initial_guess("extrapolate"): the last substep's acceleration is clamped to this length [m/s²],
# clothsim's EXTRAPOLATE_MAX_ACC (2 g; clothsim/solver/vbd.py), so both solvers' extrapolated guesses are one formula
EXTRAPOLATE_MAX_ACC = 2.0 * 9.80665


def _extrapolate_kernel():
    """The kernel that turns Newton's first guess into clothsim's extrapolated one (built on first use)."""
    global _EXTRAPOLATE_KERNEL
    if _EXTRAPOLATE_KERNEL is None:
        import warp as wp

        @wp.kernel
        def extrapolate_first_guess(dt: float, max_acc: float, qd: wp.array(dtype=wp.vec3),
                                    inv_mass: wp.array(dtype=float), v_last: wp.array(dtype=wp.vec3),
                                    displacement: wp.array(dtype=wp.vec3)):
            # Newton's forward_step left displacement = h·v + h²·g (its inertial guess, minus the step start);
            # clothsim's predict_kernel guess_mode 2: h·v + h²·a, a = (v_t − v_{t−1})/h clamped to max_acc
            i = wp.tid()
            v = qd[i]
            if inv_mass[i] > 0.0:
                a = (v - v_last[i]) / dt
                la = wp.length(a)
                if la > max_acc:
                    a = a * (max_acc / la)
                displacement[i] = dt * v + (dt * dt) * a
            v_last[i] = v

        _EXTRAPOLATE_KERNEL = extrapolate_first_guess
    return _EXTRAPOLATE_KERNEL


def use_extrapolated_guess(solver, on: bool, count: int, dt: float, v_last, device) -> None:
    """Install (``on``) or remove the extrapolated first guess on one ``SolverVBD`` instance: its
    ``_initialize_particles`` notes the substep's start state, and the next ``_penetration_free_truncation`` (the
    first guess's) runs the extrapolation kernel first. ``v_last`` holds each particle's velocity at the start of the
    last substep (the kernel updates it). Recapture any graph afterwards."""
    import warp as wp

    for name in ("_initialize_particles", "_penetration_free_truncation"):
        solver.__dict__.pop(name, None)  # back to the class's methods
    if not on:
        return
    init, trunc = solver._initialize_particles, solver._penetration_free_truncation
    first = []

    def initialize(state_in, state_out, contacts, step_dt):
        first.append(state_in)  # the next truncation is the first guess's
        init(state_in, state_out, contacts, step_dt)

    def truncate(state, contacts):
        if first:
            state_in = first.pop()
            wp.launch(_extrapolate_kernel(), dim=count,
                      inputs=[float(dt), EXTRAPOLATE_MAX_ACC, state_in.particle_qd, solver.model.particle_inv_mass,
                              v_last, solver.particle_displacements], device=device)
        trunc(state, contacts)

    solver._initialize_particles, solver._penetration_free_truncation = initialize, truncate
