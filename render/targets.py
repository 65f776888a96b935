"""Render targets and material textures of the Renderer: how each kind is made, what it costs, how a
texture file is read. The Renderer keeps what these functions create and releases it."""

from __future__ import annotations

from pathlib import Path

import numpy as np

import clothsim as cs

from .material import EmbeddedImage
from .settings import GL_SRGB8_ALPHA8

# bytes per pixel and sample of each target kind (gl_nbytes): colour + depth, G-buffer 16+8+8 + depth, ...
_BYTES_PER_SAMPLE = {"msaa": 8, "resolve": 4, "depth": 4, "gbuffer": 36, "visibility_out": 4}


def create_target(ctx, kind: str, size: tuple[int, int], samples: int = 0) -> tuple:
    """The GL objects of one render target (framebuffer first, then its attachments and samplers)."""
    if kind == "msaa":
        color = ctx.renderbuffer(size, 4, samples=samples)
        depth = ctx.depth_renderbuffer(size, samples=samples)
        return (ctx.framebuffer([color], depth), color, depth)
    if kind == "gbuffer":   # deferred shading: position+slot (32F), normal+roughness, base+metallic (16F)
        tex = [ctx.texture(size, 4, dtype=dt, samples=samples) for dt in ("f4", "f2", "f2")]
        depth = ctx.depth_renderbuffer(size, samples=samples)
        return (ctx.framebuffer(tex, depth), *tex, depth)
    if kind == "visibility":   # triangle id per sample (R32UI) + depth; the shaded RGBA8 image
        ids = ctx.texture(size, 1, dtype="u4", samples=samples)
        depth = ctx.depth_renderbuffer(size, samples=samples)
        out = ctx.texture(size, 4)
        return (ctx.framebuffer([ids], depth), ids, depth, out, ctx.framebuffer([out]))
    if kind == "visibility_out":   # the shaded RGBA8 image of the compute-raster visibility path
        out = ctx.texture(size, 4)
        return (out, ctx.framebuffer([out]))
    if kind == "resolve":
        color = ctx.renderbuffer(size, 4)
        return (ctx.framebuffer([color]), color)
    if kind == "depth":  # shadow / contact / depth readback: a sampled depth texture
        tex = ctx.depth_texture(size)
        tex.repeat_x = tex.repeat_y = False
        tex.filter = (ctx.NEAREST, ctx.NEAREST)
        cmp = ctx.sampler(texture=tex, compare_func="<=", filter=(ctx.LINEAR, ctx.LINEAR),
                          repeat_x=False, repeat_y=False)
        raw = ctx.sampler(texture=tex, filter=(ctx.LINEAR, ctx.LINEAR), repeat_x=False, repeat_y=False)
        raw.compare_func = ""
        return (ctx.framebuffer(depth_attachment=tex), tex, cmp, raw)
    if kind == "contact":  # contact occlusion: R16F colour, mipmapped (the blur)
        tex = ctx.texture(size, 1, dtype="f2")
        tex.repeat_x = tex.repeat_y = False
        tex.filter = (ctx.LINEAR_MIPMAP_LINEAR, ctx.LINEAR)
        # the whole mip chain now: with level 0 alone the texture is incomplete, and the
        # NVIDIA driver drops the compute rasteriser's imageStore into an incomplete
        # texture (the first frame of a Renderer had no contact shadow on the H200)
        tex.build_mipmaps()
        return (ctx.framebuffer([tex]), tex)
    raise ValueError(kind)


def target_nbytes(kind: str, size: tuple[int, int], samples: int) -> int:
    """Bytes of a target made by :func:`create_target` (MSAA targets count every sample)."""
    w, h = size
    px = w * h * max(int(samples), 1)
    if kind == "contact":
        return int(2 * px * 4 / 3)   # with its mip chain
    if kind == "visibility":
        return 8 * px + 4 * w * h
    return _BYTES_PER_SAMPLE[kind] * px


def texture_key(path: Path | EmbeddedImage, srgb: bool) -> tuple:
    """What identifies a material texture's content (a file's path and modification time, or an embedded
    image's bytes) and its colour space."""
    if isinstance(path, EmbeddedImage):
        return ("embedded", path.source, path.key, hash(path.data), srgb)
    path = Path(path)
    try:
        stat = path.stat()
    except OSError as e:
        raise cs.InputError(f"texture file not found or unreadable: {path} ({e.strerror or e})") from e
    return (str(path.resolve()), stat.st_mtime_ns, srgb)


def create_texture(ctx, path: Path | EmbeddedImage, srgb: bool):
    """A mipmapped, repeating RGBA8 texture of an image file or embedded image (``srgb``: sRGB-encoded
    colour, decoded by the sampler)."""
    import imageio.v3 as iio

    if not isinstance(path, EmbeddedImage):
        path = Path(path)
    try:
        img = np.asarray(iio.imread(path.data if isinstance(path, EmbeddedImage) else path))
    except Exception as e:
        raise cs.InputError(f"cannot read texture {path}: {e}") from e
    if img.ndim == 2:
        img = np.repeat(img[..., None], 3, axis=2)
    if img.dtype != np.uint8:
        img = (np.clip(img.astype(np.float64) / np.iinfo(img.dtype).max, 0, 1) * 255).astype(np.uint8) \
            if np.issubdtype(img.dtype, np.integer) else (np.clip(img, 0, 1) * 255).astype(np.uint8)
    if img.shape[2] == 3:
        img = np.concatenate([img, np.full(img.shape[:2] + (1,), 255, np.uint8)], axis=2)
    img = np.ascontiguousarray(img[..., :4])
    # glTF UVs have (0, 0) at the image's top-left: upload rows top-first, sample as is.
    kw = {"internal_format": GL_SRGB8_ALPHA8} if srgb else {}
    tex = ctx.texture((img.shape[1], img.shape[0]), 4, img.tobytes(), **kw)
    tex.build_mipmaps()
    tex.anisotropy = 8.0
    tex.repeat_x = tex.repeat_y = True
    return tex
