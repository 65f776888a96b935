"""Render benchmark: frame time at 1920x1080, 4x MSAA, shadows; ours vs pyrender in the same run.

Scenes: a hanging, folded cloth sheet (a grid with sinusoidal folds) of about 100 k and 1 M
triangles on a ground plane. Both renderers get the same mesh, camera, image size, MSAA (4x:
pyrender's offscreen renderer always uses 4 samples), one shadowed directional key light plus two
unshadowed fill/rim lights (pyrender: point lights, whose shadows stay off), and read the RGBA
image back to numpy every frame. Ours additionally renders its ground contact-shadow map.

    python benchmarks/render.py                       # both sizes, 5 timed frames each
    python benchmarks/render.py --sizes 100k --frames 7 --out benchmarks/results

Variants timed for ours: "static" (mesh uploaded once, as pyrender's static scene; default
settings: shading "auto", raster "auto", shadow/contact maps reused while nothing moved), "fresh_maps"
(the same with the maps redrawn every frame, as pyrender does), "forward", "deferred" and
"visibility" (that shading mode, maps redrawn, GL rasteriser: raster "hardware"),
"visibility_static" (visibility, maps reused, GL rasteriser), "visibility_compute" /
"visibility_compute_static" (visibility with the compute rasteriser for the ids and the maps: maps
redrawn / reused; render.raster), "visibility_compute32" / "visibility_compute32_static" (the same
with the two 32-bit passes forced where 64-bit atomics exist), "forward_compute_maps" (forward
shading, maps by the compute rasteriser) and "upload" (new
positions every frame: upload + CPU normals + maps redrawn, the catalog/turntable case of a moving
drape); on CUDA with --warp also "warp", "warp_visibility" and "warp_compute" (positions copied from a Warp CUDA
array through GL interop; auto / visibility with the GL rasteriser / visibility with the compute
rasteriser, maps reused) and "visibility_finish_maps" /
"visibility_finish_main" (visibility, maps redrawn, glFinish after the map passes / the id pass: a
stall diagnostic). ``--cases`` times a subset. ``--baseline-root DIR`` adds
"baseline": the renderer of another checkout (e.g. ``git worktree add /tmp/base <commit>``), run in
a worker process with its own GL context, timed by the worker, so before/after sit in one run.
Cases are interleaved frame by frame, their order rotating every round (a shared machine's load
hits all of them alike). Median of
the timed frames after warm-up frames; ratio = pyrender / ours (also the median of per-frame
ratios in the JSON). ``--profile``: afterwards, per-pass times (glFinish after each pass:
setup, shadow, contact, main = G-buffer, id or forward colour pass, shade = deferred or visibility
shading + resolve,
resolve, readback) for the settings variants (static ... visibility_static), and the per-pixel
difference of their images from forward's. Writes a JSON and prints a table last.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import sys
import time
from pathlib import Path

os.environ.setdefault("PYOPENGL_PLATFORM", "egl")
os.environ.setdefault("PYGLET_HEADLESS", "true")

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

SIZES = {"100k": 224, "1M": 708}   # grid side n: 2 (n-1)^2 triangles = 99,458 and 1,000,818


def folded_sheet(n: int, width: float = 1.0, height: float = 1.4):
    """An n x n hanging sheet [m] with vertical folds that deepen towards the hem, hem at y = 0.02."""
    u = np.linspace(-0.5, 0.5, n)
    v = np.linspace(0.0, 1.0, n)
    U, V = np.meshgrid(u, v, indexing="xy")
    depth = 0.02 + 0.06 * (1.0 - V)
    x = U * width
    z = depth * np.sin(2 * np.pi * 6 * U) + 0.01 * np.sin(2 * np.pi * 23 * U + 3 * V)
    y = 0.02 + V * height
    verts = np.stack([x, y, z], -1).reshape(-1, 3).astype(np.float32)
    i = np.arange(n - 1)
    a = (i[:, None] * n + i[None, :]).ravel()
    tris = np.concatenate([np.stack([a, a + 1, a + n], 1), np.stack([a + 1, a + n + 1, a + n], 1)]).astype(np.int32)
    return verts, tris


def _time(fn) -> float:
    t = time.perf_counter()
    fn()
    return time.perf_counter() - t


def ours_settings(w, h):
    from render import RenderSettings

    s = RenderSettings(width=w, height=h, samples=4, shadows=True, ground=True)
    fresh = {**s.__dict__, "reuse_maps": False}
    hw = {"raster": "hardware"}
    return {"static": s, "fresh_maps": RenderSettings(**fresh),
            "forward": RenderSettings(**{**fresh, "shading": "forward", **hw}),
            "deferred": RenderSettings(**{**fresh, "shading": "deferred", **hw}),
            "visibility": RenderSettings(**{**fresh, "shading": "visibility", **hw}),
            "visibility_static": RenderSettings(**{**s.__dict__, "shading": "visibility", **hw}),
            "visibility_compute": RenderSettings(**{**fresh, "shading": "visibility", "raster": "compute"}),
            "visibility_compute_static": RenderSettings(**{**s.__dict__, "shading": "visibility", "raster": "compute"}),
            "forward_compute_maps": RenderSettings(**{**fresh, "shading": "forward", "raster": "compute"})}


def ours_cases(r, verts, tris, camera, w, h, warp_device=None, breakdown=False) -> dict:
    """{case name: zero-argument frame function} for our renderer."""
    from render import Material, MeshItem, RenderSettings

    ss = ours_settings(w, h)
    s = ss["static"]
    item = MeshItem(verts, tris, Material.fabric("navy"), name="sheet")
    # its own name, so its GL buffers are not the static mesh's (else the frame after an upload
    # frame would re-upload the static positions)
    moved = [MeshItem(verts + np.float32(1e-4 * k), tris, item.material, name="sheet_moving") for k in range(2)]
    flip = [0]

    def upload():
        flip[0] ^= 1
        r.render([moved[flip[0]]], camera, s)

    cases = {name: (lambda st=st: r.render([item], camera, st)) for name, st in ss.items()}
    cases["upload"] = upload

    def compute32(settings):
        def frame():   # the two 32-bit passes (depth, then id) where 64-bit atomics exist too
            r.compute_raster.use_int64, keep = False, r.compute_raster.use_int64
            try:
                r.render([item], camera, settings)
            finally:
                r.compute_raster.use_int64 = keep
        return frame

    cases["visibility_compute32"] = compute32(ss["visibility_compute"])
    cases["visibility_compute32_static"] = compute32(ss["visibility_compute_static"])
    if warp_device:
        import warp as wp

        xs = [wp.array(verts + np.float32(1e-4 * k), dtype=wp.vec3, device=warp_device) for k in range(2)]
        warp_item = MeshItem(verts, tris, item.material, name="sheet_warp")   # its own GL buffers

        def warp_frame():
            flip[0] ^= 1
            r.render([warp_item], camera, s, device_positions={"sheet_warp": xs[flip[0]]})
            wp.synchronize_device(warp_device)

        cases["warp"] = warp_frame

        def warp_visibility_frame():
            flip[0] ^= 1
            r.render([warp_item], camera, ss["visibility_static"], device_positions={"sheet_warp": xs[flip[0]]})
            wp.synchronize_device(warp_device)

        cases["warp_visibility"] = warp_visibility_frame

        def warp_compute_frame():
            flip[0] ^= 1
            r.render([warp_item], camera, ss["visibility_compute_static"], device_positions={"sheet_warp": xs[flip[0]]})
            wp.synchronize_device(warp_device)

        cases["warp_compute"] = warp_compute_frame

        def finishing(passes, settings):
            def frame():
                r.finish_after = set(passes)
                try:
                    r.render([item], camera, settings)
                finally:
                    r.finish_after = set()
            return frame

        # diagnostics of the stall of visibility frames that redraw their maps (H200, session 6):
        # the same frame waiting for the GL after the map passes / after the id pass
        cases["visibility_finish_maps"] = finishing(("shadow", "contact"), ss["visibility"])
        cases["visibility_finish_main"] = finishing(("main",), ss["visibility"])
    if breakdown:
        # where the time goes: the colour pass alone (no shadow/contact maps, no floor), then
        # with the key shadow map but no floor/contact map
        s0 = RenderSettings(width=w, height=h, samples=4, shadows=False, ground=False)
        s1 = RenderSettings(width=w, height=h, samples=4, shadows=True, ground=False)
        cases["colour_pass_only"] = lambda: r.render([item], camera, s0)
        # the floor of any frame: clear the MSAA target, resolve, read 1080p RGBA back (no geometry)
        msaa = r._target("msaa", (w, h), 4)[0]
        resolve = r._target("resolve", (w, h))[0]
        buf = np.empty((h, w, 4), np.uint8)

        def clear_resolve_read():
            with r.ctx:
                msaa.use()
                msaa.clear(0.0, 0.0, 0.0, 0.0, depth=1.0)
                r.ctx.copy_framebuffer(resolve, msaa)
                resolve.read_into(buf, components=4, alignment=1)

        cases["clear_resolve_read"] = clear_resolve_read
        cases["shadow_no_floor"] = lambda: r.render([item], camera, s1)
    return cases


def pyrender_frame(verts, tris, camera, w, h):
    """(renderer, frame function) for pyrender with the same mesh, camera, size and lights."""
    import pyrender
    import trimesh

    from render import StudioRig

    rig = StudioRig()
    scene = pyrender.Scene(ambient_light=np.array(rig.env_horizon) * 0.3, bg_color=(0.95, 0.95, 0.94, 0.0))
    mat = pyrender.MetallicRoughnessMaterial(baseColorFactor=(0.013, 0.026, 0.074, 1.0), metallicFactor=0.0,
                                             roughnessFactor=0.85, doubleSided=True)
    scene.add(pyrender.Mesh.from_trimesh(trimesh.Trimesh(verts, tris, process=False), material=mat, smooth=True))
    lo, hi = verts.min(0), verts.max(0)
    ground = trimesh.creation.box(extents=(8.0, 0.001, 8.0))
    ground.apply_translation((0.0, float(lo[1]) - 0.0005, 0.0))
    scene.add(pyrender.Mesh.from_trimesh(ground, material=pyrender.MetallicRoughnessMaterial(baseColorFactor=(0.9, 0.9, 0.9, 1.0))))
    center = 0.5 * (lo + hi)

    def pose_towards(direction, dist=3.0):
        from render import Camera

        return Camera(position=tuple(center + dist * direction), target=tuple(center)).pose_matrix()

    scene.add(pyrender.DirectionalLight(intensity=float(np.mean(rig.key.radiance)) * 3.0),
              pose=pose_towards(rig.key.direction(camera)))
    scene.add(pyrender.PointLight(intensity=float(np.mean(rig.fill.radiance)) * 20.0),
              pose=pose_towards(rig.fill.direction(camera)))
    scene.add(pyrender.PointLight(intensity=float(np.mean(rig.rim.radiance)) * 20.0),
              pose=pose_towards(rig.rim.direction(camera)))
    _, fov_y = camera.fov(w / h)
    scene.add(pyrender.PerspectiveCamera(yfov=fov_y, aspectRatio=w / h, znear=0.05, zfar=20.0), pose=camera.pose_matrix())
    r = pyrender.OffscreenRenderer(w, h)
    flags = pyrender.RenderFlags.SHADOWS_DIRECTIONAL | pyrender.RenderFlags.RGBA
    return r, (lambda: r.render(scene, flags=flags))


WORKER = r"""
import sys, time, pickle
sys.path.insert(0, sys.argv[1])
import numpy as np
from render import Material, MeshItem, RenderSettings, Renderer
data = pickle.load(sys.stdin.buffer)
r = Renderer()
item = MeshItem(data["verts"], data["tris"], Material.fabric("navy"), name="sheet")
s = RenderSettings(width=data["w"], height=data["h"], samples=4, shadows=True, ground=True)
out = sys.stdout
for line in sys.stdin:
    if line.strip() == "quit":
        break
    t = time.perf_counter()
    img = r.render([item], data["camera"], s)
    dt = time.perf_counter() - t
    if line.strip() == "image":
        np.save(data["image_path"], img)
    out.write(f"{dt!r}\n")
    out.flush()
r.release()
"""


def baseline_worker(root: Path, verts, tris, camera, w, h, image_path: Path):
    """A worker process rendering with the renderer in ``root`` (another checkout); returns
    (frame function returning the worker's own frame time, close function)."""
    import pickle
    import subprocess

    proc = subprocess.Popen([sys.executable, "-c", WORKER, str(root)], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, cwd=str(root))
    proc.stdin.write(pickle.dumps({"verts": verts, "tris": tris, "camera": camera, "w": w, "h": h,
                                   "image_path": str(image_path)}))
    proc.stdin.flush()

    def frame(cmd="frame"):
        proc.stdin.write(f"{cmd}\n".encode())
        proc.stdin.flush()
        line = proc.stdout.readline()
        if not line:
            raise RuntimeError(f"baseline worker ({root}) died")
        return float(line)

    def close():
        try:
            proc.stdin.write(b"quit\n")
            proc.stdin.close()
        except OSError:
            pass
        proc.wait(timeout=60)

    return frame, close


def profile_ours(r, verts, tris, camera, w, h, frames: int, only=None) -> dict:
    """Per-pass medians [ms] (glFinish after each pass) and the per-pixel difference between the
    variants' images (max, mean, pixels over 8 levels)."""
    from render import Material, MeshItem

    item = MeshItem(verts, tris, Material.fabric("navy"), name="sheet")
    out, images = {}, {}
    r.profile = True
    try:
        for name, s in ours_settings(w, h).items():
            if only and name not in only and name != "forward":
                continue
            images[name] = r.render([item], camera, s)
            passes = {}
            for _ in range(frames):
                r.render([item], camera, s)
                for k, v in r.stats.items():
                    passes.setdefault(k, []).append(1e3 * v)
            out[name] = {"shading": r.frame_info["shading"], "raster": r.frame_info.get("raster"), "passes_ms": {k: statistics.median(v) for k, v in passes.items()}}
    finally:
        r.profile = False
    ref = images["forward"].astype(np.int16)
    for name, img in images.items():
        d = np.abs(img.astype(np.int16) - ref)
        out[name]["vs_forward"] = {"max": int(d.max()), "mean": float(d.mean()),
                                   "pixels_over_8": int((d.max(axis=-1) > 8).sum())}
    return out, images


def bench_scene(verts, tris, camera, w, h, warmup, frames, warp_device, breakdown, with_pyrender,
                baseline_root=None, profile=False, only=None) -> dict:
    """Time every case, interleaved frame by frame (ours and pyrender alternate), so a machine
    whose load changes during the run slows both sides alike; per-frame ratios are kept too."""
    import tempfile

    from render import Renderer

    pr = None
    close_baseline = None
    result = {}
    with Renderer() as r:
        cases = ours_cases(r, verts, tris, camera, w, h, warp_device, breakdown)
        if only:
            cases = {k: v for k, v in cases.items() if k in only or k == "static"}
        timed_by_worker = set()
        tmp = Path(tempfile.mkdtemp(prefix="render_bench_"))
        if baseline_root is not None:
            base_frame, close_baseline = baseline_worker(baseline_root, verts, tris, camera, w, h, tmp / "baseline.npy")
            cases["baseline"] = base_frame
            timed_by_worker.add("baseline")
        if with_pyrender:
            pr, frame = pyrender_frame(verts, tris, camera, w, h)
            cases["pyrender"] = frame
        times = {k: [] for k in cases}
        try:
            for _ in range(warmup):
                for fn in cases.values():
                    fn()
            names = list(cases)
            for i in range(frames):
                # the order rotates every round: whichever case follows another renderer's frame
                # (a cold cache, another context's threads) is a different one each time
                for k in names[i % len(names):] + names[:i % len(names)]:
                    fn = cases[k]
                    times[k].append(fn() if k in timed_by_worker else _time(fn))
            with r.ctx:
                gl = r.ctx.info["GL_RENDERER"]
            result["compute_raster"] = {"int64_atomics": r.compute_raster.use_int64,
                                        "int64_error": r.compute_raster.int64_error}
            if profile:
                result["profile"], images = profile_ours(r, verts, tris, camera, w, h, max(3, frames // 2), only)
                if baseline_root is not None:
                    base_frame("image")
                    base = np.load(tmp / "baseline.npy").astype(np.int16)
                    for name, img in images.items():
                        d = np.abs(img.astype(np.int16) - base)
                        result["profile"][name]["vs_baseline"] = {
                            "max": int(d.max()), "mean": float(d.mean()), "pixels_over_8": int((d.max(axis=-1) > 8).sum())}
        finally:
            if close_baseline is not None:
                close_baseline()
            if pr is not None:
                r.release()     # pyrender's delete() terminates the shared EGL display: ours first
                pr.delete()
    return {"times_s": times, "gl_renderer": gl, **result}


def main(argv=None) -> None:
    p = argparse.ArgumentParser(description="render benchmark: ours vs pyrender, 1920x1080, 4x MSAA, shadows")
    p.add_argument("--sizes", nargs="*", default=list(SIZES), choices=list(SIZES))
    p.add_argument("--width", type=int, default=1920)
    p.add_argument("--height", type=int, default=1080)
    p.add_argument("--frames", type=int, default=5, help="timed frames per case (median reported)")
    p.add_argument("--warmup", type=int, default=2)
    p.add_argument("--warp", default=None, help="Warp CUDA device for the interop variant (e.g. cuda:0)")
    p.add_argument("--no-pyrender", action="store_true")
    p.add_argument("--breakdown", action="store_true", help="also time ours without shadows / without the floor")
    p.add_argument("--profile", action="store_true", help="per-pass times and image differences of ours (see doc)")
    p.add_argument("--baseline-root", type=Path, default=None,
                   help="another checkout whose renderer is timed in the same run (a worker process)")
    p.add_argument("--cases", nargs="*", default=None,
                   help="time only these of our cases (static always; default: all): static fresh_maps forward "
                        "deferred visibility visibility_static upload warp colour_pass_only ...")
    p.add_argument("--out", type=Path, default=Path(__file__).resolve().parent / "results")
    p.add_argument("--tag", default=None, help="file name tag [default: host kind]")
    args = p.parse_args(argv)
    if args.frames < 5:
        p.error("--frames must be >= 5 (the median of at least 5 frames)")

    from render import standard_view

    results = []
    for name in args.sizes:
        verts, tris = folded_sheet(SIZES[name])
        cam = standard_view("three_quarter", verts.min(0), verts.max(0), aspect=args.width / args.height)
        res = bench_scene(verts, tris, cam, args.width, args.height, args.warmup, args.frames, args.warp,
                          args.breakdown, not args.no_pyrender, args.baseline_root, args.profile, args.cases)
        times = res["times_s"]
        med = {k: 1e3 * statistics.median(v) for k, v in times.items()}
        entry = {"scene": name, "triangles": int(len(tris)), "vertices": int(len(verts)),
                 "width": args.width, "height": args.height, "msaa": 4, "gl_renderer": res["gl_renderer"],
                 "times_s": times, "median_ms": med, "compute_raster": res.get("compute_raster")}
        if "pyrender" in times:
            per_frame = [p / o for p, o in zip(times["pyrender"], times["static"])]
            entry["ratio_pyrender_over_ours_static"] = med["pyrender"] / med["static"]
            entry["ratio_per_frame_median"] = statistics.median(per_frame)
            entry["ratio_pyrender_over"] = {k: med["pyrender"] / med[k] for k in med if k != "pyrender"}
        if "baseline" in times:
            entry["speedup_over_baseline"] = {k: med["baseline"] / med[k] for k in med if k not in ("baseline", "pyrender")}
        if "profile" in res:
            entry["profile"] = res["profile"]
        results.append(entry)
        print(f"{name}: {med}", file=sys.stderr, flush=True)

    import moderngl

    tag = args.tag or ("gpu" if args.warp else "cpu")
    doc = {"benchmark": "render", "frames": args.frames, "warmup": args.warmup, "results": results,
           "host": {"python": platform.python_version(), "machine": platform.machine(), "cpus": os.cpu_count()},
           "versions": {"moderngl": moderngl.__version__, "numpy": np.__version__}}
    args.out.mkdir(parents=True, exist_ok=True)
    out = args.out / f"render_{tag}.json"
    out.write_text(json.dumps(doc, indent=2))
    head = (f"{'scene':>5} {'triangles':>10} {'renderer':<24} {'ours static ms':>15} {'ours upload ms':>15} "
            f"{'warp ms':>8} {'pyrender ms':>12} {'ratio':>6}")
    print(head)
    nan = float("nan")
    for e in results:
        m = e["median_ms"]
        print(f"{e['scene']:>5} {e['triangles']:>10,} {e['gl_renderer'][:24]:<24} {m['static']:>15.1f} "
              f"{m.get('upload', nan):>15.1f} {m.get('warp', nan):>8.2f} {m.get('pyrender', nan):>12.1f} "
              f"{e.get('ratio_pyrender_over_ours_static', nan):>6.2f}")
    for e in results:
        if "ratio_pyrender_over" in e:
            print(f"{e['scene']:>5} pyrender / ours: " + ", ".join(f"{k} {v:.2f}" for k, v in e["ratio_pyrender_over"].items()))
        if "speedup_over_baseline" in e:
            print(f"{e['scene']:>5} baseline / ours: " + ", ".join(f"{k} {v:.2f}" for k, v in e["speedup_over_baseline"].items()))
        for name, pr in e.get("profile", {}).items():
            passes = ", ".join(f"{k} {v:.1f}" for k, v in pr["passes_ms"].items())
            diff = pr["vs_forward"]
            print(f"{e['scene']:>5} profile {name} ({pr['shading']}, {pr.get('raster')}): {passes} ms; vs forward: max {diff['max']}, "
                  f"mean {diff['mean']:.3f}, {diff['pixels_over_8']} px > 8"
                  + (f"; vs baseline: max {pr['vs_baseline']['max']}, mean {pr['vs_baseline']['mean']:.3f}, "
                     f"{pr['vs_baseline']['pixels_over_8']} px > 8" if "vs_baseline" in pr else ""))
    if args.breakdown:
        for e in results:
            m = e["median_ms"]
            print(f"{e['scene']:>5} breakdown: clear+resolve+read {m['clear_resolve_read']:.2f} ms, "
                  f"colour pass only {m['colour_pass_only']:.2f} ms, + key shadow map "
                  f"{m['shadow_no_floor']:.2f} ms, + floor and contact map {m['static']:.2f} ms")
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
