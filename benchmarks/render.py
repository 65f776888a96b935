"""Render benchmark: frame time at 1920x1080, 4x MSAA, shadows; ours vs pyrender in the same run.

Scenes: a hanging, folded cloth sheet (a grid with sinusoidal folds) of about 100 k and 1 M
triangles on a ground plane. Both renderers get the same mesh, camera, image size, MSAA (4x:
pyrender's offscreen renderer always uses 4 samples), one shadowed directional key light plus two
unshadowed fill/rim lights (pyrender: point lights, whose shadows stay off), and read the RGBA
image back to numpy every frame. Ours additionally renders its ground contact-shadow map.

    python benchmarks/render.py                       # both sizes, 5 timed frames each
    python benchmarks/render.py --sizes 100k --frames 7 --out benchmarks/results

Variants timed for ours: "static" (mesh uploaded once, as pyrender's static scene) and "upload"
(new positions every frame: upload + CPU normals, the catalog/turntable case of a moving drape);
on CUDA with --warp also "warp" (positions copied from a Warp CUDA array through GL interop).
Cases are interleaved frame by frame (a shared machine's load hits both sides alike). Median of
the timed frames after warm-up frames; ratio = pyrender / ours (also the median of per-frame
ratios in the JSON). Writes a JSON and prints a table last.
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


def ours_cases(r, verts, tris, camera, w, h, warp_device=None, breakdown=False) -> dict:
    """{case name: zero-argument frame function} for our renderer."""
    from render import Material, MeshItem, RenderSettings

    s = RenderSettings(width=w, height=h, samples=4, shadows=True, ground=True)
    item = MeshItem(verts, tris, Material.fabric("navy"), name="sheet")
    moved = [item.with_vertices(verts + np.float32(1e-4 * k)) for k in range(2)]
    flip = [0]

    def upload():
        flip[0] ^= 1
        r.render([moved[flip[0]]], camera, s)

    cases = {"static": lambda: r.render([item], camera, s), "upload": upload}
    if warp_device:
        import warp as wp

        xs = [wp.array(verts + np.float32(1e-4 * k), dtype=wp.vec3, device=warp_device) for k in range(2)]

        def warp_frame():
            flip[0] ^= 1
            r.render([item], camera, s, device_positions={"sheet": xs[flip[0]]})
            wp.synchronize_device(warp_device)

        cases["warp"] = warp_frame
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


def bench_scene(verts, tris, camera, w, h, warmup, frames, warp_device, breakdown, with_pyrender) -> dict:
    """Time every case, interleaved frame by frame (ours and pyrender alternate), so a machine
    whose load changes during the run slows both sides alike; per-frame ratios are kept too."""
    from render import Renderer

    pr = None
    with Renderer() as r:
        cases = ours_cases(r, verts, tris, camera, w, h, warp_device, breakdown)
        if with_pyrender:
            pr, frame = pyrender_frame(verts, tris, camera, w, h)
            cases["pyrender"] = frame
        times = {k: [] for k in cases}
        try:
            for _ in range(warmup):
                for fn in cases.values():
                    fn()
            for _ in range(frames):
                for k, fn in cases.items():
                    times[k].append(_time(fn))
            with r.ctx:
                gl = r.ctx.info["GL_RENDERER"]
        finally:
            if pr is not None:
                r.release()     # pyrender's delete() terminates the shared EGL display: ours first
                pr.delete()
    return {"times_s": times, "gl_renderer": gl}


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
                          args.breakdown, not args.no_pyrender)
        times = res["times_s"]
        med = {k: 1e3 * statistics.median(v) for k, v in times.items()}
        entry = {"scene": name, "triangles": int(len(tris)), "vertices": int(len(verts)),
                 "width": args.width, "height": args.height, "msaa": 4, "gl_renderer": res["gl_renderer"],
                 "times_s": times, "median_ms": med}
        if "pyrender" in times:
            per_frame = [p / o for p, o in zip(times["pyrender"], times["static"])]
            entry["ratio_pyrender_over_ours_static"] = med["pyrender"] / med["static"]
            entry["ratio_per_frame_median"] = statistics.median(per_frame)
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
              f"{m['upload']:>15.1f} {m.get('warp', nan):>8.2f} {m.get('pyrender', nan):>12.1f} "
              f"{e.get('ratio_pyrender_over_ours_static', nan):>6.2f}")
    if args.breakdown:
        for e in results:
            m = e["median_ms"]
            print(f"{e['scene']:>5} breakdown: clear+resolve+read {m['clear_resolve_read']:.2f} ms, "
                  f"colour pass only {m['colour_pass_only']:.2f} ms, + key shadow map "
                  f"{m['shadow_no_floor']:.2f} ms, + floor and contact map {m['static']:.2f} ms")
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
