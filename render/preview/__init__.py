"""The preview window (``clothsim preview SCENE``): watch a drape, orbit, switch resolution, look at strain.

Built on the catalog :class:`render.Renderer`. The simulation runs in its own process
(:mod:`render.preview.worker`) and publishes frames through shared memory
(:mod:`render.preview.channel`); the window draws the newest one and never waits on it.

    from render.preview import PreviewApp
    with PreviewApp("scenes/tshirt.toml", level=0) as app:
        app.run(script=["play", "wait_frames 10", "pause", "view strain", "screenshot strain.png", "quit"])
"""

from .app import PreviewApp, load_script
from .camera import OrbitCamera
from .channel import FrameChannel
from .keys import SHORTCUTS
from .views import View, principal_stretches, vertex_stretch

__all__ = ["PreviewApp", "OrbitCamera", "FrameChannel", "SHORTCUTS", "View", "load_script", "main",
           "principal_stretches", "vertex_stretch"]


def main(argv=None) -> int:
    from .cli import main as _main

    return _main(argv)
