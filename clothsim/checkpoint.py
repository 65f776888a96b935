"""Checkpoints: the full simulation state in one .npz, written atomically, restored exactly.

What is saved: positions, velocities, pin targets, every collider's current pose, the frame
counter, and the settings and topology fingerprint needed to refuse a checkpoint from another setup.
Contacts are recomputed from these at the start of every substep, so restoring them is exact.
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
from pathlib import Path

import numpy as np

from .errors import InputError
from .solver.self_collision import BOUND_FRACTION

_VERSION = 2


def _fingerprint(sim) -> str:
    m = sim.model
    h = hashlib.sha256()
    for a in (m.host_triangles, m.host_bend, m.host_springs, m.host_pin_indices):
        h.update(np.ascontiguousarray(a).tobytes())
    settings = dict(dt=sim.dt, substeps=sim.substeps, iterations=sim.iterations, gravity=sim.gravity,
                    ground=sim.ground, wind=sim.wind, drag=sim.drag, self_collision=sim.self_collision,
                    contact_stiffness=sim.contact_stiffness, contact_damping=sim.contact_damping,
                    air_damping=sim.air_damping, contact_margin=sim.contact_margin,
                    initial_guess=sim.initial_guess, chebyshev_rho=sim.chebyshev_rho,
                    membrane_hessian=sim.membrane_hessian,
                    colliders=[c.vertex_count for c in sim.solver.colliders])
    if sim.chebyshev_delay:   # only when set, so that checkpoints written before the option still load
        settings["chebyshev_delay"] = sim.chebyshev_delay
    if sim.chebyshev_cap:
        settings["chebyshev_cap"] = True
    if sim.chebyshev_contacts != "skip":  # only when not the default (earlier checkpoints still load)
        settings["chebyshev_contacts"] = sim.chebyshev_contacts
    if sim.self_contact_over_face:
        settings["self_contact_over_face"] = sim.self_contact_over_face
    if sim.self_contact_bound != BOUND_FRACTION:  # only when set (earlier checkpoints still load)
        settings["self_contact_bound"] = sim.self_contact_bound
    if sim.sweep != "gauss-seidel":
        settings |= {"sweep": sim.sweep, "jacobi_omega": sim.jacobi_omega}
    h.update(json.dumps(settings, sort_keys=True).encode())
    return h.hexdigest()


def save_checkpoint(sim, path) -> None:
    path = Path(path)
    if not path.parent.is_dir():
        raise InputError(f"save_checkpoint: folder {str(path.parent)!r} does not exist")
    arrays = {
        "version": np.array(_VERSION),
        "fingerprint": np.array(_fingerprint(sim)),
        "frame": np.array(sim.frame),
        "x": sim.state.x.numpy(),
        "v": sim.state.v.numpy(),
        "v_last": sim.state.v_last.numpy(),
        "pin_start": sim.state.pin_start.numpy(),
        "pin_end": sim.state.pin_end.numpy(),
        "fabrics": np.array(json.dumps([f.__dict__ for f in sim.model.fabrics])),
    }
    if sim.solver.ext_acc is not None:
        arrays["ext_acc"] = sim.solver.ext_acc.numpy()
    for k, c in enumerate(sim.solver.colliders):
        arrays[f"collider{k}_start"] = c.start.numpy()
        arrays[f"collider{k}_end"] = c.end.numpy()
        arrays[f"collider{k}_vel"] = c.velocities.numpy()
    fd, tmp = tempfile.mkstemp(prefix=path.name + ".", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as f:
            np.savez(f, **arrays)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def load_checkpoint(sim, path) -> None:
    from .fabric import Fabric

    path = Path(path)
    if not path.is_file():
        raise InputError(f"load_checkpoint: {str(path)!r} does not exist")
    try:
        data = np.load(path, allow_pickle=False)
    except Exception as e:  # noqa: BLE001 - numpy raises several kinds for a bad file
        raise InputError(f"load_checkpoint: {str(path)!r} is not a clothsim checkpoint ({e})") from None
    with data:
        if "fingerprint" not in data or int(data["version"]) != _VERSION:
            raise InputError(f"load_checkpoint: {str(path)!r} is not a clothsim checkpoint of version {_VERSION}")
        if str(data["fingerprint"]) != _fingerprint(sim):
            raise InputError(
                f"load_checkpoint: {str(path)!r} was written by a simulator with other cloths, colliders or settings"
            )
        sim.state.x.assign(data["x"])
        sim.state.v.assign(data["v"])
        sim.state.v_last.assign(data["v_last"])
        sim.state.pin_start.assign(data["pin_start"])
        sim.state.pin_end.assign(data["pin_end"])
        sim.solver.set_external_accelerations(data["ext_acc"] if "ext_acc" in data else None)
        for k, c in enumerate(sim.solver.colliders):
            c.start.assign(data[f"collider{k}_start"])
            c.end.assign(data[f"collider{k}_end"])
            c.velocities.assign(data[f"collider{k}_vel"])
            c.sync_host()
        fabs = json.loads(str(data["fabrics"]))
        for i, fd in enumerate(fabs):
            sim.model.fabrics[i] = Fabric(**fd)
        sim.model._write_materials()
        sim.solver.materials_changed()
        sim.frame = int(data["frame"])
