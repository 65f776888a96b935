"""Preview window benchmark: the window's frame rate at 1280x720 while a shipped garment simulates, and the
simulation's speed with and without the window.

    python benchmarks/preview.py                                  # llvmpipe under Xvfb (xvfb-run is used if
                                                                  # DISPLAY is unset), simulation on the CPU
    python benchmarks/preview.py --headless --device cuda:0 --json benchmarks/results/preview_h200.json

Runs, each ``--seconds`` long after a warm-up (worker started, first frames simulated), interleaved so
load drift on a shared machine hits all of them alike (``--rounds`` times):

* ``solo``: the simulation worker alone (the measuring process reads its shared-memory channel 20x a
  second and draws nothing): simulated frames per second;
* ``window``: the preview app playing the scene, drawing the UI every loop and the 3D view when a new
  frame arrives (what a user watching the drape gets), capped at ``--max-fps``;
* ``orbit``: the same, but the camera turns every loop, so the 3D view is redrawn every loop (a user
  dragging the camera while the drape plays), at the window's interactive resolution (0.35 of the size
  on llvmpipe while the camera moves, full size 0.3 s after it stops; full size on a GPU);
* ``orbit_full``: ``orbit`` at full resolution every loop: the window's worst case.

Reported: window frames per second (frames drawn per second) and 3D redraws per second, the
simulation's frames per second and its ratio to ``solo``, and the median wall time of one simulation
step (the worker's own timing of ``step()``; less noisy than a frame count over a short run). Targets (issue 6): >= 30 fps on llvmpipe with the
simulation >= 80 % of solo; >= 120 fps on the GPU (headless EGL).
"""

from __future__ import annotations

import argparse
import os
import platform
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))


def _wait_first_frames(poll, n: int, timeout: float) -> None:
    t0 = time.perf_counter()
    while poll() < n:
        if time.perf_counter() - t0 > timeout:
            raise RuntimeError(f"no {n} simulated frames within {timeout:.0f} s")
        time.sleep(0.05)


def run_solo(scene: Path, level: int, device: str | None, seconds: float, warmup_frames: int) -> dict:
    """The worker alone: frames per second from its channel's sequence counter."""
    from render.preview.channel import FrameChannel
    from render.preview.sim import SimProcess

    sim = SimProcess(scene, level=level, device=device, playing=True)
    ch = None
    try:
        state = {"ch": None}

        def seq() -> int:
            for ev in sim.poll():
                if ev.get("type") == "topology":
                    if state["ch"] is not None:
                        state["ch"].close()
                    state["ch"] = FrameChannel.attach(ev["shm"], ev["n"], ev["b"])
                elif ev.get("type") == "error":
                    raise RuntimeError(ev["message"])
            return state["ch"].seq if state["ch"] is not None else 0

        _wait_first_frames(seq, warmup_frames, 600)
        s0, t0 = seq(), time.perf_counter()
        last, step_ms = s0, []
        while time.perf_counter() - t0 < seconds:
            time.sleep(0.05)
            s1 = seq()
            if s1 != last:
                fr = state["ch"].read()
                if fr is not None:
                    step_ms.append(fr.step_ms)
                last = s1
        t1 = time.perf_counter()
        ch = state["ch"]
        return {"mode": "solo", "seconds": t1 - t0, "sim_frames": s1 - s0, "sim_fps": (s1 - s0) / (t1 - t0),
                "step_ms_median": statistics.median(step_ms) if step_ms else None}
    finally:
        sim.close()
        if ch is not None:
            ch.close()


def run_window(scene: Path, level: int, device: str | None, seconds: float, warmup_frames: int, *, orbit: bool,
               headless: bool, size: tuple[int, int], max_fps: float, quality: str, scale: float | None = None) -> dict:
    from render.preview import PreviewApp
    from render.preview.app import IDLE_POLL_S

    with PreviewApp(scene, level=level, size=size, headless=headless, device=device, play=True, max_fps=max_fps,
                    quality=quality, continuous=orbit, interactive_scale=scale) as app:
        t_start = time.perf_counter()
        while app.frames_received < warmup_frames:
            app.run(script=["wait 0.2", "quit"])
            if app.errors:
                raise RuntimeError("; ".join(app.errors))
            if time.perf_counter() - t_start > 600:
                raise RuntimeError("no frames within 600 s")
        f0, l0, d0, t0 = app.frames_received, app.loops, app.scene_draws, time.perf_counter()
        draw_ms, step_ms, seen = [], [], app.frames_received
        while time.perf_counter() - t0 < seconds:
            lt = time.perf_counter()
            if app.window is not None:
                import glfw

                glfw.poll_events()
            if orbit:
                app.command("orbit 4 0")
            drew = app.draw()
            if drew:
                draw_ms.append(app.draw_ms)
            if app.frames_received != seen:
                seen = app.frames_received
                step_ms.append(app.step_ms)
            # as PreviewApp.run: an idle loop (nothing drawn) waits for the next channel check
            period = 1.0 / max_fps if max_fps > 0 else 0.0
            rest = (period if drew else max(period, IDLE_POLL_S)) - (time.perf_counter() - lt)
            if rest > 0:
                time.sleep(rest)
        t1 = time.perf_counter()
        dt = t1 - t0
        return {"mode": ("orbit" if scale is None else "orbit_full") if orbit else "window", "seconds": dt,
                "interactive_scale": app.interactive_scale, "window_fps": (app.loops - l0) / dt,
                "redraws_per_s": (app.scene_draws - d0) / dt,
                "draw_ms_median": statistics.median(draw_ms) if draw_ms else None,
                "step_ms_median": statistics.median(step_ms) if step_ms else None,
                "sim_frames": app.frames_received - f0, "sim_fps": (app.frames_received - f0) / dt,
                "gl_renderer": app.ctx.info["GL_RENDERER"], "vertices": app.topo.info["n"],
                "body_vertices": app.topo.info["b"], "gl_bytes": app.gl_nbytes(),
                "sim_bytes": app.memory.get("total", 0), "errors": list(app.errors)}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--scene", type=Path, default=ROOT / "scenes" / "tshirt.toml")
    ap.add_argument("--level", type=int, default=0)
    ap.add_argument("--device", default=None, help="Warp device of the simulation (default: the scene's)")
    ap.add_argument("--headless", action="store_true", help="EGL, no window (GPU machines)")
    ap.add_argument("--seconds", type=float, default=20.0)
    ap.add_argument("--rounds", type=int, default=1)
    ap.add_argument("--warmup-frames", type=int, default=3)
    ap.add_argument("--size", default="1280x720")
    ap.add_argument("--max-fps", type=float, default=60.0, help="the window's loop cap (0 = uncapped)")
    ap.add_argument("--quality", default="fast", choices=["fast", "high"])
    ap.add_argument("--modes", default="solo,window,orbit,orbit_full")
    ap.add_argument("--json", type=Path, default=None)
    args = ap.parse_args(argv)

    if not args.headless and not os.environ.get("DISPLAY"):
        if shutil.which("xvfb-run") is None:
            ap.error("no DISPLAY and no xvfb-run: install xvfb or pass --headless")
        cmd = ["xvfb-run", "-a", "-s", "-screen 0 1920x1080x24 -noreset", sys.executable, *sys.argv]
        return subprocess.call(cmd)

    w, h = (int(v) for v in args.size.lower().split("x"))
    modes = [m.strip() for m in args.modes.split(",") if m.strip()]
    runs = []
    for r in range(args.rounds):
        for m in modes:
            if m == "solo":
                res = run_solo(args.scene, args.level, args.device, args.seconds, args.warmup_frames)
            else:
                if m not in ("window", "orbit", "orbit_full"):
                    ap.error(f"unknown mode {m!r}; expected solo, window, orbit, orbit_full")
                res = run_window(args.scene, args.level, args.device, args.seconds, args.warmup_frames,
                                 orbit=m != "window", headless=args.headless, size=(w, h), max_fps=args.max_fps,
                                 quality=args.quality, scale=1.0 if m == "orbit_full" else None)
            res["round"] = r
            runs.append(res)
            extra = (f"  window {res['window_fps']:6.1f} fps  3D redraws {res['redraws_per_s']:6.1f}/s  "
                     f"draw {res['draw_ms_median'] or float('nan'):.1f} ms") if m != "solo" else ""
            extra += f"  step {res['step_ms_median'] or float('nan'):.0f} ms"
            print(f"round {r} {m:6s} sim {res['sim_fps']:6.2f} frames/s ({res['sim_frames']} in {res['seconds']:.1f} s)"
                  + extra, flush=True)
    solo = [x["sim_fps"] for x in runs if x["mode"] == "solo"]
    summary = {}
    for m in modes:
        xs = [x for x in runs if x["mode"] == m]
        s = {"sim_fps": statistics.mean(x["sim_fps"] for x in xs)}
        steps = [x["step_ms_median"] for x in xs if x.get("step_ms_median")]
        s["step_ms"] = statistics.mean(steps) if steps else float("nan")
        if m != "solo":
            s["window_fps"] = statistics.mean(x["window_fps"] for x in xs)
            s["redraws_per_s"] = statistics.mean(x["redraws_per_s"] for x in xs)
            if solo:
                s["sim_vs_solo"] = s["sim_fps"] / statistics.mean(solo)
        summary[m] = s
    solo_step = summary.get("solo", {}).get("step_ms")
    print("\n| mode | window fps | 3D redraws/s | sim frames/s | sim vs solo | step ms | solo step / step |\n"
          "|---|---:|---:|---:|---:|---:|---:|")
    for m, s in summary.items():
        if solo_step:
            s["step_vs_solo"] = solo_step / s["step_ms"]
        print(f"| {m} | {s.get('window_fps', float('nan')):.1f} | {s.get('redraws_per_s', float('nan')):.1f} | "
              f"{s['sim_fps']:.2f} | {s.get('sim_vs_solo', 1.0):.0%} | {s['step_ms']:.0f} | "
              f"{s.get('step_vs_solo', float('nan')):.0%} |")
    out = {"scene": str(args.scene.relative_to(ROOT) if args.scene.is_relative_to(ROOT) else args.scene),
           "level": args.level, "size": [w, h], "headless": args.headless, "device": args.device,
           "max_fps": args.max_fps, "quality": args.quality, "seconds": args.seconds, "runs": runs,
           "summary": summary, "machine": {"cpus": os.cpu_count(), "platform": platform.platform(),
                                           "load_average": os.getloadavg()},
           "targets": {"llvmpipe_window_fps": 30, "sim_vs_solo": 0.8, "gpu_window_fps": 120}}
    if args.json is not None:
        from clothsim.io import write_json

        args.json.parent.mkdir(parents=True, exist_ok=True)
        write_json(args.json, out)
        print(f"wrote {args.json}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
