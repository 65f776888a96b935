"""The preview window (render.preview) under Xvfb: driven through its command interface.

Needs Debian's ``xvfb`` (``apt-get install xvfb``); skipped, saying so, only when Xvfb is absent.
The window draws with Mesa llvmpipe; the simulation runs in the preview's worker process (Warp, CPU).
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parent.parent
SCENE = ROOT / "scenes" / "tshirt.toml"
# A guard against a hung window, not a speed bound: a script always ends with "quit", and one that has not
# ended after this long is reported as an error by PreviewApp.run (speed is measured in benchmarks/preview.py).
HANG_GUARD_S = 900.0
BACKGROUND = np.array([243, 242, 240])   # RenderSettings' default backdrop #f3f2f0 (sRGB)


# ---------------------------------------------------------------------------------------------- pure parts
def test_principal_stretches_closed_form():
    """F = R diag(1.1, 0.95) on a rest triangle: principal stretches are exactly (1.1, 0.95) for any
    rotation R (singular values are rotation invariant); float64 round-off only (1e-12)."""
    from render.preview.views import principal_stretches, vertex_stretch

    rest = np.array([[0.0, 0.0], [0.03, 0.0], [0.01, 0.04]])
    a = np.radians(30.0)
    r = np.array([[np.cos(a), 0.0, np.sin(a)], [0.0, 1.0, 0.0], [-np.sin(a), 0.0, np.cos(a)]])
    flat = np.c_[rest[:, 0] * 1.1, rest[:, 1] * 0.95, np.zeros(3)]
    x = flat @ r.T + np.array([0.2, 1.0, -0.1])
    s = principal_stretches(x, rest, np.array([[0, 1, 2]]))
    np.testing.assert_allclose(s[0], [1.1, 0.95], atol=1e-12)
    # per vertex: every vertex touches only this triangle, so each carries its stretch 1.1 - 1
    np.testing.assert_allclose(vertex_stretch(x, rest, np.array([[0, 1, 2]])), 0.1, atol=1e-6)


def test_cluster_proxy_stays_on_the_mesh():
    """The moving-camera avatar proxy: each proxy vertex is the mean of the vertices in one cubic cell, so it lies
    inside that cell (within the cell diagonal, sqrt(3) * cell, of every member); it has fewer triangles, none
    degenerate; and it follows a rigid move of the mesh exactly (a mean commutes with translation)."""
    import trimesh

    from render.preview.views import ClusterProxy

    m = trimesh.creation.icosphere(subdivisions=5, radius=0.3)
    v, t = np.asarray(m.vertices), np.asarray(m.faces)
    p = ClusterProxy(v, t, cell=0.02)
    x = p.positions(v)
    assert len(p.triangles) < 0.5 * len(t)
    assert np.all(np.linalg.norm(x[p.group] - v, axis=1) <= np.sqrt(3) * 0.02 + 1e-9)
    tri = p.triangles
    assert np.all((tri[:, 0] != tri[:, 1]) & (tri[:, 1] != tri[:, 2]) & (tri[:, 0] != tri[:, 2]))
    np.testing.assert_allclose(p.positions(v + [0.1, -0.2, 0.3]), x + np.float32([0.1, -0.2, 0.3]), atol=1e-6)


def test_frame_channel_whole_frames_only():
    """The sequence lock: a reader gets the newest whole frame; a slot being rewritten is refused."""
    from render.preview.channel import FrameChannel

    ch = FrameChannel.create(5, 2, generation=1)
    try:
        reader = FrameChannel.attach(ch.name, 5, 2)
        assert reader.read() is None                       # nothing published yet
        for k in range(1, 4):
            ch.publish(k, np.full((5, 3), k, np.float32), np.zeros((2, 3), np.float32), None, step_ms=2.0 * k)
        fr = reader.read()
        assert (fr.seq, fr.frame, fr.step_ms) == (3, 3, 6.0)
        assert np.all(fr.positions == 3) and fr.penetration is None
        # frame 4 published (seq 4, slot 0); the writer has begun seq 6 (writing = 6), which reuses slot 0:
        # the reader must refuse slot 0 (it may be half overwritten) rather than return a torn frame
        ch.publish(4, np.full((5, 3), 4, np.float32), np.zeros((2, 3), np.float32), None, step_ms=1.0)
        ch._header[1] = 6
        assert reader.read(retries=2) is None
        ch._header[1] = 4                                   # the writer had not started after all: whole again
        fr = reader.read()
        assert fr.seq == 4 and np.all(fr.positions == 4)
        reader.close()
    finally:
        ch.close()


def test_orbit_camera_frames_the_box():
    """F (frame the garment): every corner of the box projects inside the image shrunk by the margin
    (fit_distance's bound is exact for the farthest corner: one lies on the margin, within 1e-9)."""
    from render.preview.camera import OrbitCamera

    lo, hi = np.array([-0.3, 0.9, -0.15]), np.array([0.35, 1.5, 0.2])
    for az, el, aspect in ((30.0, 10.0, 16 / 9), (200.0, -20.0, 0.7)):
        cam = OrbitCamera()
        cam.azimuth, cam.elevation = az, el
        cam.frame(lo, hi, aspect, margin=0.1)
        c = cam.camera()
        vp = c.projection_matrix(aspect, 0.01, 100.0) @ c.view_matrix()
        corners = np.array([[x, y, z] for x in (lo[0], hi[0]) for y in (lo[1], hi[1]) for z in (lo[2], hi[2])])
        p = np.c_[corners, np.ones(8)] @ vp.T
        ndc = np.abs(p[:, :2] / p[:, 3:4])
        assert ndc.max() <= 0.9 + 1e-9 and ndc.max() >= 0.9 - 1e-9
        # orbiting keeps the target and the distance; zooming in by one notch scales the distance by 0.9
        d = cam.distance
        cam.orbit(100, -40)
        cam.zoom(1)
        assert np.isclose(cam.distance, 0.9 * d) and np.allclose(cam.target, 0.5 * (lo + hi))


def test_headless_preview(tmp_path):
    """The headless window (EGL, no display: the GPU machines' mode) draws the scene, saves the 3D view and
    the whole window (the window is the 3D view with the panels on top: identical in the middle, where no
    panel is), and turns bad commands into reported errors instead of exceptions."""
    import imageio.v3 as iio

    from render.preview import PreviewApp

    view, window = tmp_path / "view.png", tmp_path / "window.png"
    with PreviewApp(SCENE, level=0, headless=True, size=(640, 400)) as app:
        app.run(script=["step 1", "wait_frames 1", "camera front", f"screenshot {view} --no-ui", f"screenshot {window}",
                        "view nonsense", "strain_range -1", "quit"], max_seconds=HANG_GUARD_S)
        a, b = iio.imread(view), iio.imread(window)
        assert a.shape == b.shape == (400, 640, 3)
        assert (~_background(a)).mean() > 0.2, "the garment and the body fill the front view"
        mid = (slice(260, 395), slice(285, 345))          # between and below the panels (at 640 x 400)
        assert np.array_equal(a[mid], b[mid])
        assert np.array_equal(a, app.read_image()), "read_image gives what the screenshot saved"
        text = " | ".join(app.errors)
        assert "unknown view 'nonsense'" in text and "strain_range must be > 0" in text
        # a moving view (camera dragged) is drawn straight into the window, 1 sample, lit per vertex; the cached
        # 3D image is redrawn (still: 4x MSAA, garment lit per pixel) only when asked for. Both show the same
        # view: they differ on silhouettes (MSAA) and by a few levels inside the garment's triangles (Gouraud)
        import time

        app.command("orbit 60 0")
        app._last_3d = time.perf_counter()      # as if the previous redraw had just happened (a drag going on)
        assert app.draw() and not app._scene_valid
        moving = app.read_image(ui=True)[mid]
        still = app.read_image()[mid]
        assert app._scene_valid
        d = np.abs(moving.astype(int) - still.astype(int)).max(axis=2)
        assert d.mean() < 1.0 and (d > 10).mean() < 0.02, (d.mean(), (d > 10).mean())
        assert not np.array_equal(still, a[mid]), "the orbit turned the view"
    with PreviewApp(None, headless=True, size=(320, 200)) as app:
        app.run(script=["level 1", "sync", "quit"], max_seconds=HANG_GUARD_S)
        assert any("no scene is loaded" in m for m in app.errors), app.errors   # the worker's answer


# ---------------------------------------------------------------------------------------------- window
@pytest.fixture(scope="module")
def xvfb():
    exe = shutil.which("Xvfb")
    if exe is None:
        pytest.skip("Xvfb is not installed (Debian: apt-get install xvfb); the preview test needs a display")
    r, w = os.pipe()
    proc = subprocess.Popen([exe, "-displayfd", str(w), "-screen", "0", "1280x1024x24", "-nolisten", "tcp", "-noreset"],
                            pass_fds=(w,), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    os.close(w)
    with os.fdopen(r) as f:
        number = f.readline().strip()
    if not number:
        proc.kill()
        pytest.fail("Xvfb started but reported no display number")
    old = os.environ.get("DISPLAY")
    os.environ["DISPLAY"] = f":{number}"
    yield os.environ["DISPLAY"]
    if old is None:
        os.environ.pop("DISPLAY", None)
    else:
        os.environ["DISPLAY"] = old
    proc.send_signal(signal.SIGTERM)
    proc.wait(10)


def _project(app, x):
    """Pixel (col, row) of world points x (N, 3) in the app's 3D view, and which lie inside it."""
    w, h = app.fb_size
    cam = app.orbit.camera()
    vp = cam.projection_matrix(w / h, 0.05, 50.0) @ cam.view_matrix()
    p = np.c_[x, np.ones(len(x))] @ vp.T
    ndc = p[:, :3] / p[:, 3:4]
    col = ((ndc[:, 0] + 1) * 0.5 * w).astype(int)
    row = ((1 - ndc[:, 1]) * 0.5 * h).astype(int)
    inside = (col >= 0) & (col < w) & (row >= 0) & (row < h) & (p[:, 3] > 0)
    return col, row, inside


def _background(img):
    """Pixels within 6 levels of the backdrop (the backdrop is a flat clear colour; 6 covers 8-bit rounding)."""
    return np.abs(img.astype(int) - BACKGROUND).max(axis=2) <= 6


def test_preview_window(xvfb, tmp_path):
    """Open the T-shirt at the coarsest level, play, pause, switch level, toggle the strain view; check
    the screenshots and the frame counter."""
    import imageio.v3 as iio

    from render.preview import PreviewApp, View

    with PreviewApp(SCENE, level=0, size=(640, 400), max_fps=30) as app:
        # --- play: the displayed frame advances
        assert app.run(script=["play", "wait_frames 2", "record a", "wait_frames 2", "record b",
                               "pause", "sync", "record c", "wait 1.5", "record d", "quit"], max_seconds=HANG_GUARD_S) == 0, app.errors
        a, b, c, d = (app.records[k] for k in "abcd")
        assert a["playing"] and b["displayed_frame"] >= a["displayed_frame"] + 2
        assert b["sim_frame"] >= 4
        # --- paused: the worker confirmed the pause (sync), and 1.5 s later nothing moved
        assert not c["playing"] and not d["playing"]
        assert d["displayed_frame"] == c["displayed_frame"] == c["sim_frame"] == d["sim_frame"]
        assert d["frames_received"] == c["frames_received"]
        # --- scrub back through the frames kept in memory, then back to the newest
        app.run(script=["scrub 0", "record s0", "scrub_by 1", "record s1", "live", "record live", "quit"], max_seconds=HANG_GUARD_S)
        first = app.topo.history[0][0]
        assert app.records["s0"]["displayed_frame"] == first and app.records["s1"]["displayed_frame"] == first + 1
        assert app.records["live"]["displayed_frame"] == d["sim_frame"]
        # --- a fabric preset and one parameter change in the running simulation (no rebuild: same frame)
        app.run(script=["fabric denim", "fabric_param bend_warp 2e-5", "sync", "record fab", "quit"], max_seconds=HANG_GUARD_S)
        assert not app.errors, app.errors
        assert app.topo.info["fabrics"][0]["name"] == "denim" and app.topo.info["fabrics"][0]["bend_warp"] == 2e-5
        assert app.records["fab"]["sim_frame"] == d["sim_frame"]
        assert app.records["fab"]["history"] == d["history"], "a rebuild in place keeps the frames for scrubbing"

        # --- shaded screenshot (atomic PNG): the garment is visible
        shaded_path = tmp_path / "shaded.png"
        strain_path = tmp_path / "strain.png"
        ui_path = tmp_path / "window.png"
        app.run(script=["camera front", f"screenshot {shaded_path} --no-ui", f"screenshot {ui_path}",
                        "view strain", f"screenshot {strain_path} --no-ui", "quit"], max_seconds=HANG_GUARD_S)
        shaded, strain = iio.imread(shaded_path), iio.imread(strain_path)
        assert shaded.shape == (400, 640, 3) and iio.imread(ui_path).shape == (400, 640, 3)
        assert not list(tmp_path.glob(".*tmp*")), "screenshots are written to a temporary name and renamed"
        from render.sources import _close_seams

        x = _close_seams(app.topo.history[-1][1], app.topo.seams)   # as drawn: sewn pairs at their midpoint
        col, row, inside = _project(app, x)
        assert inside.mean() > 0.95, "the front view frames the garment"
        # every garment vertex projects onto a drawn pixel (garment or the body in front of it); outline
        # vertices sit on the silhouette, so a pixel counts when it or a neighbour (1 px: rounding) is drawn
        drawn = ~_background(shaded)
        near = drawn.copy()
        for dr in (-1, 0, 1):
            for dc in (-1, 0, 1):
                near |= np.roll(np.roll(drawn, dr, axis=0), dc, axis=1)
        covered = near[row[inside], col[inside]]
        assert covered.mean() > 0.97, f"only {covered.mean():.1%} of garment vertices land on drawn pixels"
        # --- the strain view recolours the garment (and only it): pixels that change are garment pixels
        changed = np.abs(strain.astype(int) - shaded.astype(int)).max(axis=2) > 30
        assert changed.mean() > 0.03, f"strain view differs from shaded on {changed.mean():.2%} of the image"
        assert changed[row[inside], col[inside]].mean() > 0.5
        assert app.view is View.STRAIN

        # --- switch level 0 -> 1: positions carried over by prolongation (convex combinations of the coarse
        # vertices inside each panel, so the fine mesh stays inside the coarse bounding box up to boundary
        # extrapolation: slightly negative weights on curved outlines, < 5 mm at a 40 mm coarse edge)
        coarse = app.topo.history[-1][1]
        n0 = app.topo.info["n"]
        assert app.run(script=["level 1", "wait_level 1", "record e", "quit"], max_seconds=HANG_GUARD_S) == 0, app.errors
        e = app.records["e"]
        fine = app.topo.history[0][1]
        assert e["level"] == 1 and e["vertices"] > 2 * n0
        assert np.all(fine.min(axis=0) >= coarse.min(axis=0) - 5e-3)
        assert np.all(fine.max(axis=0) <= coarse.max(axis=0) + 5e-3)

        # --- a bad scene file: an error in the window and the log; the preview keeps running
        bad = tmp_path / "bad.toml"
        bad.write_text("[scene]\nname = 'bad'\n[[garments]]\nname = 'x'\nfabric = 'unobtainium'\n")
        app.errors.clear()
        app.run(script=[f"load {bad}", "sync", "record f", "quit"], max_seconds=HANG_GUARD_S)
        assert any("bad.toml" in m for m in app.errors), app.errors
        assert app.records["f"]["level"] == 1 and app.sim.alive

        # --- a key goes through the same command path: V cycles to the next view
        import glfw

        app.errors.clear()
        app._on_key(app.window, glfw.KEY_V, 0, glfw.PRESS, 0)
        assert app.view is View.PENETRATION

        # --- reset: back to frame 0 (the new fabric and the level stay)
        app.run(script=["reset", "sync", "record r", "quit"], max_seconds=HANG_GUARD_S)
        assert app.records["r"]["displayed_frame"] == 0 and app.records["r"]["history"] == 1
        assert app.topo.info["fabrics"][0]["name"] == "denim" and app.records["r"]["level"] == 1
