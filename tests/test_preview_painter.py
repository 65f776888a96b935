"""The preview's fast look (render.preview.painter) on a headless EGL context (Mesa llvmpipe here).

References: the lighting model of ``shaders/preview_light.glsl`` evaluated in float64 numpy at each pixel
centre with the analytic surface normal (a plane, a sphere); the key light's shadow of a square occluder
projected along the key direction (plain geometry); what the painter keeps between frames.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from render.camera import Camera

W, H = 320, 240


@pytest.fixture(scope="module")
def gl():
    from render.gl import GLUnavailableError, create_headless_context
    from render.preview.painter import PreviewPainter
    from render.shaders import ProgramCache

    try:
        ctx = create_headless_context("egl")
    except GLUnavailableError as e:
        pytest.skip(str(e))
    programs = ProgramCache(ctx)
    with ctx:
        painter = PreviewPainter(ctx, programs)
        yield ctx, painter
        painter.release()
        programs.release()
    ctx.release()


def _draw(gl, items, camera, samples=1, shadows=False, per_vertex=True, gouraud=False):
    ctx, painter = gl
    painter.per_vertex = per_vertex
    with ctx:
        fbo = painter.target((W, H), 0)[0]
        painter.draw(items, camera, fbo, (W, H), samples=samples, shadows=shadows, gouraud=gouraud)
        img = np.frombuffer(fbo.read(components=3, alignment=1), np.uint8).reshape(H, W, 3)
    return img.astype(np.float64)   # row 0 = bottom (GL)


def _rays(camera: Camera):
    """Unit world directions through every pixel centre, (H, W, 3), row 0 = bottom (GL's order)."""
    right, up, back = camera.basis()
    _, fov_y = camera.fov(W / H)
    th = math.tan(0.5 * fov_y)
    tw = th * W / H
    x = ((np.arange(W) + 0.5) / W * 2.0 - 1.0) * tw
    y = ((np.arange(H) + 0.5) / H * 2.0 - 1.0) * th
    d = x[None, :, None] * right + y[:, None, None] * up - back
    return d / np.linalg.norm(d, axis=2, keepdims=True)


def _srgb(c):
    c = np.clip(c, 0.0, 1.0)
    return np.where(c <= 0.0031308, 12.92 * c, 1.055 * c ** (1 / 2.4) - 0.055)


def _neutral(color):
    """Khronos PBR Neutral (the shader's tonemap_pbr_neutral), per pixel on (..., 3)."""
    color = color.copy()
    x = color.min(axis=-1, keepdims=True)
    color -= np.where(x < 0.08, x - 6.25 * x * x, 0.04)
    peak = color.max(axis=-1, keepdims=True)
    start, d = 0.8 - 0.04, 1.0 - (0.8 - 0.04)
    new_peak = 1.0 - d * d / (peak + d - start)
    g = 1.0 - 1.0 / (0.15 * (peak - new_peak) + 1.0)
    squeezed = color * new_peak / peak
    squeezed = squeezed * (1 - g) + new_peak * g
    return np.where(peak < start, color, squeezed)


def _reference(painter, material, camera, p, n, vis=1.0):
    """preview_light.glsl in float64: sRGB colour [0, 255] at points p with unit normals n (..., 3)."""
    from render.lighting import Light
    from render.preview.painter import _material_uniforms

    L = painter.lights
    base, sheen, spec, s = (np.asarray(x, np.float64) for x in _material_uniforms(material))
    key, key_rad = np.asarray(L.key_dir), np.asarray(L.key)
    fill = Light(L.fill_azimuth_deg, L.fill_elevation_deg, L.fill).direction(camera)
    v = np.asarray(camera.position) - p
    v /= np.linalg.norm(v, axis=-1, keepdims=True)
    dot = lambda a, b: np.sum(a * b, axis=-1, keepdims=True)  # noqa: E731
    n_v = np.clip(dot(n, v), 0.0, 1.0)
    n_l = np.maximum(dot(n, key), 0.0) * vis
    n_f = np.maximum(dot(n, fill), 0.0)
    ambient = (np.asarray(L.floor) + (np.asarray(L.sky) - L.floor) * (0.5 + 0.5 * n[..., 1:2])) * (0.8 + 0.2 * vis)
    e = key_rad * n_l + np.asarray(L.fill) * n_f
    color = base * (ambient + e / math.pi)
    h = key + v
    h /= np.linalg.norm(h, axis=-1, keepdims=True)
    color += spec * np.maximum(dot(n, h), 0.0) ** s * key_rad * n_l
    color += sheen * (1.0 - n_v) ** 3 * (ambient + 0.25 * e)
    return 255.0 * _srgb(_neutral(color * L.exposure))


def _grid(n: int, size: float):
    """An n x n quad grid of side ``size`` [m] in the XZ plane at y = 0, normal +Y (counter-clockwise from above)."""
    u = np.linspace(-0.5 * size, 0.5 * size, n + 1)
    x, z = np.meshgrid(u, u, indexing="ij")
    v = np.c_[x.ravel(), np.zeros(x.size), z.ravel()].astype(np.float32)
    i = np.arange(n)[:, None] * (n + 1) + np.arange(n)[None, :]
    a, b, c, d = i, i + (n + 1), i + (n + 1) + 1, i + 1
    t = np.concatenate([np.stack([a, d, b], -1).reshape(-1, 3), np.stack([b, d, c], -1).reshape(-1, 3)])
    return v, t.astype(np.int32)


def test_closed_outward_detection():
    """Culling is safe only for a closed, consistently wound mesh with outward normals."""
    import trimesh

    from render.preview.painter import is_closed_outward

    m = trimesh.creation.icosphere(subdivisions=2)
    v, t = np.asarray(m.vertices), np.asarray(m.faces)
    assert is_closed_outward(v, t)
    assert not is_closed_outward(v, t[:, ::-1]), "inward normals (negative volume)"
    assert not is_closed_outward(v, t[1:]), "a hole: edges with one triangle"
    flipped = t.copy()
    flipped[0] = flipped[0, ::-1]
    assert not is_closed_outward(v, flipped), "one triangle wound the other way"
    assert not is_closed_outward(*_grid(4, 1.0)[::1]), "an open sheet (cloth)"


@pytest.mark.parametrize("gouraud,side", [(False, 1.0), (False, -1.0), (True, 1.0), (True, -1.0)])
def test_plane_matches_the_lighting_model(gl, gouraud, side):
    """A cloth plane (open mesh: two-sided) seen from the front and from the back, against the model evaluated
    at every pixel centre with the normal on the viewer's side. Per pixel the plane's normal is exact (flat)
    and v_world is interpolated perspective-correctly, so the only differences are 8-bit rounding (0.5 level)
    and float32 / llvmpipe's pow and normalize approximations: 2 levels. Per vertex (``gouraud``, the moving
    view; the side's colour picked per triangle) on a 2 cm grid: the colour is interpolated linearly between
    vertices; the view direction turns by < 0.015 rad across a cell at 1.6 m, and the colour's second
    derivative in it is a few levels per rad^2, so interpolation adds far less than a level: 2 levels too."""
    from render.material import Material, MeshItem

    ctx, painter = gl
    v, t = _grid(60 if gouraud else 8, 1.2)
    rot = np.array([[1.0, 0.0, 0.0], [0.0, 0.0, -1.0], [0.0, 1.0, 0.0]])   # the XZ sheet stood up, normal +Z
    v = (v @ rot.T + [0.0, 1.0, 0.0]).astype(np.float32)
    mat = Material.fabric("#6f8fb0")
    cam = Camera(position=(0.35, 1.25, 1.6 * side), target=(0.0, 1.0, 0.0))
    img = _draw(gl, [MeshItem(v, t, mat, name="sheet")], cam, gouraud=gouraud)
    d = _rays(cam)
    o = np.asarray(cam.position)
    s = (0.0 - o[2]) / d[..., 2]                       # ray hits z = 0
    p = o + s[..., None] * d
    inside = (np.abs(p[..., 0]) < 0.58) & (np.abs(p[..., 1] - 1.0) < 0.58)   # 2 cm inside the 0.6 m half-side
    n = np.broadcast_to(np.array([0.0, 0.0, side]), p.shape)
    ref = _reference(painter, mat, cam, p, n)
    assert inside.sum() > 0.3 * W * H
    err = np.abs(img - ref)[inside]
    assert err.max() <= 2.0, f"max {err.max():.2f} levels, mean {err.mean():.3f}"
    outside = (np.abs(p[..., 0]) > 0.62) | (np.abs(p[..., 1] - 1.0) > 0.62)
    assert np.all(np.abs(img[outside] - np.array([243, 242, 240])) <= 1), "the backdrop is #f3f2f0"


@pytest.mark.parametrize("per_vertex", [True, False])
def test_sphere_per_vertex_and_per_pixel(gl, per_vertex):
    """A closed icosphere (10,242 vertices: back faces culled, lit per vertex when ``per_vertex``) against the
    model with the analytic sphere normal at each pixel's ray hit. Per-vertex colours are interpolated
    linearly: the error is at most h^2 / 8 max|f''| with h ~ 0.035 rad (the edge angle, 63.4 deg / 2^5) and
    |f''| of a few levels per rad^2 for this rough fabric (no sharp highlight): well below one level; per pixel
    the interpolated normal is off by ~h^2 / 8 rad. Silhouette pixels (within 3 px of the edge: polygonal
    outline) are left out. Tolerance 2 levels, as for the plane."""
    import trimesh

    from render.material import Material, MeshItem

    ctx, painter = gl
    m = trimesh.creation.icosphere(subdivisions=5, radius=0.5)
    c = np.array([0.0, 1.0, 0.0])
    v = (np.asarray(m.vertices) + c).astype(np.float32)
    mat = Material.fabric("#b07a5a")
    cam = Camera(position=(0.8, 1.6, 2.4), target=tuple(c))
    img = _draw(gl, [MeshItem(v, np.asarray(m.faces, np.int32), mat, name="ball")], cam, per_vertex=per_vertex)
    assert painter._meshes["0:ball"].closed
    d = _rays(cam)
    o = np.asarray(cam.position)
    oc = o - c
    b = np.sum(d * oc, axis=-1)
    disc = b * b - (oc @ oc - 0.25)
    hit = disc > 0
    s = -b - np.sqrt(np.maximum(disc, 0.0))
    p = o + s[..., None] * d
    n = (p - c) / 0.5
    ref = _reference(painter, mat, cam, p, n)
    # interior: the ray passes 3 px (in angle) inside the silhouette
    px_angle = 2.0 * math.tan(0.5 * cam.fov(W / H)[1]) / H
    miss = np.sqrt(np.maximum(oc @ oc - b * b, 0.0))          # ray's closest distance to the centre
    interior = hit & (miss < 0.5 - 3.0 * px_angle * np.linalg.norm(oc))
    assert interior.sum() > 0.1 * W * H
    err = np.abs(img - ref)[interior]
    assert err.max() <= 2.0, f"max {err.max():.2f} levels, mean {err.mean():.3f}"


def test_key_shadow_per_vertex(gl):
    """A 0.2 m square 0.3 m above a finely divided floor (1 cm cells): floor vertices inside the square's
    shadow (the square moved along -key_dir by 0.3 / key_dir.y) are dark, those outside it lit. Margin 1.5 cm
    on either side of the shadow's outline: the 3 x 3 PCF taps, the 1.5-texel normal offset and the bias span a
    few shadow-map texels (2 r / 1024 ~ 1.5 mm here) plus one floor cell."""
    from render.material import Material, MeshItem

    ctx, painter = gl
    fv, ft = _grid(100, 1.0)
    ov, ot = _grid(2, 0.2)
    ov = ov + np.float32([0.0, 0.3, 0.0])
    cam = Camera(position=(0.0, 2.0, 1.5), target=(0.0, 0.0, 0.0))
    items = [MeshItem(fv, ft, Material.fabric("#cccccc"), name="floor"),
             MeshItem(ov, ot, Material.fabric("#444444"), name="card")]
    img = _draw(gl, items, cam, shadows=True)
    key = np.asarray(painter.lights.key_dir)
    with ctx:
        vis = np.frombuffer(painter._meshes["0:floor"].vis.read(), np.float32)
    shift = -key[[0, 2]] * 0.3 / key[1]                    # where the card's centre casts its shadow [m]
    rel = np.abs(fv[:, [0, 2]] - shift)
    inside = np.all(rel < 0.1 - 0.015, axis=1)
    outside = np.any(rel > 0.1 + 0.015, axis=1)
    assert inside.sum() > 100
    assert vis[inside].max() <= 0.01, vis[inside].max()
    assert vis[outside].min() >= 0.99, vis[outside].min()
    assert painter.frame_info["shadow_map"] == "drawn"
    # and the image: a shadowed floor point is as dark as the model says with vis = 0
    p = np.array([shift[0], 0.0, shift[1]])
    vp = cam.projection_matrix(W / H, *_near_far(items, cam)) @ cam.view_matrix()
    q = vp @ np.r_[p, 1.0]
    col, row = int((q[0] / q[3] + 1) * 0.5 * W), int((q[1] / q[3] + 1) * 0.5 * H)
    ref = _reference(painter, items[0].material, cam, p, np.array([0.0, 1.0, 0.0]), vis=0.0)
    seen = img[row, col]
    # the card may hide that point from this camera: then the pixel is the card's, not the floor's
    d = _rays(cam)[row, col]
    t_card = (0.3 - cam.position[1]) / d[1]
    hit = np.asarray(cam.position) + t_card * d
    hidden_by_card = abs(hit[0]) < 0.1 and abs(hit[2]) < 0.1
    if not hidden_by_card:
        assert np.abs(seen - ref).max() <= 2.0, (seen, ref)


def _near_far(items, camera):
    lo = np.min([it.vertices.min(axis=0) for it in items], axis=0)
    hi = np.max([it.vertices.max(axis=0) for it in items], axis=0)
    center, radius = 0.5 * (lo + hi), max(0.5 * float(np.linalg.norm(hi - lo)), 1e-3)
    dist = float(np.linalg.norm(np.subtract(camera.position, center)))
    return max(0.02 * dist, dist - 2.5 * radius, 1e-3), dist + 5.0 * radius


def test_msaa_changes_edges_only_and_caches(gl):
    """4x MSAA (the still view) against 1 sample (the moving view): without sample shading the fragment
    shader runs once per pixel, so the images differ on silhouettes and (nearly) nowhere else. And what the
    painter keeps: the shadow map is reused while only the camera moves, redrawn for a new vertex array; the static avatar's buffers are
    not re-uploaded (their content version stays)."""
    import trimesh

    from render.material import Material, MeshItem

    ctx, painter = gl
    m = trimesh.creation.icosphere(subdivisions=3, radius=0.3)
    body = MeshItem(np.asarray(m.vertices, np.float32) + np.float32([0, 1, 0]), np.asarray(m.faces, np.int32),
                    Material.skin(), name="avatar")
    sv, st = _grid(6, 0.8)
    sheet = MeshItem(sv + np.float32([0.0, 0.62, 0.0]), st, Material.fabric("#557799"), name="garment")
    cam = Camera(position=(0.5, 1.8, 2.0), target=(0.0, 0.9, 0.0))
    one = _draw(gl, [sheet, body], cam, samples=1, shadows=True)
    four = _draw(gl, [sheet, body], cam, samples=4, shadows=True)
    assert painter.frame_info == {"samples": 4, "shadow_map": "reused"}
    # silhouettes (against the backdrop and between meshes): where the 1-sample image jumps by more than the
    # smooth shading changes between neighbouring pixels (< 6 levels here), within 1 px
    edge = np.zeros(one.shape[:2], bool)
    for dr in (-1, 0, 1):
        for dc in (-1, 0, 1):
            edge |= np.abs(one - np.roll(np.roll(one, dr, 0), dc, 1)).max(axis=2) > 6
    diff = np.any(one != four, axis=2)
    assert (diff & edge).sum() > 0.3 * edge.sum(), "MSAA smooths the silhouettes"
    # inside a surface the shader runs at the pixel centre either way; llvmpipe evaluates the pixels that
    # internal triangle edges cross at the sample positions (0.375 px off centre), which shifts the
    # interpolated colour where it changes fast (the shadow's edge): few pixels, on average < 0.1 level
    inner = np.abs(one - four).max(axis=2)[~edge]
    assert (inner > 0).mean() < 0.02 and inner.mean() < 0.1, (np.sum(inner > 0), inner.mean())
    version = painter._meshes["1:avatar"].version
    _draw(gl, [sheet, body], Camera(position=(-1.5, 1.2, 1.0), target=(0.0, 0.9, 0.0)), shadows=True)
    assert painter.frame_info["shadow_map"] == "reused", "the key is fixed in the world: orbiting keeps the map"
    moved = MeshItem(sheet.vertices + np.float32([0.0, 0.01, 0.0]), st, sheet.material, name="garment")
    _draw(gl, [moved, body], cam, shadows=True)
    assert painter.frame_info["shadow_map"] == "drawn"
    assert painter._meshes["1:avatar"].version == version, "the avatar's buffers were not re-uploaded"
