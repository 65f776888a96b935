"""Headless OpenGL context creation (EGL): Mesa llvmpipe on CPU machines, the NVIDIA driver on GPUs."""

from __future__ import annotations

import numpy as np

import clothsim as cs

DEBIAN_PACKAGES = "libegl1 libgl1"
GL_VERSION = 450


class GLUnavailableError(cs.ClothsimError):
    """No usable OpenGL 4.5 context: the message says which system packages to install."""


def create_headless_context(backend: str = "egl"):
    """A standalone moderngl context, GL 4.5 core, without a window or display.

    Raises:
        GLUnavailableError: no EGL/GL driver (names the Debian packages ``libegl1 libgl1``) or
            a driver older than GL 4.5.
    """
    try:
        import moderngl
    except ImportError as e:  # pragma: no cover - moderngl is a hard dependency
        raise GLUnavailableError(f"moderngl is not installed ({e}); pip install moderngl") from e
    try:
        ctx = moderngl.create_context(standalone=True, backend=backend, require=GL_VERSION)
    except Exception as e:
        raise GLUnavailableError(
            f"cannot create a headless OpenGL {GL_VERSION // 100}.{GL_VERSION % 100 // 10} context "
            f"through {backend.upper()} ({type(e).__name__}: {e}). On Debian/Ubuntu install the GL "
            f"driver and loader: `apt-get install {DEBIAN_PACKAGES}` (Mesa's llvmpipe renders on the "
            f"CPU; on NVIDIA machines the driver provides EGL)."
        ) from e
    return ctx


def upload_indices(ctx, gm, triangles) -> None:
    """Put ``triangles`` (M, 3) int32 in the GL mesh ``gm``'s index buffer: rewritten in place when the size
    is unchanged, else re-created with the VAOs that referenced it released. ``gm`` holds ``ibo``,
    ``vaos`` (dict), ``index_count`` and ``triangles_ref`` (the array last uploaded)."""
    if gm.ibo is not None and gm.index_count == triangles.size:
        gm.ibo.write(triangles.tobytes())
    else:
        if gm.ibo is not None:
            gm.ibo.release()
        for vao in gm.vaos.values():
            vao.release()
        gm.vaos.clear()
        gm.ibo = ctx.buffer(triangles.tobytes())
    gm.index_count = triangles.size
    gm.triangles_ref = triangles


def mat4_bytes(m) -> bytes:
    """Column-major float32 bytes of a 4x4 matrix, as GLSL mat4 uniforms expect."""
    return np.asarray(m, dtype=np.float32).T.tobytes()


def set_uniform(prog, name: str, value) -> None:
    """Set a uniform if the program uses it (the GLSL compiler drops unused ones); bytes = raw write."""
    try:
        member = prog[name]
    except KeyError:
        return
    if isinstance(value, bytes):
        member.write(value)
    else:
        member.value = value


def release_gl(owner, vaos: dict, names) -> None:
    """Release an owner's GL objects: the vertex arrays in ``vaos`` (the dict is emptied) and the buffers
    held in its attributes ``names`` (each set to None; None ones are skipped)."""
    for vao in vaos.values():
        vao.release()
    vaos.clear()
    for name in names:
        buf = getattr(owner, name)
        if buf is not None:
            buf.release()
            setattr(owner, name, None)
