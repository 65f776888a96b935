"""The preview's command interpreter: every user action (a key, a button, a ``--script`` line, a test)
is a command run by :meth:`Commands.command`; script-only commands (``wait``, ``wait_frames``,
``wait_level``, ``sync``, ``record``) wait without blocking the draw loop. A mixin of
:class:`render.preview.app.PreviewApp`, whose state it reads and changes.
"""

from __future__ import annotations

import shlex
import time
from pathlib import Path

import numpy as np

import clothsim as cs

from .views import View

QUALITY = {
    # the window's looks: "fast" is drawn by render.preview.painter (its entry here is the catalog Renderer's
    # cheapest setting, kept for callers of QUALITY); "high" by the catalog Renderer with these settings
    # (llvmpipe: ~300 ms a 1280x720 frame with MSAA and shadows)
    "fast": dict(samples=1, shadows=False),
    "high": dict(samples=4, shadows=True, shadow_map_size=2048, contact_map_size=512),
}
WAIT_TIMEOUT_S = 300.0             # a script wait that takes longer is an error
SPEEDS = (0.0, 0.125, 0.25, 0.5, 1.0, 2.0)   # 0 = as fast as the simulation goes


class Commands:
    def command(self, text) -> object:
        """Run one command (a string like ``"level 1"`` or a tuple). Returns its result (usually None).

        Bad commands are reported (errors panel and log) and return None; they never raise.
        """
        parts = shlex.split(text) if isinstance(text, str) else [str(p) for p in text]
        if not parts:
            return None
        name, args = parts[0].lower(), parts[1:]
        try:
            return self._command(name, args)
        except cs.ClothsimError as e:
            self._error(f"{name}: {e}")
        except (ValueError, IndexError, TypeError) as e:
            self._error(f"{name} {' '.join(args)}: {e}")
        return None

    def _command(self, name: str, args: list[str]):
        sim = self.sim
        if name in ("play", "pause", "reset"):
            if name == "play":
                self.scrub = None
            sim.send(name)
            self.playing = name == "play"
        elif name == "toggle":
            return self._command("pause" if self.playing else "play", [])
        elif name == "step":
            self.scrub = None
            sim.send("step", int(args[0]) if args else 1)
        elif name == "speed":
            sim.send("speed", float(args[0]))
        elif name == "faster" or name == "slower":
            i = min(range(len(SPEEDS)), key=lambda k: abs(SPEEDS[k] - self.speed))
            i = (i + 1) % len(SPEEDS) if name == "faster" else (i - 1) % len(SPEEDS)
            sim.send("speed", SPEEDS[i])
        elif name == "level":
            k = self._level_arg(args[0])
            sim.send("level", k)
            if self.view is View.PENETRATION:
                sim.send("penetration", True)
        elif name == "fabric":
            sim.send("fabric", args[0], *(args[1:2]))
        elif name == "fabric_param":
            sim.send("fabric_param", args[0], float(args[1]), *(args[2:3]))
        elif name == "load":
            path = args[0] if args else self.load_field
            if not Path(path).is_file():
                raise cs.InputError(f"scene file not found: {path}")
            if not sim.alive:   # the worker died (reported): a new one loads the scene
                sim.close()
                self._dead_reported = False
                self.sim = self._start_sim(str(Path(path).resolve()), None, self._device, False)
            else:
                sim.send("load", str(Path(path).resolve()))
        elif name == "view":
            v = View.parse(args[0])
            if (v is View.PENETRATION) != (self.view is View.PENETRATION):
                sim.send("penetration", v is View.PENETRATION)
            self.view = v
            self._dirty = True
        elif name == "next_view":
            views = list(View)
            return self._command("view", [views[(views.index(self.view) + 1) % len(views)].value])
        elif name == "markers":
            self.show_markers = _onoff(args, self.show_markers)
            self._dirty = True
        elif name == "quality":
            q = args[0] if args else ("high" if self.quality == "fast" else "fast")
            if q not in QUALITY:
                raise cs.InputError(f"quality must be one of {', '.join(QUALITY)}, got {q!r}")
            self.quality = q
            self._dirty = True
        elif name == "strain_range":
            v = float(args[0])
            if not v > 0:
                raise cs.InputError(f"strain_range must be > 0 (a stretch, 0.1 = 10 %), got {args[0]}")
            self.strain_max = v
            self._dirty = True
        elif name == "camera":
            self._standard_view(args[0])
        elif name == "frame_garment":
            self._frame_garment()
        elif name == "orbit":
            self.orbit.orbit(float(args[0]), float(args[1]))
            self._dirty = True
        elif name == "zoom":
            self.orbit.zoom(float(args[0]))
            self._dirty = True
        elif name == "scrub":
            self._scrub_to(int(args[0]))
        elif name == "scrub_by":
            n = len(self.topo.history) if self.topo else 0
            cur = self.scrub if self.scrub is not None else n - 1
            self._scrub_to(cur + int(args[0]))
        elif name == "live":
            self.scrub = None
            self._dirty = True
        elif name == "screenshot":
            return self.screenshot(args[0] if args else None, ui="--no-ui" not in args)
        elif name == "help":
            self.show_help = _onoff(args, self.show_help)
        elif name == "quit":
            self._want_close = True
        elif name in ("wait", "wait_frames", "wait_level", "sync", "record"):
            return self._script_command(name, args)
        else:
            raise cs.InputError(f"unknown command {name!r}; see the help panel (H) for the list")
        return None

    def _level_arg(self, a: str) -> int:
        cur = self.topo.info["level"] if self.topo else 0
        if a in ("+", "finer"):
            return cur + 1
        if a in ("-", "coarser"):
            return cur - 1
        return int(a)

    def _scrub_to(self, k: int) -> None:
        if self.topo is None or not self.topo.history:
            return
        if self.playing:
            self.sim.send("pause")
            self.playing = False
        self.scrub = int(np.clip(k, 0, len(self.topo.history) - 1))
        self._dirty = True

    # ------------------------------------------------------------------ script
    def _script_command(self, name: str, args: list[str]):
        now = time.perf_counter()
        if name == "wait":
            self._wait = ("time", now + float(args[0]), now)
        elif name == "wait_frames":
            self._wait = ("frames", self.frames_received + int(args[0]), now)
        elif name == "wait_level":
            self._wait = ("level", int(args[0]), now)
        elif name == "sync":
            self._wait = ("sync", self.sim.sent, now)
        elif name == "record":
            self.records[args[0]] = self.state()
            return self.records[args[0]]
        return None

    def _wait_done(self) -> bool:
        if self._wait is None:
            return True
        kind, value, t0 = self._wait
        now = time.perf_counter()
        if kind == "time":
            done = now >= value
        elif kind == "shot":
            done = value not in self._pending_shots
        elif kind == "frames":
            done = self.frames_received >= value
        elif kind == "level":
            done = self.topo is not None and self.topo.info["level"] == value and bool(self.topo.history)
        else:   # sync: every command sent so far handled, and the channel read after that
            done = self.handled >= value
            if done and self.topo is not None:
                self._read_channel()
        if not done and kind != "time" and now - t0 > WAIT_TIMEOUT_S:
            self._error(f"script: {kind} {value} timed out after {WAIT_TIMEOUT_S:.0f} s")
            done = True
        if not done and not self.sim.alive:
            self._error(f"script: {kind} {value} cannot finish: the simulation process ended")
            done = True
        if done:
            self._wait = None
        return done

    def state(self) -> dict:
        """A snapshot of what the window shows (what ``record`` keeps)."""
        t = self.topo
        frame = None
        if t is not None and t.history:
            frame = t.history[self.scrub if self.scrub is not None else -1][0]
        return {"displayed_frame": frame, "sim_frame": self.sim_frame, "frames_received": self.frames_received,
                "playing": self.playing, "level": t.info["level"] if t else None, "view": self.view.value,
                "vertices": int(t.info["n"]) if t else 0, "history": len(t.history) if t else 0,
                "fps": self.fps, "step_ms": self.step_ms, "errors": list(self.errors), "time": time.perf_counter(),
                "scene": self.scene_path}


def _onoff(args, current: bool) -> bool:
    if not args:
        return not current
    a = args[0].lower()
    if a in ("on", "1", "true", "yes"):
        return True
    if a in ("off", "0", "false", "no"):
        return False
    raise cs.InputError(f"expected on or off, got {args[0]!r}")


def load_script(script) -> list[str]:
    """Commands from a list, or from a file (one per line; ``#`` starts a comment)."""
    if isinstance(script, (str, Path)) and not isinstance(script, list):
        path = Path(script)
        try:
            text = path.read_text(encoding="utf-8")
        except OSError as e:
            raise cs.InputError(f"cannot read script {path}: {e.strerror or e}") from None
        lines = text.splitlines()
    else:
        lines = list(script)
    out = []
    for line in lines:
        line = line.strip()
        if line and not line.startswith("#"):
            out.append(line)
    return out
