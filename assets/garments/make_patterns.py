"""Writes the shipped pattern files (tshirt, circle_skirt, straight_skirt, trousers, cape) of this folder.

The numbers come from the default avatar (clothsim/avatar): height 1.70 m, chest 0.92, waist 0.74,
hips 0.98 (circumferences), inseam 0.78; feet on y = 0, body faces +z, x to the body's left, A-pose.
Heights: neck base 1.45, shoulder 1.40, chest 1.22, waist 1.05, hip 0.88, crotch 0.78, knee 0.48.
Every garment has ease (is larger than the body) and starts a few centimetres outside it.

    .venv/bin/python assets/garments/make_patterns.py      # rewrites the .toml files next to it
"""

from __future__ import annotations

import math
from pathlib import Path

HERE = Path(__file__).resolve().parent


def edge(name, *points, kind=None):
    e = {"name": name, "points": [[round(float(x), 6), round(float(y), 6)] for x, y in points]}
    if kind:
        e["kind"] = kind
    return e


def swap_side(name):
    return name.replace("left", "@").replace("right", "left").replace("@", "right")


def mirrored(edges, rename=swap_side):
    """The outline mirrored x -> -x, still counter-clockwise (edges and their points reversed)."""
    out = []
    for e in reversed(edges):
        pts = [(-x, y) for x, y in reversed(e["points"])]
        out.append(edge(rename(e["name"]), *pts, kind=e.get("kind")))
    return out


def renamed(edges, rename=swap_side):
    return [dict(e, name=rename(e["name"])) for e in edges]


# ------------------------------------------------------------------------------------------------ garments
def tshirt():
    """Front and back cut in one with short sleeves along the A-pose arms (dolman/kimono T-shirt).

    Panel space: hem at y = 0 (world y 0.72), x to the body's left for the front. Half width 0.26 m
    (garment chest 1.04 m for a 0.92 m chest); neck points ±0.08 at y 0.75 (world 1.47, 2 cm above the
    neck base); shoulder point 0.21 m out at y 0.73 (world 1.45; the mannequin's shoulder top is at
    1.41-1.43 there); sleeves 0.32 m along the top, 0.16 m wide (0.32 m sleeve circumference), at 50°
    below horizontal like the mannequin's arms (shoulder 0.20, 1.40 to wrist 0.58, 0.95), so the
    sewn sleeve top runs 4-6 cm above the arm; the underarm edge is 5 cm long (>= the 40 mm level).
    """
    a = math.radians(50.0)
    d = (math.cos(a), -math.sin(a))           # along the arm, outwards and down
    n = (-math.sin(a), -math.cos(a))          # across the sleeve, from its top edge to its underarm
    S = (0.21, 0.73)
    U = (S[0] + 0.32 * d[0], S[1] + 0.32 * d[1])
    L = (U[0] + 0.16 * n[0], U[1] + 0.16 * n[1])
    t = (L[0] - 0.26) / d[0]
    A = (0.26, L[1] - t * d[1])
    N = (0.08, 0.75)

    def outline(neck_ctrl_y):
        half = [edge("side_left", (0.26, 0.0), A), edge("underarm_left", A, L), edge("cuff_left", L, U),
                edge("sleeve_top_left", U, S), edge("shoulder_left", S, N)]
        right = mirrored(half)
        return ([edge("hem", (-0.26, 0.0), (0.26, 0.0))] + half
                + [edge("neck", N, (0.0, neck_ctrl_y), (-N[0], N[1]))] + right)

    front = {"name": "front", "grain": 90.0, "placement": {"translation": [0.0, 0.72, 0.17]},
             "edges": outline(0.55)}
    back = {"name": "back", "grain": 90.0,
            "placement": {"rotation": [0.0, 180.0, 0.0], "translation": [0.0, 0.72, -0.17]},
            "edges": renamed(outline(0.71))}
    seams = [{"a": f"front.{n}_{s}", "b": f"back.{n}_{s}", "orientation": "reversed"}
             for s in ("left", "right") for n in ("side", "underarm", "sleeve_top", "shoulder")]
    return {"name": "tshirt", "description": "Short-sleeved T-shirt, front and back cut with the sleeves (kimono "
            "cut) for the A-pose; jersey.", "fabric": "jersey", "panels": [front, back], "seams": seams}


def circle_skirt():
    """Full circle skirt: two half annuli, waist radius 0.155 m (pinned ring around the 0.74 m waist,
    1 cm clear of the mannequin's sides), 0.55 m long; hung as a 50° flare from the waist (y 1.05)."""
    r, R = 0.155, 0.705
    front = [edge("hem", (-R, 0), (0, -R), (R, 0), kind="arc"), edge("side_left", (R, 0), (r, 0)),
             edge("waist", (r, 0), (0, -r), (-r, 0), kind="arc"), edge("side_right", (-r, 0), (-R, 0))]
    back = [edge("hem", (R, 0), (0, R), (-R, 0), kind="arc"), edge("side_right", (-R, 0), (-r, 0)),
            edge("waist", (-r, 0), (0, r), (r, 0), kind="arc"), edge("side_left", (r, 0), (R, 0))]
    place = {"rotation": [-90.0, 0.0, 0.0], "translation": [0.0, 1.05, 0.0],
             "wrap": {"type": "cone", "center": [0.0, 0.0], "half_angle": 50.0, "inner_radius": r}}
    panels = [{"name": "front", "grain": 90.0, "placement": place, "edges": front, "pin_edges": ["waist"]},
              {"name": "back", "grain": 90.0, "placement": place, "edges": back, "pin_edges": ["waist"]}]
    seams = [{"a": f"front.side_{s}", "b": f"back.side_{s}", "orientation": "reversed"} for s in ("left", "right")]
    return {"name": "circle_skirt", "description": "Full circle skirt, 0.55 m long, waist pinned; cotton.",
            "fabric": "cotton", "panels": panels, "seams": seams}


def straight_skirt():
    """Straight (pencil) skirt, waist to knee: front and back, 0.52 m wide at the hip (garment hip 1.04 m
    for 0.98 m hips), shaped to 0.38 m at the waist (0.76 m for a 0.74 m waist); rolled on a 0.22 m
    cylinder around the body axis. Panel space: hem at y = 0 (world 0.50)."""
    def outline():
        return [edge("hem", (-0.26, 0.0), (0.26, 0.0)), edge("side_left", (0.26, 0.0), (0.26, 0.38)),
                edge("hip_left", (0.26, 0.38), (0.26, 0.50), (0.19, 0.55)), edge("waist", (0.19, 0.55), (-0.19, 0.55)),
                edge("hip_right", (-0.19, 0.55), (-0.26, 0.50), (-0.26, 0.38)),
                edge("side_right", (-0.26, 0.38), (-0.26, 0.0))]

    wrap = {"type": "cylinder", "axis": "y", "radius": 0.22}
    front = {"name": "front", "placement": {"translation": [0.0, 0.50, 0.22], "wrap": wrap}, "edges": outline()}
    back = {"name": "back", "placement": {"rotation": [0.0, 180.0, 0.0], "translation": [0.0, 0.50, -0.22],
                                          "wrap": wrap}, "edges": renamed(outline())}
    seams = [{"a": f"front.{n}_{s}", "b": f"back.{n}_{s}", "orientation": "reversed"}
             for s in ("left", "right") for n in ("side", "hip")]
    return {"name": "straight_skirt", "description": "Straight skirt, waist to knee, front and back; cotton.",
            "fabric": "cotton", "panels": [front, back], "seams": seams}


def trousers():
    """Trousers: four panels (front/back, left/right leg). Panel space = world x, y of the left front
    before a 5 cm shift outwards (so the two legs' panels do not overlap at the crotch). Hip 0.26 m
    per panel (1.04 m garment hip), waist 0.19 (0.76 m), leg 0.31 m per panel at the crotch (0.62 m
    thigh), 0.22 at the hem (0.44 m; centred 3 cm outside the ankle, its inner corner 4 cm inside it,
    so the inseam closes between the legs), crotch at y 0.78, hem at 0.10 (ankle length; lower, the
    flat front panels would start on the toes)."""
    fl = [edge("hem", (-0.04, 0.10), (0.18, 0.10)), edge("side", (0.18, 0.10), (0.26, 0.88)),
          edge("hip", (0.26, 0.88), (0.26, 0.98), (0.19, 1.05)), edge("waist", (0.19, 1.05), (0.0, 1.05)),
          edge("center", (0.0, 1.05), (0.0, 0.93)), edge("crotch", (0.0, 0.93), (0.0, 0.80), (-0.05, 0.78)),
          edge("inseam", (-0.05, 0.78), (-0.04, 0.10))]
    same = (lambda n: n)
    panels = [
        {"name": "front_left", "placement": {"translation": [0.05, 0.0, 0.17]}, "edges": fl},
        {"name": "front_right", "placement": {"translation": [-0.05, 0.0, 0.17]}, "edges": mirrored(fl, same)},
        {"name": "back_left", "placement": {"rotation": [0.0, 180.0, 0.0], "translation": [0.05, 0.0, -0.17]},
         "edges": mirrored(fl, same)},
        {"name": "back_right", "placement": {"rotation": [0.0, 180.0, 0.0], "translation": [-0.05, 0.0, -0.17]},
         "edges": fl},
    ]
    seams = []
    for s in ("left", "right"):
        seams += [{"a": f"front_{s}.{n}", "b": f"back_{s}.{n}", "orientation": "reversed"} for n in ("side", "hip", "inseam")]
    for fb in ("front", "back"):
        seams += [{"a": f"{fb}_left.{n}", "b": f"{fb}_right.{n}", "orientation": "reversed"} for n in ("center", "crotch")]
    return {"name": "trousers", "description": "Straight-leg trousers, four panels; denim.", "fabric": "denim",
            "panels": panels, "seams": seams}


def cape():
    """Half-circle cape over the back: a half annulus, neck radius 0.09 m (pinned ring 3 cm around the
    neck at y 1.52), 0.60 m long, hung as a 65° flare so it clears the shoulders and the A-pose arms."""
    r, R = 0.09, 0.69
    edges = [edge("hem", (R, 0), (0, R), (-R, 0), kind="arc"), edge("front_right", (-R, 0), (-r, 0)),
             edge("neck", (-r, 0), (0, r), (r, 0), kind="arc"), edge("front_left", (r, 0), (R, 0))]
    place = {"rotation": [-90.0, 0.0, 0.0], "translation": [0.0, 1.52, 0.0],
             "wrap": {"type": "cone", "center": [0.0, 0.0], "half_angle": 65.0, "inner_radius": r}}
    return {"name": "cape", "description": "Half-circle cape pinned around the neck; polyester.",
            "fabric": "polyester", "panels": [{"name": "cape", "grain": 90.0, "placement": place, "edges": edges,
                                               "pin_edges": ["neck"]}], "seams": []}


# ------------------------------------------------------------------------------------------------ TOML out
def _value(v):
    if isinstance(v, str):
        return '"' + v.replace("\\", "\\\\").replace('"', '\\"') + '"'
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, (int, float)):
        return repr(round(float(v), 6))
    if isinstance(v, list):
        return "[" + ", ".join(_value(x) for x in v) + "]"
    if isinstance(v, dict):
        return "{ " + ", ".join(f"{k} = {_value(x)}" for k, x in v.items()) + " }"
    raise TypeError(type(v))


def to_toml(p) -> str:
    lines = [f"# {p['name']}: written by make_patterns.py (edit that script, then run it). Format: README.md",
             f"name = {_value(p['name'])}", f"description = {_value(p['description'])}", f"fabric = {_value(p['fabric'])}", ""]
    for panel in p["panels"]:
        lines.append("[[panels]]")
        for k, v in panel.items():
            if k not in ("edges", "placement"):
                lines.append(f"{k} = {_value(v)}")
        if "placement" in panel:
            lines.append(f"placement = {_value(panel['placement'])}")
        for e in panel["edges"]:
            lines.append("  [[panels.edges]]")
            lines += [f"  {k} = {_value(v)}" for k, v in e.items()]
        lines.append("")
    for s in p["seams"]:
        lines.append("[[seams]]")
        lines += [f"{k} = {_value(v)}" for k, v in s.items()]
        lines.append("")
    return "\n".join(lines)


def main():
    for make in (tshirt, circle_skirt, straight_skirt, trousers, cape):
        p = make()
        path = HERE / f"{p['name']}.toml"
        tmp = path.with_suffix(".toml.tmp")
        tmp.write_text(to_toml(p))
        tmp.replace(path)
        print(f"wrote {path}")


if __name__ == "__main__":
    main()
