"""``clothsim render``: catalog shots of a scene (simulated now) or of an exported drape.

Registered through the ``clothsim.commands`` entry point (pyproject.toml); clothsim never imports
this module.
"""

from __future__ import annotations

import time
from pathlib import Path

import click

import clothsim as cs

from .camera import STANDARD_VIEWS


def _split(values: tuple[str, ...]) -> list[str]:
    return [v.strip() for item in values for v in item.split(",") if v.strip()]


@click.command(short_help="Render catalog shots (PNGs, turntable, contact sheet) of a scene or drape.")
@click.argument("scene", type=click.Path(path_type=Path, dir_okay=False))
@click.option("-o", "--out", type=click.Path(path_type=Path, file_okay=False), default=None,
              help="Output folder [default: out/render/<scene name>].")
@click.option("--views", multiple=True, metavar="NAMES",
              help=f"Standard views, comma-separated: {', '.join(STANDARD_VIEWS)} "
                   "[default: the scene's cameras, else all five].")
@click.option("--size", default="1080x1080", show_default=True, metavar="WxH", help="Image size in pixels.")
@click.option("--turntable", type=int, default=0, show_default=True, metavar="N",
              help="Also write a 360-degree turntable of N frames (MP4 + GIF, 24 fps).")
@click.option("--transparent", is_flag=True, help="Transparent background (PNG alpha); the floor keeps only its shadow.")
@click.option("--colourways", "--colorways", "colourways", multiple=True, metavar="LOOKS",
              help="Re-render the drape in these looks, comma-separated: a colour name, #rrggbb, "
                   "name=#rrggbb or name=texture.png (one subfolder each).")
@click.option("--ghost", is_flag=True, help="Hide the avatar (ghost mannequin); it still casts shadows.")
@click.option("--tonemap", type=click.Choice(["neutral", "filmic"]), default="neutral", show_default=True,
              help="Khronos PBR Neutral keeps product colours; filmic adds contrast.")
@click.option("--samples", type=click.IntRange(1, 16), default=4, show_default=True, help="MSAA samples.")
@click.option("--lights", "lights_from", type=click.Choice(["scene", "studio"]), default="scene", show_default=True,
              help="scene: the scene file's [[lights]] (fixed in the world; the studio rig when it has none); "
                   "studio: the camera-relative studio rig.")
@click.option("--frames", type=click.IntRange(min=1), default=None,
              help="Scene files: cap the drape at this many frames [default: the scene's frame_cap].")
@click.option("--device", default=None, help="Scene files: Warp device for the drape (cpu, cuda:0).")
@click.option("--level", default=None, metavar="LEVEL",
              help="Scene files: garment resolution level: coarsest, finest or an index (0 = coarsest; a scene "
                   "with refine_from drapes coarse-to-fine up to it) [default: each garment's level in the scene].")
@click.option("--progress/--no-progress", default=True, show_default=True)
def render(scene: Path, out: Path | None, views: tuple[str, ...], size: str, turntable: int, transparent: bool,
           colourways: tuple[str, ...], ghost: bool, tonemap: str, samples: int, lights_from: str,
           frames: int | None, device: str | None, level: str | None, progress: bool) -> None:
    """Render catalog shots of SCENE: a scene file (.toml, simulated first), a drape cache
    (.npz from `clothsim simulate`) or a mesh (.obj, .glb, .ply).

    \b
    Writes to OUT (each file atomically):
      <view>.png          one per view (or per scene camera), sRGB, alpha with --transparent
      turntable.mp4/.gif  with --turntable N
      contact_sheet.png   all views side by side
      catalog.json        scene, cameras, image settings, timings, versions
    With --colourways, each look gets a subfolder with its own views and turntable.

    \b
    Examples:
      clothsim render out/demo/drape.npz -o out/shots --size 1080x1080
      clothsim render scenes/tshirt.toml --views front,three_quarter --turntable 48 --colourways navy,red
      clothsim render scenes/tshirt.toml --level 1     # drape at 40 mm, refine to 20 mm, render
    """
    from clothsim.io import ensure_output_dir

    from .catalog import Colourway, check_views, parse_colourway, parse_size, render_catalog
    from .renderer import RenderSettings
    from .sources import load_source

    t0 = time.perf_counter()
    # validate everything cheap before simulating
    w, h = parse_size(size)
    view_list = check_views(_split(views)) if views else None
    from clothsim.cli import parse_level

    level = parse_level(level)
    if level is not None and scene.suffix.lower() != ".toml":
        raise click.BadParameter("applies to scene files (.toml) only", param_hint="'--level'")
    looks: list[Colourway] = [parse_colourway(c) for c in _split(colourways)]
    if turntable < 0:
        raise click.BadParameter(f"expected N >= 0 frames, got {turntable}", param_hint="'--turntable'")
    if not scene.exists():
        raise cs.InputError(f"scene file not found: {scene}")
    out = out or Path("out/render") / scene.stem
    try:
        ensure_output_dir(out)
    except OSError as e:
        raise cs.InputError(str(e)) from None

    if scene.suffix.lower() == ".toml":
        import warp as wp

        if wp.config.log_level < wp.LOG_WARNING:
            wp.config.log_level = wp.LOG_WARNING   # no init banner or module-load lines; warnings still show
    source = load_source(scene, frames=frames, device=device, level=level, progress=progress)
    load_s = time.perf_counter() - t0
    if view_list is None:   # the scene's cameras (views and explicit ones); none: all five views
        cameras = source.cameras
        view_list = source.views if (source.views or source.cameras) else None
    else:                   # --views replaces the scene's cameras
        cameras = []
    settings = RenderSettings(tonemap=tonemap, samples=samples)
    if lights_from == "scene" and source.lights is not None:
        settings = RenderSettings(**{**settings.__dict__, "rig": source.lights})

    done = []

    def on_image(path: str) -> None:
        done.append(path)
        if progress:
            click.echo(f"  wrote {path}", err=True)

    summary = render_catalog(source.garments, out, avatar=source.avatar, views=view_list,
                             cameras=cameras, size=(w, h), turntable=turntable, transparent=transparent,
                             colourways=looks, ghost=ghost, settings=settings,
                             metadata={"scene": source.info, "timings_s": {"load_or_simulate": load_s}},
                             on_image=on_image)
    t = summary["timings_s"]
    click.echo(f"rendered {len(summary['files'].get('images', []))} images"
               f"{' + turntable' if turntable else ''} at {w}x{h} in {t['total_s']:.1f} s "
               f"({t['render_per_image_s'] * 1e3:.0f} ms per image; load/simulate {load_s:.1f} s) -> {out}")
