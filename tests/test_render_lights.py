"""Scene lights drive the render (render.lighting.SceneLights); the studio rig stays the default.

Reference: a unit sphere lit by one light and nothing else (no environment, no floor) is lit exactly
where N.L > 0. Seen from far along +Z (a 100 mm lens at 15 radii on 160 px: nearly orthographic; R is ~44 px), the lit
part of the disk is, for a directional light whose direction towards the light makes an angle
theta with the image's left (-X) axis in the X-Z plane, the area fraction (1 + sin theta) / 2
(the illuminated fraction of a sphere at phase angle alpha is (1 + cos alpha) / 2, cos alpha = L.V
= sin theta). For a point light at distance D from the centre on the -X axis the lit cap is
n_x < -R / D: the part of the disk left of x = -R^2 / D.

Tolerance on a lit fraction: 0.03. The boundary (terminator) is ~2R pixels long on a disk of pi R^2
pixels, R ~ 44 px: classifying each boundary pixel wrongly moves the fraction by <= 2/(pi R) ~ 1.5%;
vertex-normal interpolation on an icosphere (subdivision 4: ~2 degrees between vertex normals)
shifts the terminator by <= sin(1 deg) R along it, another ~1%; the finite camera distance (15 R)
sees the sphere up to 1/15 rad short of the limb, under 1%.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
import trimesh

import clothsim as cs
from render import Camera, Material, MeshItem, Renderer, RenderSettings
from render.lighting import SceneLight, SceneLights, StudioRig

R = 0.25
TOL = 0.03


@pytest.fixture(scope="module")
def renderer():
    with Renderer() as r:
        yield r


def _sphere():
    s = trimesh.creation.icosphere(subdivisions=4, radius=R)
    return MeshItem(s.vertices, s.faces, Material(base_color="#b0b0b0", roughness=0.9, name="grey"), name="ball")


CAM = Camera(position=(0.0, 0.0, 15 * R), target=(0.0, 0.0, 0.0), focal_mm=100.0, name="front")
SIZE = dict(width=160, height=160, transparent=True, ground=False)


def _lit_fraction(renderer, lights, **extra):
    img = renderer.render([_sphere()], CAM, RenderSettings(**SIZE, rig=SceneLights(tuple(lights)), **extra))
    mask = img[..., 3] == 255                      # fully covered sphere pixels (edges excluded)
    # N.L > 0. Unlit is exactly 0 (no environment, no other light); PBR Neutral's toe maps a small
    # linear x to 6.25 x^2, so any non-zero level is lit (x > 0.005: N.L > ~1 degree past the terminator)
    lit = img[..., :3].max(axis=-1) > 0
    return (lit & mask).sum() / mask.sum(), img, mask, lit


def _direction_towards_light(theta_deg):
    """Towards the light, angle theta from -X towards +Z (the camera)."""
    t = math.radians(theta_deg)
    return np.array([-math.cos(t), 0.0, math.sin(t)])


@pytest.mark.parametrize("theta", [0.0, 30.0, -30.0])
def test_directional_light_lights_its_side(renderer, theta):
    towards = _direction_towards_light(theta)
    f, img, mask, lit = _lit_fraction(renderer, [SceneLight("directional", 3.0, direction=tuple(-towards))])
    assert abs(f - (1.0 + math.sin(math.radians(theta))) / 2.0) < TOL, (theta, f)
    # the lit side is the left one (the light is on -X)
    cols = np.nonzero(mask.any(axis=0))[0]
    mid = (cols[0] + cols[-1]) // 2
    left = (lit & mask)[:, :mid].sum() / mask[:, :mid].sum()
    right = (lit & mask)[:, mid + 1:].sum() / mask[:, mid + 1:].sum()
    assert left > 0.45 and right < 0.55 and left > right + 0.4, (left, right)


def test_moving_the_light_moves_the_shading(renderer):
    """From the left to the right: the lit side swaps, and the image changes accordingly."""
    f_l, img_l, mask, lit_l = _lit_fraction(renderer, [SceneLight("directional", 3.0, direction=(1.0, 0.0, 0.0))])
    f_r, img_r, _, lit_r = _lit_fraction(renderer, [SceneLight("directional", 3.0, direction=(-1.0, 0.0, 0.0))])
    assert abs(f_l - 0.5) < TOL and abs(f_r - 0.5) < TOL
    # mirror images of each other (the sphere and the camera are symmetric in x): compare lit masks
    agree = (lit_l == lit_r[:, ::-1]) | ~mask
    assert agree.mean() > 0.98, agree.mean()
    assert (lit_l & lit_r & mask).sum() < 0.03 * mask.sum()      # no pixel is lit by both


def test_point_light_lit_cap(renderer):
    """A point light at D = 3R on -X lights the cap n_x < -R/D: the disk left of x = -R/3."""
    D = 3.0 * R
    f, *_ = _lit_fraction(renderer, [SceneLight("point", 20.0, position=(-D, 0.0, 0.0))])
    c = R / D                                          # the cap's edge at x = -c R
    expected = (math.acos(c) - c * math.sqrt(1.0 - c * c)) / math.pi   # circular segment area / disk
    assert abs(f - expected) < TOL, (f, expected)


def test_spot_cone_limits_the_lit_area(renderer):
    """The same position as a spot aimed at the centre with a 10 degree cone: the sphere subtends
    asin(1/3) = 19.5 degrees from there, so only the part within 10 degrees of the axis is lit."""
    D = 3.0 * R
    f_point, *_ = _lit_fraction(renderer, [SceneLight("point", 20.0, position=(-D, 0.0, 0.0))])
    f_spot, img, mask, lit = _lit_fraction(renderer, [SceneLight("spot", 20.0, position=(-D, 0.0, 0.0),
                                                                 direction=(1.0, 0.0, 0.0), outer_cone_deg=10.0)])
    assert 0.0 < f_spot < 0.7 * f_point, (f_spot, f_point)
    # lit rows stay near the axis: the lit pixels' vertical extent is less than the disk's
    rows_lit = np.nonzero((lit & mask).any(axis=1))[0]
    rows_disk = np.nonzero(mask.any(axis=1))[0]
    assert np.ptp(rows_lit) < 0.8 * np.ptp(rows_disk)


def _scene_linear(img):
    """Undo the sRGB encode and the Khronos PBR Neutral tone map below its shoulder (peak < 0.76):
    out = x - 0.04 for x >= 0.08, out = 6.25 x^2 below (the toe)."""
    c = img[..., :3].astype(np.float64) / 255.0
    out = np.where(c <= 0.04045, c / 12.92, ((c + 0.055) / 1.055) ** 2.4)
    return np.where(out >= 0.04, out + 0.04, np.sqrt(out / 6.25)), out


def test_intensity_and_colour_scale_the_image(renderer):
    """Twice the intensity is twice the radiance per pixel (after undoing the tone map); a red
    light leaves green and blue dark. Tolerance 3%: one 8-bit level at the compared pixels'
    darkest (tone-mapped linear >= 0.05, sRGB level >= 63) is < 1.5% of the value, on both images."""
    d = (1.0, 0.0, -1.0)
    _, a, mask, lit = _lit_fraction(renderer, [SceneLight("directional", 1.5, direction=d)])
    _, b, *_ = _lit_fraction(renderer, [SceneLight("directional", 3.0, direction=d)])
    xa, oa = _scene_linear(a)
    xb, ob = _scene_linear(b)
    m = mask & (oa.min(-1) >= 0.05) & (ob.max(-1) < 0.72)
    assert m.sum() > 500, m.sum()
    ratio = xb[m] / xa[m]
    assert abs(np.median(ratio) - 2.0) < 0.06 and np.percentile(np.abs(ratio - 2.0), 90) < 0.1, np.median(ratio)
    _, red, *_ = _lit_fraction(renderer, [SceneLight("directional", 3.0, color=(1.0, 0.0, 0.0), direction=d)])
    rl = _scene_linear(red)[1][mask & lit].mean(axis=0)
    assert rl[0] > 0.05 and rl[1] < 1e-3 and rl[2] < 1e-3, rl


def test_ambient_only_lights_everything_evenly(renderer):
    f, img, mask, lit = _lit_fraction(renderer, [SceneLight("ambient", 0.6)])
    assert f > 0.99
    assert not SceneLights((SceneLight("ambient", 0.6),)).resolve(CAM).shadow


def test_shadow_caster_and_rig_default():
    lights = SceneLights((SceneLight("point", 5.0, position=(0, 1, 0)), SceneLight("directional", 1.0, direction=(0, -1, 0)),
                          SceneLight("directional", 2.0, direction=(1, -1, 0), cast_shadows=True)))
    ls = lights.resolve()
    assert ls.shadow and np.allclose(ls.vec[0, :3], np.array([-1, 1, 0]) / math.sqrt(2)) and ls.vec[0, 3] == 0
    assert ls.count == 3
    assert isinstance(RenderSettings().rig, StudioRig)
    assert isinstance(RenderSettings(rig=[SceneLight("ambient", 1.0)]).rig, SceneLights)


@pytest.mark.parametrize("light, where", [
    (SceneLight("laser", 1.0, direction=(0, -1, 0)), "lights[1].kind"),
    (SceneLight("directional", -1.0, direction=(0, -1, 0)), "lights[1].intensity"),
    (SceneLight("directional", 1.0, direction=(0, 0, 0)), "lights[1].direction"),
    (SceneLight("point", 1.0), "lights[1].position"),
    (SceneLight("directional", 1.0, direction=(0, -1, 0), color=(2, 0, 0)), "lights[1].color"),
    (SceneLight("point", 1.0, position=(0, 1, 0), cast_shadows=True), "lights[1].cast_shadows"),
])
def test_bad_light_names_index_and_key(light, where):
    with pytest.raises(cs.InputError) as e:
        SceneLights((SceneLight("ambient", 0.2), light))
    assert where in str(e.value), str(e.value)


SCENE = """\
[scene]
name = "lit"

[avatar]
file = "body.obj"

[[garments]]
name = "tube"
mesh = "tube.obj"

[[lights]]
name = "left"
kind = "directional"
direction = [1.0, 0.0, 0.0]
intensity = 3.0
{extra}
"""


def _scene_dir(tmp_path, extra=""):
    body = trimesh.creation.icosphere(subdivisions=2, radius=0.2)
    body.export(tmp_path / "body.obj")
    tube = trimesh.creation.cylinder(radius=0.25, height=0.3, sections=16)
    tube.export(tmp_path / "tube.obj")
    p = tmp_path / "scene.toml"
    p.write_text(SCENE.format(extra=extra))
    return p


def test_scene_file_lights_drive_the_render(renderer, tmp_path):
    """A scene file with one light from the left: the loaded lights light the sphere's left half."""
    from clothsim.scene.schema import parse_scene

    scene = parse_scene(_scene_dir(tmp_path))
    lights = SceneLights.from_scene(scene.lights)
    assert lights is not None and lights.lights[0].name == "left"
    img = renderer.render([_sphere()], CAM, RenderSettings(**SIZE, rig=lights))
    mask = img[..., 3] == 255
    lit = img[..., :3].max(axis=-1) > 0
    cols = np.nonzero(mask.any(axis=0))[0]
    mid = (cols[0] + cols[-1]) // 2
    assert (lit & mask)[:, :mid].sum() > 0.95 * mask[:, :mid].sum()
    assert (lit & mask)[:, mid + 1:].sum() < 0.05 * mask[:, mid + 1:].sum()
    assert SceneLights.from_scene(()) is None          # no [[lights]]: the renderer keeps the studio rig


@pytest.mark.parametrize("extra, where, what", [
    ('[[lights]]\nkind = "laser"\n', "lights[1].kind", "expected one of"),
    ('[[lights]]\nkind = "point"\nposition = [0.0, 1.0, 0.0]\nintensity = -2.0\n', "lights[1].intensity", "[0, "),
    ('[[lights]]\nkind = "directional"\ndirection = [0.0, 0.0, 0.0]\n', "lights[1].direction", "non-zero"),
    ('[[lights]]\nkind = "spot"\nposition = [0.0, 1.0, 0.0]\ndirection = [0.0, -1.0, 0.0]\n'
     'inner_cone_deg = 30.0\nouter_cone_deg = 20.0\n', "lights[1].inner_cone_deg", "less than outer_cone_deg"),
    ('[[lights]]\nkind = "point"\nposition = [0.0, 1.0, 0.0]\ncast_shadows = true\n', "lights[1].cast_shadows",
     "only directional"),
])
def test_bad_scene_lights_name_file_index_and_key(tmp_path, extra, where, what):
    from clothsim.scene.schema import parse_scene

    p = _scene_dir(tmp_path, extra)
    with pytest.raises(cs.InputError) as e:
        parse_scene(p)
    msg = str(e.value)
    assert "scene.toml" in msg and where in msg and what in msg, msg
