"""``clothsim preview`` / ``python -m render.preview``: options -> :class:`PreviewApp`."""

from __future__ import annotations

import logging
from pathlib import Path

import click

import clothsim as cs


def _level(value):
    if value is None or value in ("coarsest", "finest"):
        return {"coarsest": 0, "finest": 3}.get(value)
    try:
        return int(value)
    except ValueError:
        raise click.BadParameter(f"expected 0-3, 'coarsest' or 'finest', got {value!r}") from None


def preview_options(f):
    opts = [
        click.argument("scene", required=False, type=click.Path(path_type=Path)),
        click.option("--level", default=None,
                     help="resolution level: 0 (40 mm, coarsest) .. 3 (5 mm), coarsest, finest"),
        click.option("--size", default="1280x720", show_default=True, help="window size WIDTHxHEIGHT [px]"),
        click.option("--play/--paused", default=False, help="start simulating at once"),
        click.option("--device", default=None, help="Warp device for the simulation (cpu, cuda:0)"),
        click.option("--quality", type=click.Choice(["fast", "high"]), default="fast", show_default=True,
                     help="fast: the preview look (interactive on llvmpipe); high: the catalog renderer's look"),
        click.option("--headless", is_flag=True, help="no window: EGL, offscreen (machines without a display)"),
        click.option("--script", type=click.Path(path_type=Path, dir_okay=False), default=None,
                     help="run commands from this file (one a line; see the help panel)"),
        click.option("--report", type=click.Path(path_type=Path, dir_okay=False), default=None,
                     help="write the script's `record` snapshots and the errors as JSON"),
        click.option("--max-seconds", type=float, default=None, help="close after this many seconds"),
        click.option("--max-fps", type=float, default=60.0, show_default=True, help="draw-loop cap (0: none)"),
    ]
    for o in reversed(opts):
        f = o(f)
    return f


def run(scene, level, size, play, device, quality, headless, script, report, max_seconds, max_fps) -> int:
    from render.catalog import parse_size
    from clothsim.io import write_json

    from .app import PreviewApp, load_script

    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(levelname)s %(message)s")
    commands = load_script(script) if script is not None else None
    if scene is not None and not scene.exists():
        raise cs.InputError(f"scene file not found: {scene}")
    with PreviewApp(scene, level=_level(level), size=parse_size(size), headless=headless, device=device,
                    play=play, quality=quality, max_fps=max_fps) as app:
        rc = app.run(script=commands, max_seconds=max_seconds)
        if report is not None:
            write_json(report, {"records": app.records, "errors": app.errors, "messages": app.messages,
                                "final": app.state()})
    return rc


@click.command(name="preview")
@preview_options
def preview(**kw) -> None:
    """Open SCENE (.toml) in the preview window: simulate, orbit, switch level, look at strain."""
    raise SystemExit(run(**kw))


def main(argv=None) -> int:
    try:
        preview.main(args=argv, prog_name="clothsim preview", standalone_mode=False)
    except SystemExit as e:
        return int(e.code or 0)
    except click.ClickException as e:
        e.show()
        return e.exit_code
    except click.exceptions.Abort:
        return 1
    except cs.ClothsimError as e:
        click.echo(f"Error: {e}", err=True)
        return 2
    return 0
