"""ClothState: what changes as the simulation advances (positions, velocities, pin targets)."""

from __future__ import annotations

import numpy as np
import warp as wp


class ClothState:
    """Device arrays that change every step.

    Attributes:
        x: positions [m], shape (particle_count,), vec3.
        v: velocities [m/s], shape (particle_count,), vec3.
        v_last: velocities [m/s] at the start of the last substep (the solver's adaptive and extrapolated
            initial guesses read the acceleration from it), shape (particle_count,), vec3.
        pin_start, pin_end: pin targets [m] at the start / end of the current frame, shape (pin_count,).
    """

    def __init__(self, model):
        d = model.device
        self.x = wp.array(model.host_rest_positions.astype(np.float32), dtype=wp.vec3, device=d)
        self.v = wp.zeros(model.particle_count, dtype=wp.vec3, device=d)
        self.v_last = wp.zeros(model.particle_count, dtype=wp.vec3, device=d)
        tgt = model.host_pin_targets.astype(np.float32)
        self.pin_start = wp.array(tgt, dtype=wp.vec3, device=d)
        self.pin_end = wp.array(tgt, dtype=wp.vec3, device=d)

    def arrays(self) -> list:
        return [self.x, self.v, self.v_last, self.pin_start, self.pin_end]

    def nbytes(self) -> int:
        return sum(a.capacity for a in self.arrays())

    def release(self) -> None:
        self.x = self.v = self.v_last = self.pin_start = self.pin_end = None
