"""Catalog shots: the standard views of a drape as PNGs, a turntable (MP4 + GIF), a contact sheet
and a JSON of the shot metadata; colourways re-render the same drape in other fabrics.

Every file is written to a temporary name in the output folder and renamed (clothsim.io).
"""

from __future__ import annotations

import io
import math
import os
import platform
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Sequence

import numpy as np

import clothsim as cs
from clothsim.io import atomic_write, ensure_output_dir, write_json

from .camera import STANDARD_VIEWS, Camera, fit_distance, standard_view, view_direction
from .material import Material, MeshItem, parse_colour
from .renderer import RenderSettings, Renderer

DEFAULT_VIEWS = ("front", "three_quarter", "left", "back", "right")
TURNTABLE_FPS = 24


@dataclass(frozen=True)
class Colourway:
    """A fabric look for every garment: a colour, or a base-colour texture (and optional normal map)."""

    name: str
    colour: tuple[float, float, float] | None = None
    texture: Path | None = None
    normal_map: Path | None = None
    uv_scale: tuple[float, float] = (1.0, 1.0)

    def material(self, base: Material) -> Material:
        if self.texture is not None:
            return Material.fabric("#ffffff", name=self.name).replace(
                base_texture=self.texture, normal_map=self.normal_map, uv_scale=self.uv_scale)
        m = Material.fabric(self.colour, name=self.name)
        return m.replace(normal_map=self.normal_map or base.normal_map, uv_scale=self.uv_scale)


def parse_colourway(spec: str) -> Colourway:
    """``navy`` / ``#1f2d4d`` / ``name=#1f2d4d`` / ``name=path/to/texture.png`` -> Colourway.

    Raises InputError for an unknown colour or a texture file that does not exist.
    """
    name, _, value = spec.partition("=") if "=" in spec else (None, "", spec)
    value = value.strip()
    if value.lower().endswith((".png", ".jpg", ".jpeg", ".tif", ".tiff", ".webp", ".bmp")):
        path = Path(value)
        if not path.is_file():
            raise cs.InputError(f"colourway {spec!r}: texture file not found: {path}")
        return Colourway(name=(name or path.stem).strip(), texture=path)
    colour = parse_colour(value)
    label = name or value.lstrip("#")
    return Colourway(name="".join(c if c.isalnum() or c in "-_" else "_" for c in label.strip()), colour=colour)


def parse_size(text: str) -> tuple[int, int]:
    """``"WxH"`` -> (W, H) in pixels, each in [1, 8192]."""
    from .renderer import MAX_IMAGE_SIDE

    try:
        w, h = (int(x) for x in text.lower().split("x"))
    except ValueError:
        raise cs.InputError(f"image size {text!r}: expected WIDTHxHEIGHT in pixels, e.g. 1620x1080") from None
    for label, v in (("width", w), ("height", h)):
        if not 1 <= v <= MAX_IMAGE_SIDE:
            raise cs.InputError(f"image size {text!r}: {label} must lie in [1, {MAX_IMAGE_SIDE}] px, got {v}")
    return w, h


def check_views(views: Sequence) -> list:
    """Views as names (``"front"``) or ``(camera name, view name, focal_mm)`` tuples; raises
    InputError for an unknown view name."""
    out = []
    for v in views:
        view = v[1] if isinstance(v, tuple) else v
        if view not in STANDARD_VIEWS:
            raise cs.InputError(f"unknown view {view!r}; expected one of {', '.join(STANDARD_VIEWS)}")
        out.append(v)
    return out


def _png_bytes(img: np.ndarray) -> bytes:
    import imageio.v3 as iio

    buf = io.BytesIO()
    iio.imwrite(buf, img, extension=".png")
    return buf.getvalue()


def write_png(path: Path, img: np.ndarray) -> Path:
    with atomic_write(path, "wb") as f:
        f.write(_png_bytes(img))
    return path


def composite(img: np.ndarray, background) -> np.ndarray:
    """Straight-alpha RGBA over an opaque sRGB background -> RGB uint8 (for video/GIF)."""
    bg = np.asarray(parse_colour(background)) * 255.0
    a = img[..., 3:4].astype(np.float32) / 255.0
    return np.round(img[..., :3] * a + bg * (1.0 - a)).astype(np.uint8)


def contact_sheet(images: Sequence[np.ndarray], labels: Sequence[str], columns: int | None = None,
                  background="#ffffff", label_px: int = 18) -> np.ndarray:
    """A grid of equally sized images with their labels underneath, RGB uint8."""
    from PIL import Image, ImageDraw

    n = len(images)
    columns = columns or min(n, 3 if n > 4 else n)
    rows = math.ceil(n / columns)
    h, w = images[0].shape[:2]
    pad = max(4, w // 64)
    cell_h = h + label_px + pad
    sheet = Image.new("RGB", (columns * (w + pad) + pad, rows * cell_h + pad), tuple(int(255 * c) for c in parse_colour(background)))
    draw = ImageDraw.Draw(sheet)
    for i, (img, label) in enumerate(zip(images, labels)):
        r, c = divmod(i, columns)
        x, y = pad + c * (w + pad), pad + r * cell_h
        rgb = composite(img, background) if img.shape[2] == 4 else img
        sheet.paste(Image.fromarray(rgb), (x, y))
        draw.text((x + 2, y + h + 2), label.replace("_", " "), fill=(60, 60, 60))
    return np.asarray(sheet)


def _write_video(path: Path, frames: Sequence[np.ndarray], fps: int) -> Path:
    """H.264 MP4 (yuv420p) at exactly the frames' size (even sizes required by 4:2:0 chroma)."""
    import imageio.v2 as iio2

    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp.mp4")
    try:
        writer = iio2.get_writer(tmp, fps=fps, codec="libx264", quality=8, macro_block_size=1,
                                 pixelformat="yuv420p", ffmpeg_log_level="error")
        for f in frames:
            writer.append_data(f)
        writer.close()
        os.replace(tmp, path)
    finally:
        if tmp.exists():
            tmp.unlink()
    return path


def _write_gif(path: Path, frames: Sequence[np.ndarray], fps: int, max_side: int = 480) -> Path:
    """An animated GIF, looping, downscaled so its longer side is at most ``max_side`` px."""
    from PIL import Image

    ims = [Image.fromarray(f) for f in frames]
    w, h = ims[0].size
    scale = min(1.0, max_side / max(w, h))
    if scale < 1.0:
        size = (max(1, round(w * scale)), max(1, round(h * scale)))
        ims = [im.resize(size, Image.LANCZOS) for im in ims]
    buf = io.BytesIO()
    ims[0].save(buf, format="GIF", save_all=True, append_images=ims[1:], duration=round(1000 / fps), loop=0,
                optimize=False)
    with atomic_write(path, "wb") as f:
        f.write(buf.getvalue())
    return path


def turntable_cameras(lo, hi, count: int, *, aspect: float, elevation_deg: float = 6.0, focal_mm: float = 70.0,
                      margin: float = 0.08) -> list[Camera]:
    """``count`` cameras orbiting the bounds' centre at one distance that fits every azimuth."""
    from .camera import bounds_corners

    lo, hi = np.asarray(lo, float), np.asarray(hi, float)
    target = 0.5 * (lo + hi)
    pts = bounds_corners(lo, hi)
    up = np.array([0.0, 1.0, 0.0])
    azimuths = [360.0 * i / count for i in range(count)]
    dist = max(fit_distance(pts, target, view_direction(a, elevation_deg), up, focal_mm, aspect, margin)
               for a in np.linspace(0.0, 360.0, 73))
    return [Camera(position=tuple(target + dist * view_direction(a, elevation_deg)), target=tuple(target),
                   focal_mm=focal_mm, name=f"turntable_{i:03d}") for i, a in enumerate(azimuths)]


def render_catalog(garments: Sequence[MeshItem], out_dir, *, avatar: MeshItem | None = None,
                   views: Sequence[str] | None = None, cameras: Sequence[Camera] = (),
                   size: tuple[int, int] = (1080, 1080), turntable: int = 0, transparent: bool = False,
                   colourways: Sequence[Colourway] = (), ghost: bool = False,
                   settings: RenderSettings | None = None, renderer: Renderer | None = None,
                   metadata: dict | None = None, focal_mm: float = 70.0, margin: float = 0.08,
                   on_image: Callable[[str], None] | None = None) -> dict:
    """Render catalog shots of ``garments`` (optionally on ``avatar``) into ``out_dir``.

    Args:
        garments: draped garment meshes [m], Y up, body facing +Z.
        out_dir: output folder (created; must be writable).
        avatar: the body; drawn with a skin material, or hidden (``ghost``: it still casts shadows).
        views: standard view names, or (file name, view name, focal_mm) tuples; None and no
            ``cameras``: all five standard views.
        cameras: explicit cameras (rendered after the views, named by ``Camera.name``).
        size: (width, height) [px]; the turntable MP4 needs even sizes (yuv420p) and is padded
            by one background pixel otherwise (recorded in the JSON).
        turntable: frames of a 360-degree turntable (0 = none), played at 24 fps.
        transparent: PNG with alpha, the floor shows only its shadow.
        colourways: re-render the same drape in these looks (subfolder per colourway); none: the
            garments' own materials.
        settings: render settings (size/transparent here override theirs).
        renderer: reuse an open Renderer (else one is created and released).
        metadata: extra JSON fields (scene, timings of the simulation, ...).

    Returns: the summary written to ``catalog.json``.
    """
    t_start = time.perf_counter()
    if not garments:
        raise cs.InputError("render_catalog: no garment meshes to render")
    width, height = size
    base = settings or RenderSettings()
    s = RenderSettings(**{**base.__dict__, "width": int(width), "height": int(height), "transparent": bool(transparent)})
    if turntable < 0:
        raise cs.InputError(f"turntable frames must be >= 0, got {turntable}")
    view_names = check_views(list(views) if views is not None else ([] if cameras else list(DEFAULT_VIEWS)))
    try:
        out = ensure_output_dir(out_dir)
    except OSError as e:
        raise cs.InputError(str(e)) from None

    aspect = width / height
    lo = np.min([g.vertices.min(axis=0) for g in garments], axis=0)
    hi = np.max([g.vertices.max(axis=0) for g in garments], axis=0)
    shot_cams = []
    for v in view_names:
        name, view, focal = v if isinstance(v, tuple) else (v, v, focal_mm)
        cam = standard_view(view, lo, hi, aspect=aspect, focal_mm=focal, margin=margin)
        shot_cams.append(Camera(position=cam.position, target=cam.target, focal_mm=focal, name=name))
    shot_cams += list(cameras)
    names = [c.name for c in shot_cams]
    if len(set(names)) != len(names):
        raise cs.InputError(f"camera names must be unique (they name the files), got {names}")

    if avatar is not None and ghost:
        avatar = avatar.with_material(Material.hidden())
    looks = list(colourways) or [None]

    own = renderer is None
    r = renderer or Renderer()
    files: dict[str, list[str] | str] = {}
    timings: dict[str, float] = {}
    render_s: list[float] = []
    gl_renderer = r.ctx.info.get("GL_RENDERER", "unknown")
    try:
        sheet_images, sheet_labels = [], []
        for look in looks:
            sub = out if len(looks) == 1 else ensure_output_dir(out / look.name)
            gs = [g if look is None else g.with_material(look.material(g.material)) for g in garments]
            meshes = gs + ([avatar] if avatar is not None else [])
            for cam in shot_cams:
                t0 = time.perf_counter()
                img = r.render(meshes, cam, s)
                render_s.append(time.perf_counter() - t0)
                path = write_png(sub / f"{cam.name}.png", img)
                files.setdefault("images", []).append(str(path.relative_to(out)))
                sheet_images.append(img)
                sheet_labels.append(cam.name if look is None else f"{look.name} {cam.name}")
                if on_image:
                    on_image(str(path))
            if turntable:
                t0 = time.perf_counter()
                frames = []
                for cam in turntable_cameras(lo, hi, turntable, aspect=aspect, focal_mm=focal_mm, margin=margin):
                    img = r.render(meshes, cam, s)
                    frames.append(composite(img, s.background) if s.transparent else img[..., :3])
                padded = (width % 2, height % 2)
                if any(padded):
                    frames = [np.pad(f, ((0, padded[1]), (0, padded[0]), (0, 0)), mode="edge") for f in frames]
                _write_video(sub / "turntable.mp4", frames, TURNTABLE_FPS)
                _write_gif(sub / "turntable.gif", frames, TURNTABLE_FPS)
                files.setdefault("turntable", []).extend(
                    [str((sub / "turntable.mp4").relative_to(out)), str((sub / "turntable.gif").relative_to(out))])
                timings.setdefault("turntable_s", 0.0)
                timings["turntable_s"] += time.perf_counter() - t0
                if any(padded):
                    files["turntable_padded_px"] = list(padded)
                if on_image:
                    on_image(str(sub / "turntable.mp4"))
        if sheet_images:
            columns = len(shot_cams) if len(looks) > 1 else None
            sheet = contact_sheet(sheet_images, sheet_labels, columns=columns,
                                  background="#ffffff" if s.transparent else s.background)
            write_png(out / "contact_sheet.png", sheet)
            files["contact_sheet"] = "contact_sheet.png"
    finally:
        if own:
            r.release()

    import moderngl
    import warp as wp

    timings["render_per_image_s"] = float(np.median(render_s)) if render_s else 0.0
    timings["total_s"] = time.perf_counter() - t_start
    summary = {
        "command": "render",
        **(metadata or {}),
        "image": {"width": width, "height": height, "transparent": s.transparent, "samples": s.samples,
                  "tonemap": s.tonemap, "background_srgb": list(s.background), "exposure": s.exposure},
        "cameras": [c.to_dict(aspect) for c in shot_cams],
        "turntable": {"frames": turntable, "fps": TURNTABLE_FPS} if turntable else None,
        "colourways": [{"name": c.name, "colour_srgb": list(c.colour) if c.colour else None,
                        "texture": str(c.texture) if c.texture else None} for c in colourways],
        "meshes": [{"name": g.name, "vertices": len(g.vertices), "triangles": len(g.triangles)} for g in garments]
                  + ([{"name": "avatar", "vertices": len(avatar.vertices), "triangles": len(avatar.triangles),
                       "hidden": ghost}] if avatar is not None else []),
        "bounds_m": [lo.tolist(), hi.tolist()],
        "rig": s.rig.to_dict(),
        "timings_s": {**(metadata or {}).get("timings_s", {}), **timings},
        "files": files,
        "gl_renderer": gl_renderer,
        "versions": {"moderngl": moderngl.__version__, "warp": wp.config.version, "numpy": np.__version__,
                     "python": platform.python_version()},
    }
    write_json(out / "catalog.json", summary)
    return summary
