"""Pattern files: the shipped ones load; bad input is refused with a message naming file, key and expectation.

Reference: assets/garments/README.md (the format). Each bad-input case edits one key of a small valid
pattern and checks that loading raises InputError whose message names the file, the key path and
what was expected.
"""

import copy
import json
import math
import tomllib

import numpy as np
import pytest

from clothsim import garments
from clothsim.errors import InputError


def _square(name, x0=0.0, size=0.2, edges=("bottom", "right", "top", "left")):
    s = size
    pts = [(x0, 0.0), (x0 + s, 0.0), (x0 + s, s), (x0, s)]
    return {"name": name, "edges": [{"name": edges[i], "points": [list(pts[i]), list(pts[(i + 1) % 4])]}
                                    for i in range(4)]}


def _valid():
    return {"name": "two", "fabric": "cotton",
            "panels": [_square("a"), dict(_square("b", x0=0.25), placement={"translation": [0.0, 1.0, 0.1]})],
            "seams": [{"a": "a.right", "b": "b.left", "orientation": "reversed"}]}


def _write(tmp_path, data, name="p.toml"):
    path = tmp_path / name
    path.write_text(json.dumps(data) if name.endswith(".json") else _toml(data))
    return path


def _toml(d):
    """Minimal TOML writer for these test dicts (tables of scalars/lists, arrays of tables)."""
    def val(v):
        if isinstance(v, str):
            return json.dumps(v)
        if isinstance(v, float) and math.isnan(v):
            return "nan"
        if isinstance(v, (int, float)):
            return repr(v)
        if isinstance(v, list):
            return "[" + ", ".join(val(x) for x in v) + "]"
        if isinstance(v, dict):
            return "{ " + ", ".join(f"{k} = {val(x)}" for k, x in v.items()) + " }"
        raise TypeError(v)
    out = [f"{k} = {val(v)}" for k, v in d.items() if not isinstance(v, list) or not v or not isinstance(v[0], dict)]
    for k, v in d.items():
        if isinstance(v, list) and v and isinstance(v[0], dict):
            for item in v:
                out.append(f"[[{k}]]")
                tables = {kk: vv for kk, vv in item.items() if isinstance(vv, list) and vv and isinstance(vv[0], dict)}
                out += [f"{kk} = {val(vv)}" for kk, vv in item.items() if kk not in tables]
                for kk, vv in tables.items():
                    for sub in vv:
                        out.append(f"[[{k}.{kk}]]")
                        out += [f"{a} = {val(b)}" for a, b in sub.items()]
    return "\n".join(out) + "\n"


def _expect_error(tmp_path, data, *needles, name="p.toml"):
    path = _write(tmp_path, data, name)
    with pytest.raises(InputError) as e:
        garments.load_pattern(path)
    msg = str(e.value)
    assert str(path) in msg, msg
    for n in needles:
        assert n in msg, f"{n!r} not in: {msg}"
    return msg


def test_valid_small_pattern_loads_from_toml_and_json(tmp_path):
    for fname in ("p.toml", "p.json"):
        p = garments.load_pattern(_write(tmp_path, _valid(), fname))
        assert [x.name for x in p.panels] == ["a", "b"] and len(p.seams) == 1
        assert p.panels[0].edges[1].length == pytest.approx(0.2, abs=1e-12)


@pytest.mark.parametrize("name", garments.shipped())
def test_shipped_patterns_load(name):
    p = garments.load_shipped(name)
    assert p.name == name and p.panels
    # every seam's edges have lengths within the seam's tolerance (the loader checks it; restated here)
    for s in p.seams:
        la, lb = p.panels[s.a_panel].edges[s.a_edge].length, p.panels[s.b_panel].edges[s.b_edge].length
        assert abs(la - lb) <= s.tolerance


def test_shipped_json_equivalent(tmp_path):
    """The same pattern as JSON gives the same mesh (the format is the same keys in either syntax)."""
    path = garments.shipped_path("trousers")
    data = tomllib.loads(path.read_text())
    jp = garments.load_pattern(_write(tmp_path, data, "trousers.json"))
    a, b = garments.load_pattern(path).mesh(0.04), jp.mesh(0.04)
    assert np.array_equal(a.triangles, b.triangles) and np.allclose(a.vertices, b.vertices, atol=0)


def test_unknown_keys(tmp_path):
    d = _valid()
    d["colour"] = "red"
    _expect_error(tmp_path, d, "colour", "unknown key", "expected one of")
    d = _valid()
    d["panels"][1]["edges"][2]["poins"] = [[0, 0], [1, 1]]
    _expect_error(tmp_path, d, "panels[1] 'b'.edges[2].poins", "unknown key", "points")
    d = _valid()
    d["panels"][1]["placement"]["rotate"] = [0, 90, 0]
    _expect_error(tmp_path, d, "placement.rotate", "rotation")


def test_outline_not_closed(tmp_path):
    d = _valid()
    d["panels"][0]["edges"][2]["points"][1] = [0.0, 0.21]  # top ends 1 cm above the left edge's start
    _expect_error(tmp_path, d, "panels[0] 'a'.edges[2]", "not closed", "closed outline")


def test_seam_lengths_differ(tmp_path):
    d = _valid()
    d["panels"][1] = dict(_square("b", x0=0.25, size=0.25))  # 0.25 m edge sewn to a 0.20 m edge
    _expect_error(tmp_path, d, "seams[0]", "different lengths", "0.2000", "0.2500", "tolerance")
    d["seams"][0]["tolerance"] = 0.06  # within an explicit tolerance it loads
    garments.load_pattern(_write(tmp_path, d))


def test_seam_unknown_panel_or_edge(tmp_path):
    d = _valid()
    d["seams"][0]["b"] = "c.left"
    _expect_error(tmp_path, d, "seams[0].b", "unknown panel 'c'", "a, b")
    d = _valid()
    d["seams"][0]["a"] = "a.middle"
    _expect_error(tmp_path, d, "seams[0].a", "unknown edge 'middle'", "bottom, right, top, left")
    d = _valid()
    d["seams"][0]["a"] = "a.7"
    _expect_error(tmp_path, d, "seams[0].a", "unknown edge '7'")
    d = _valid()
    d["seams"].append({"a": "b.left", "b": "a.top"})
    _expect_error(tmp_path, d, "seams[1].a", "in no other seam")


def test_edge_lengths_must_be_positive(tmp_path):
    d = _valid()
    d["panels"][0]["edges"].insert(1, {"name": "dot", "points": [[0.2, 0.0], [0.2, 0.0]]})
    _expect_error(tmp_path, d, "edges[1].points", "positive length")
    p = garments.load_pattern(_write(tmp_path, _valid()))
    for bad in (-0.01, 0.0, float("nan")):
        with pytest.raises(InputError, match="edge_length must be a positive length"):
            p.mesh(bad)
    with pytest.raises(InputError, match="strictly decreasing"):
        p.hierarchy((0.02, 0.04))


def test_wrong_types_and_values(tmp_path):
    cases = [
        (("panels", 0, "edges", 0, "points"), [[0.0, 0.0]], "2 to 4 points"),
        (("panels", 0, "edges", 0, "points"), [[0.0, "x"], [0.2, 0.0]], "finite number"),
        (("panels", 0, "edges", 0, "points"), [[float("nan"), 0.0], [0.2, 0.0]], "finite number"),
        (("panels", 0, "edges", 0, "kind"), "spline", "one of line, quadratic, cubic, arc"),
        (("panels", 0, "edges", 0, "kind"), "arc", "3 points for a 'arc' edge"),
        (("panels", 0, "fabric"), "velvet", "unknown fabric 'velvet'"),
        (("panels", 1, "placement", "translation"), [0.0, 1.0], "[x, y, z] in metres"),
        (("seams", 0, "orientation"), "backwards", "'same' or 'reversed'"),
        (("panels", 0, "grain"), "warp", "angle in degrees"),
    ]
    for keys, value, needle in cases:
        d = copy.deepcopy(_valid())
        node = d
        for k in keys[:-1]:
            node = node[k]
        node[keys[-1]] = value
        _expect_error(tmp_path, d, needle)


def test_geometry_errors(tmp_path):
    d = _valid()
    d["panels"][0]["edges"] = [{"name": e["name"], "points": e["points"][::-1]} for e in d["panels"][0]["edges"][::-1]]
    _expect_error(tmp_path, d, "clockwise", "counter-clockwise")
    d = _valid()  # a bow tie: the outline crosses itself
    d["panels"][0]["edges"] = [{"name": f"e{i}", "points": [p, q]} for i, (p, q) in
                               enumerate(zip([[0, 0], [0.2, 0.2], [0.2, 0], [0, 0.2]], [[0.2, 0.2], [0.2, 0], [0, 0.2], [0, 0]]))]
    d["seams"] = []
    _expect_error(tmp_path, d, "crosses itself")
    d = _valid()
    d["panels"][0]["edges"][0] = {"name": "bottom", "kind": "arc", "points": [[0, 0], [0.1, 0], [0.2, 0]]}
    _expect_error(tmp_path, d, "collinear")
    d = _valid()
    d["panels"][0]["placement"] = {"wrap": {"type": "cylinder", "radius": 0.05}}  # 0.2 m panel, reach 0.2 > pi*0.05
    _expect_error(tmp_path, d, "wrap.radius", "half a turn")
    d = _valid()
    d["panels"][0]["pin_edges"] = ["waist"]
    _expect_error(tmp_path, d, "pin_edges[0]", "an edge of this panel")


def test_file_errors(tmp_path):
    with pytest.raises(InputError, match="not found"):
        garments.load_pattern(tmp_path / "missing.toml")
    bad = tmp_path / "bad.toml"
    bad.write_text("name = \n")
    with pytest.raises(InputError, match="not valid TOML"):
        garments.load_pattern(bad)
    with pytest.raises(InputError, match="expected one of tshirt"):
        garments.shipped_path("kilt")
