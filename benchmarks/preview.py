"""Preview window benchmark: the window's frame rate at 1280x720 while a shipped garment simulates, and the
simulation's speed with and without the window.

    python benchmarks/preview.py                                  # llvmpipe under Xvfb (xvfb-run is used if
                                                                  # DISPLAY is unset), simulation on the CPU
    python benchmarks/preview.py --modes solo,orbit_full --rounds 3 --before 1c1323c --lp-threads default,1 \\
        --json benchmarks/results/preview_cpu_llvmpipe_s6.json   # before/after and llvmpipe threads, interleaved
    python benchmarks/preview.py --modes profile                  # where one full-resolution frame's time goes
    python benchmarks/preview.py --headless --device cuda:0 --json benchmarks/results/preview_h200.json

Every run is its own process (a fresh GL context, its own ``LP_NUM_THREADS``), and the runs are interleaved
(``--rounds`` times: round 1 all modes and variants, round 2 all again, ...) so load drift on a shared machine
hits all of them alike. Modes, each ``--seconds`` long after a warm-up (worker started, first frames simulated):

* ``solo``: the simulation worker alone (the measuring process reads its shared-memory channel 20x a
  second and draws nothing): simulated frames per second;
* ``window``: the preview app playing the scene, drawing the UI every loop and the 3D view when a new
  frame arrives (what a user watching the drape gets), capped at ``--max-fps``;
* ``orbit``: the same, but the camera turns every loop, so the 3D view is redrawn every loop (a user
  dragging the camera while the drape plays), at the window's interactive resolution (full size unless the
  app is given an ``interactive_scale``);
* ``orbit_full``: ``orbit`` at full resolution every loop, the target case of issue 6;
* ``profile``: no simulation running (paused after 2 frames); 60 full-resolution orbit frames with
  ``glFinish`` after each phase (3D view by painter phase, UI, buffer swap): median milliseconds per phase.

Variants: the code of this checkout with ``LP_NUM_THREADS`` unset (``default``: the preview's own choice, all
cores but two, i.e. 0 on 2 cores: see ``render.preview.app.rasterizer_threads``) or set (``--lp-threads``; 2 is
llvmpipe's own default on 2 cores), and
with ``--before REF`` the preview code of git revision REF (``render/``, ``shaders/`` and its
``benchmarks/preview.py``, extracted with ``git archive`` into a temporary folder; the simulation package is
this checkout's for both), run with its own defaults (``orbit_full``: its catalog-renderer path at full size).

Reported: window frames per second (loops drawn per second) and 3D redraws per second, the window process'
CPU seconds per second (and the Xvfb server's, which presents each frame), the simulation's frames per second
and its ratio to ``solo`` of the same round, and
the median wall time of one simulation step (the worker's own timing of ``step()``), and solo's median step
time over the simulated frames both runs reached divided by the run's (``step_vs_solo_same_frames``: a
drape's step cost changes as it settles, and a faster run reaches later frames, so frames per second over
different frames is a biased ratio). Summary values are medians over rounds. Targets (issue 6): >= 30 fps at full resolution on llvmpipe with the simulation >= 80 %
of solo; >= 120 fps on the GPU (headless EGL).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

WINDOW_MODES = ("window", "orbit", "orbit_full")
MODES = ("solo", *WINDOW_MODES, "profile")


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
        last, step_ms, frame_steps = s0, [], {}
        while time.perf_counter() - t0 < seconds:
            time.sleep(0.05)
            s1 = seq()
            if s1 != last:
                fr = state["ch"].read()
                if fr is not None:
                    step_ms.append(fr.step_ms)
                    frame_steps[int(fr.frame)] = fr.step_ms
                last = s1
        t1 = time.perf_counter()
        ch = state["ch"]
        return {"mode": "solo", "seconds": t1 - t0, "sim_frames": s1 - s0, "sim_fps": (s1 - s0) / (t1 - t0),
                "step_ms_median": statistics.median(step_ms) if step_ms else None, "frame_step_ms": frame_steps}
    finally:
        sim.close()
        if ch is not None:
            ch.close()


def _xvfb_pid() -> int | None:
    """The Xvfb process serving $DISPLAY (its CPU time competes with the simulation too), or None."""
    display = os.environ.get("DISPLAY", "")
    for d in Path("/proc").iterdir():
        if not d.name.isdigit():
            continue
        try:
            argv = (d / "cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if argv and argv[0].endswith(b"Xvfb") and display.encode() in argv[1:2]:
            return int(d.name)
    return None


def _cpu_seconds(pid: int | None) -> float | None:
    """User + system CPU seconds of process ``pid`` (/proc/PID/stat), or None."""
    if pid is None:
        return None
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return None
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


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
        xvfb = _xvfb_pid() if app.window is not None else None
        x0 = _cpu_seconds(xvfb)
        f0, l0, d0, t0, c0 = app.frames_received, app.loops, app.scene_draws, time.perf_counter(), time.process_time()
        draw_ms, step_ms, seen, frame_steps = [], [], app.frames_received, {}
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
                frame_steps[int(app.sim_frame)] = app.step_ms
            # as PreviewApp.run: an idle loop (nothing drawn) waits for the next channel check
            period = 1.0 / max_fps if max_fps > 0 else 0.0
            rest = (period if drew else max(period, IDLE_POLL_S)) - (time.perf_counter() - lt)
            if rest > 0:
                time.sleep(rest)
        t1 = time.perf_counter()
        dt = t1 - t0
        x1 = _cpu_seconds(xvfb)
        return {"mode": ("orbit" if scale is None else "orbit_full") if orbit else "window", "seconds": dt,
                "interactive_scale": app.interactive_scale, "window_fps": (app.loops - l0) / dt,
                "redraws_per_s": (app.scene_draws - d0) / dt, "window_cpu_per_s": (time.process_time() - c0) / dt,
                "xvfb_cpu_per_s": None if x0 is None or x1 is None else (x1 - x0) / dt,
                "draw_ms_median": statistics.median(draw_ms) if draw_ms else None,
                "step_ms_median": statistics.median(step_ms) if step_ms else None,
                "sim_frames": app.frames_received - f0, "sim_fps": (app.frames_received - f0) / dt,
                "gl_renderer": app.ctx.info["GL_RENDERER"], "vertices": app.topo.info["n"],
                "body_vertices": app.topo.info["b"], "gl_bytes": app.gl_nbytes(),
                "sim_bytes": app.memory.get("total", 0), "errors": list(app.errors), "frame_step_ms": frame_steps}


def run_profile(scene: Path, level: int, device: str | None, *, headless: bool, size: tuple[int, int],
                quality: str, frames: int = 60) -> dict:
    """Where a full-resolution orbit frame's time goes, simulation paused: medians [ms] of each phase, each
    ended by glFinish (which serialises CPU and rasteriser: the phases add up to more than a normal loop)."""
    from render.preview import PreviewApp

    with PreviewApp(scene, level=level, size=size, headless=headless, device=device, quality=quality,
                    max_fps=0, continuous=True) as app:
        app.run(script=["play", "wait_frames 2", "pause", "sync", "quit"], max_seconds=600)
        if app.errors:
            raise RuntimeError("; ".join(app.errors))
        ctx = app.ctx
        app.painter.profile = True
        phases: dict[str, list[float]] = {}
        loop_ms, cpu_ms = [], []
        w, h = app.fb_size
        for _ in range(frames):
            app.command("orbit 4 0")
            c0, t0 = time.process_time(), time.perf_counter()
            with ctx:
                app._poll_sim()
                ctx.finish()
                t1 = time.perf_counter()
                app._draw_scene(1.0, moving=True, target=app.screen)
                ctx.finish()
                t2 = time.perf_counter()
                app.screen.use()
                ctx.viewport = (0, 0, w, h)
                app._draw_ui(w, h)
                ctx.finish()
                t3 = time.perf_counter()
            if app.window is not None:
                import glfw

                glfw.swap_buffers(app.window)
                glfw.poll_events()
            t4 = time.perf_counter()
            got = {"poll": t1 - t0, "scene": t2 - t1, "ui": t3 - t2, "swap": t4 - t3}
            got.update({f"scene.{k}": v / 1e3 for k, v in app.painter.stats.items()} if quality == "fast" else {})
            for k, v in got.items():
                phases.setdefault(k, []).append(1e3 * v)
            loop_ms.append(1e3 * (t4 - t0))
            cpu_ms.append(1e3 * (time.process_time() - c0))
        skip = 5
        return {"mode": "profile", "frames": frames - skip, "gl_renderer": app.ctx.info["GL_RENDERER"],
                "phases_ms": {k: statistics.median(v[skip:]) for k, v in phases.items()},
                "loop_ms": statistics.median(loop_ms[skip:]), "cpu_ms": statistics.median(cpu_ms[skip:])}


# ---------------------------------------------------------------------------------------------- driver
def _extract(repo: Path, ref: str, dest: Path) -> Path:
    """The preview code of git revision ``ref`` of ``repo`` (render/, shaders/, benchmarks/preview.py) under
    ``dest``."""
    archive = subprocess.run(["git", "-C", str(repo), "archive", ref, "render", "shaders", "benchmarks/preview.py"],
                             check=True, capture_output=True).stdout
    subprocess.run(["tar", "-x", "-C", str(dest)], input=archive, check=True)
    return dest / "benchmarks" / "preview.py"


def _run_child(script: Path, mode: str, args, env_threads: str | None, tmp: Path) -> dict:
    """One mode in its own process (``script`` is this file or REF's); returns its run record."""
    out = tmp / f"run_{time.monotonic_ns()}.json"
    cmd = [sys.executable, str(script), "--child", "--modes", mode, "--rounds", "1", "--seconds", str(args.seconds),
           "--scene", str(args.scene.resolve()), "--level", str(args.level), "--size", args.size,
           "--max-fps", str(args.max_fps), "--quality", args.quality, "--warmup-frames", str(args.warmup_frames),
           "--json", str(out)]
    if args.headless:
        cmd.append("--headless")
    if args.device:
        cmd += ["--device", args.device]
    if script != Path(__file__).resolve():
        cmd.remove("--child")     # REF's script runs its modes in-process and knows no --child
    env = dict(os.environ)
    env.pop("LP_NUM_THREADS", None)
    if env_threads is not None:
        env["LP_NUM_THREADS"] = env_threads
    load0 = os.getloadavg()[0]
    r = subprocess.run(cmd, env=env, capture_output=True, text=True)
    if r.returncode != 0 or not out.exists():
        raise RuntimeError(f"{mode} run failed (exit {r.returncode}):\n{r.stdout[-2000:]}\n{r.stderr[-4000:]}")
    res = json.loads(out.read_text())["runs"][0]
    res["load_before"] = load0
    res["load_after"] = os.getloadavg()[0]
    return res


def _child_main(args, w: int, h: int) -> list[dict]:
    runs = []
    for m in args.modes_list:
        if m == "solo":
            res = run_solo(args.scene, args.level, args.device, args.seconds, args.warmup_frames)
        elif m == "profile":
            res = run_profile(args.scene, args.level, args.device, headless=args.headless, size=(w, h),
                              quality=args.quality)
        else:
            res = run_window(args.scene, args.level, args.device, args.seconds, args.warmup_frames,
                             orbit=m != "window", headless=args.headless, size=(w, h), max_fps=args.max_fps,
                             quality=args.quality, scale=1.0 if m == "orbit_full" else None)
        res["lp_num_threads"] = os.environ.get("LP_NUM_THREADS")
        runs.append(res)
    return runs


def _summary(runs: list[dict]) -> dict:
    """Medians over rounds per (variant, mode); sim_vs_solo against the solo run of the same round."""
    solo = {r["round"]: r for r in runs if r["mode"] == "solo"}
    out: dict[str, dict] = {}
    for r in runs:
        ref = solo.get(r["round"])
        if r["mode"] in ("solo", "profile") or not ref or not ref["sim_fps"]:
            continue
        r["sim_vs_solo"] = r["sim_fps"] / ref["sim_fps"]
        # the same simulated frames in both runs (a drape's step cost changes as it settles, and a faster run
        # reaches later frames): solo's median step time over them / this run's
        a, b = ({int(k): v for k, v in (x.get("frame_step_ms") or {}).items()} for x in (ref, r))   # JSON: str keys
        common = sorted(set(a) & set(b))
        if len(common) >= 5:
            r["step_vs_solo_same_frames"] = (statistics.median(a[f] for f in common)
                                             / statistics.median(b[f] for f in common))
            r["same_frames"] = [common[0], common[-1], len(common)]
    keys = sorted({(r["variant"], r["mode"]) for r in runs}, key=lambda k: (MODES.index(k[1]), k[0]))
    for variant, mode in keys:
        xs = [r for r in runs if r["variant"] == variant and r["mode"] == mode]
        s: dict[str, object] = {"runs": len(xs)}
        for field in ("window_fps", "redraws_per_s", "window_cpu_per_s", "xvfb_cpu_per_s", "sim_fps", "sim_vs_solo",
                      "step_vs_solo_same_frames", "step_ms_median", "draw_ms_median", "loop_ms", "cpu_ms"):
            vals = [x[field] for x in xs if x.get(field) is not None]
            if vals:
                s[field] = statistics.median(vals)
        if mode == "profile":
            names = sorted({k for x in xs for k in x["phases_ms"]})
            s["phases_ms"] = {k: statistics.median(x["phases_ms"][k] for x in xs if k in x["phases_ms"]) for k in names}
        out[f"{variant}/{mode}"] = s
    return out


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
    ap.add_argument("--modes", default="solo,window,orbit,orbit_full",
                    help=f"comma-separated, of {', '.join(MODES)}")
    ap.add_argument("--before", default=None, metavar="REF",
                    help="also run the preview code of git revision REF (its orbit_full etc.), interleaved")
    ap.add_argument("--repo", type=Path, default=ROOT, help="git repository of --before (default: this checkout)")
    ap.add_argument("--lp-threads", default="default",
                    help="comma-separated LP_NUM_THREADS values for this checkout's runs ('default' = unset)")
    ap.add_argument("--json", type=Path, default=None)
    ap.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)

    args.modes_list = [m.strip() for m in args.modes.split(",") if m.strip()]
    for m in args.modes_list:
        if m not in MODES:
            ap.error(f"unknown mode {m!r}; expected one of {', '.join(MODES)}")
    if not args.headless and not os.environ.get("DISPLAY"):
        if shutil.which("xvfb-run") is None:
            ap.error("no DISPLAY and no xvfb-run: install xvfb or pass --headless")
        cmd = ["xvfb-run", "-a", "-s", "-screen 0 1920x1080x24 -noreset", sys.executable, *sys.argv]
        return subprocess.call(cmd)
    w, h = (int(v) for v in args.size.lower().split("x"))

    if args.child:   # one process, the modes in order (the parent interleaves them)
        runs = _child_main(args, w, h)
        from clothsim.io import write_json

        write_json(args.json, {"runs": runs})
        return 0

    threads = [None if t.strip() == "default" else t.strip() for t in args.lp_threads.split(",") if t.strip()]
    runs = []
    with tempfile.TemporaryDirectory(prefix="preview_bench_") as tmp:
        tmp = Path(tmp)
        variants = [(f"after[LP_NUM_THREADS={t or 'default'}]", Path(__file__).resolve(), t) for t in threads]
        if args.before:
            (tmp / "before").mkdir()
            variants.insert(0, (f"before[{args.before}]", _extract(args.repo, args.before, tmp / "before"), None))
        for r in range(args.rounds):
            for m in args.modes_list:
                # solo once per round (the reference), every window mode for every variant
                todo = variants[-1:] if m == "solo" else variants
                for name, script, t in todo:
                    if m == "profile" and name.startswith("before"):
                        continue   # REF's benchmark has no profile mode
                    res = _run_child(script, m, args, t, tmp)
                    res.update({"round": r, "variant": "solo" if m == "solo" else name})
                    runs.append(res)
                    _print_run(res)
    summary = _summary(runs)
    _print_summary(summary)
    out = {"scene": str(args.scene.relative_to(ROOT) if args.scene.resolve().is_relative_to(ROOT) else args.scene),
           "level": args.level, "size": [w, h], "headless": args.headless, "device": args.device,
           "max_fps": args.max_fps, "quality": args.quality, "seconds": args.seconds, "rounds": args.rounds,
           "before": args.before, "command": " ".join([Path(sys.executable).name, *sys.argv]), "runs": runs,
           "summary": summary, "machine": {"cpus": os.cpu_count(), "platform": platform.platform(),
                                           "load_average_end": os.getloadavg()},
           "targets": {"llvmpipe_window_fps": 30, "sim_vs_solo": 0.8, "gpu_window_fps": 120}}
    if args.json is not None:
        from clothsim.io import write_json

        args.json.parent.mkdir(parents=True, exist_ok=True)
        write_json(args.json, out)
        print(f"wrote {args.json}")
    return 0


def _print_run(res: dict) -> None:
    load = f"  load {res['load_before']:.1f}->{res['load_after']:.1f}"
    if res["mode"] == "profile":
        ph = "  ".join(f"{k} {v:.1f}" for k, v in res["phases_ms"].items())
        print(f"round {res['round']} {res['variant']} profile: loop {res['loop_ms']:.1f} ms (cpu {res['cpu_ms']:.1f}): "
              f"{ph}{load}", flush=True)
        return
    extra = ""
    if res["mode"] != "solo":
        extra = (f"  window {res['window_fps']:6.1f} fps  3D redraws {res['redraws_per_s']:6.1f}/s  "
                 f"draw {res['draw_ms_median'] or float('nan'):.1f} ms  "
                 f"cpu {res.get('window_cpu_per_s') or float('nan'):.2f} s/s"
                 f" (Xvfb {res.get('xvfb_cpu_per_s') or float('nan'):.2f})")
    extra += f"  step {res['step_ms_median'] or float('nan'):.0f} ms"
    print(f"round {res['round']} {res['variant']} {res['mode']:10s} sim {res['sim_fps']:6.2f} frames/s "
          f"({res['sim_frames']} in {res['seconds']:.1f} s){extra}{load}", flush=True)


def _print_summary(summary: dict) -> None:
    nan = float("nan")
    print("\n| variant / mode | window fps | 3D redraws/s | window CPU s/s | Xvfb CPU s/s | sim frames/s | sim vs solo "
          "| solo step / step, same frames | step ms |\n|---|---:|---:|---:|---:|---:|---:|---:|---:|")
    for key, s in summary.items():
        if key.endswith("/profile"):
            continue
        print(f"| {key} | {s.get('window_fps', nan):.1f} | {s.get('redraws_per_s', nan):.1f} | "
              f"{s.get('window_cpu_per_s', nan):.2f} | {s.get('xvfb_cpu_per_s', nan):.2f} | "
              f"{s.get('sim_fps', nan):.2f} | {s.get('sim_vs_solo', 1.0 if key.startswith('solo') else nan):.0%} | "
              f"{s.get('step_vs_solo_same_frames', 1.0 if key.startswith('solo') else nan):.0%} | "
              f"{s.get('step_ms_median', nan):.0f} |")
    for key, s in summary.items():
        if key.endswith("/profile"):
            print(f"\n{key}: loop {s['loop_ms']:.1f} ms, CPU {s['cpu_ms']:.1f} ms; phases (median ms): "
                  + ", ".join(f"{k} {v:.2f}" for k, v in s["phases_ms"].items()))


if __name__ == "__main__":
    sys.exit(main())
