"""The ImGui panels: simulation controls, view, stats, strain legend, errors, help.

Every widget turns into a :meth:`PreviewApp.command` call, so the panels, the keys, scripts and
tests drive the same code.
"""

from __future__ import annotations

from .keys import SHORTCUTS
from .views import LEVEL_COLOURS, PENETRATION_STOPS, STRAIN_STOPS, View, colour_table

FABRIC_PARAMS = (("stretch_warp", "N/m", 10.0, 5000.0), ("stretch_weft", "N/m", 10.0, 5000.0),
                 ("shear", "N/m", 1.0, 500.0), ("bend_warp", "N.m", 1e-7, 1e-4), ("density", "kg/m2", 0.02, 0.6),
                 ("friction", "-", 0.0, 1.5))
VIEW_LABELS = {View.SHADED: "shaded", View.WIREFRAME: "wireframe", View.LOD: "LOD level colours",
               View.STRAIN: "strain map", View.PENETRATION: "penetration", View.PINS_SEAMS: "pins and seams"}
PANEL_W = 300


def _mb(nbytes: float) -> str:
    return f"{nbytes / 2**20:.1f} MiB"


def draw_panels(app) -> None:
    imgui = app.imgui
    w, h = app.fb_size
    imgui.set_next_window_pos(imgui.ImVec2(8, 8), imgui.Cond_.first_use_ever)
    auto = imgui.WindowFlags_.always_auto_resize
    if imgui.begin("Simulation", None, auto)[0]:
        imgui.push_item_width(170)
        _simulation(app, imgui)
        imgui.pop_item_width()
    imgui.end()
    imgui.set_next_window_pos(imgui.ImVec2(w - 8, 8), imgui.Cond_.first_use_ever, imgui.ImVec2(1.0, 0.0))
    if imgui.begin("View and stats", None, auto)[0]:
        imgui.push_item_width(150)
        _view(app, imgui)
        imgui.pop_item_width()
        imgui.separator()
        _stats(app, imgui)
    imgui.end()
    if app.view in (View.STRAIN, View.PENETRATION):
        _legend(app, imgui, w, h)
    if app.errors:
        _errors(app, imgui, w, h)
    if app.show_help:
        _help(app, imgui, w, h)


def _simulation(app, imgui) -> None:
    t = app.topo
    if imgui.button("Pause" if app.playing else "Play"):
        app.command("toggle")
    imgui.same_line()
    if imgui.button("Step"):
        app.command("step")
    imgui.same_line()
    if imgui.button("Reset"):
        app.command("reset")
    speeds = ["max", "1/8x", "1/4x", "1/2x", "1x", "2x"]
    from .commands import SPEEDS

    cur = min(range(len(SPEEDS)), key=lambda k: abs(SPEEDS[k] - app.speed))
    changed, k = imgui.combo("speed", cur, speeds)
    if changed:
        app.command(f"speed {SPEEDS[k]}")
    # scrub through the frames simulated at this level
    n = len(t.history) if t else 0
    if n:
        idx = app.scrub if app.scrub is not None else n - 1
        changed, k = imgui.slider_int("frame", idx, 0, n - 1, f"{t.history[idx][0]}")
        if changed:
            app.command(f"scrub {k}")
        imgui.same_line()
        if imgui.button("live"):
            app.command("live")
    imgui.separator()
    imgui.text("resolution level")
    levels = t.info["levels"] if t else []
    for i, e in enumerate(levels):
        if e is None:
            imgui.text_disabled("mesh file: one level")
            break
        if i:
            imgui.same_line()
        if imgui.radio_button(f"{1e3 * e:g} mm", t.info["level"] == i):
            app.command(f"level {i}")
    imgui.separator()
    if t is not None and t.info.get("fabrics"):
        from clothsim.fabric import preset_names

        names = preset_names()
        fab = t.info["fabrics"][0]
        cur_name = app.__dict__.setdefault("_fabric_choice", fab.get("name", names[0]))
        idx = names.index(cur_name) if cur_name in names else 0
        changed, k = imgui.combo("fabric", idx, names)
        if changed:
            app._fabric_choice = names[k]
            app.command(f"fabric {names[k]}")
        if imgui.tree_node("fabric parameters"):
            vals = app.__dict__.setdefault("_fabric_values", {})
            for key, unit, lo, hi in FABRIC_PARAMS:
                v = vals.get(key, fab.get(key, lo))
                fmt = "%.3g"
                changed, v = imgui.slider_float(f"{key} [{unit}]", float(v), lo, hi, fmt,
                                                imgui.SliderFlags_.logarithmic if lo > 0 else 0)
                if changed:
                    vals[key] = v
                if imgui.is_item_deactivated_after_edit():
                    app.command(f"fabric_param {key} {v:.6g}")
            imgui.tree_pop()
    imgui.separator()
    _, app.load_field = imgui.input_text("scene", app.load_field)
    if imgui.button("Load scene"):
        app.command(["load", app.load_field])
    imgui.same_line()
    if imgui.button("Screenshot"):
        app.command("screenshot")
    imgui.same_line()
    if imgui.button("Help"):
        app.command("help")


def _view(app, imgui) -> None:
    for v in View:
        if imgui.radio_button(VIEW_LABELS[v], app.view is v):
            app.command(f"view {v.value}")
    changed, on = imgui.checkbox("pins and seams in every view", app.show_markers)
    if changed:
        app.command(f"markers {'on' if on else 'off'}")
    changed, high = imgui.checkbox("catalog look (PBR, soft shadows)", app.quality == "high")
    if changed:
        app.command(f"quality {'high' if high else 'fast'}")
    if app.view is View.STRAIN:
        changed, v = imgui.slider_float("strain range [%]", 100.0 * app.strain_max, 1.0, 50.0, "%.0f")
        if changed:
            app.command(f"strain_range {v / 100.0:.4f}")


def _stats(app, imgui) -> None:
    t = app.topo
    # the window draws when something changes (a new frame, input): fps is the rate of those draws
    imgui.text(f"window  {app.fps:5.1f} fps, draw {app.draw_ms:.0f} ms")
    if imgui.is_item_hovered():
        imgui.set_tooltip("the window draws when something changes (a new frame, input, a command)")
    sim_fps = 1e3 / app.step_ms if app.step_ms > 0 else 0.0
    imgui.text(f"sim     {app.step_ms:7.1f} ms/step ({sim_fps:.1f} frames/s)")
    state = "playing" if app.playing else "paused"
    shown = app.state()["displayed_frame"]
    imgui.text(f"frame   {shown if shown is not None else '-'} / {app.sim_frame}  ({state})")
    if t is not None:
        lvl = t.info["level"]
        e = t.info["levels"][lvl] if t.info["levels"][0] is not None else None
        col = LEVEL_COLOURS[min(lvl, len(LEVEL_COLOURS) - 1)]
        imgui.text_colored(imgui.ImVec4(*col, 1.0), f"level   {lvl}" + (f" ({1e3 * e:g} mm)" if e else ""))
        imgui.text(f"cloth   {t.info['n']} vertices, {len(t.triangles)} triangles")
        imgui.text(f"body    {t.info['b']} vertices")
        ke = app.sim_stats.get("kinetic_energy", 0.0)
        imgui.text(f"KE {ke:.1e} J/kg  residual {app.sim_stats.get('residual', 0.0):.3f}")
    sim_b = app.memory.get("total", 0)
    imgui.text(f"memory  sim {_mb(sim_b)}, GL {_mb(app.gl_nbytes())}")


def _legend(app, imgui, w, h) -> None:
    strain = app.view is View.STRAIN
    table = colour_table(STRAIN_STOPS if strain else PENETRATION_STOPS, 64)
    if strain:
        lo, hi, unit, title = 0.0, 100.0 * app.strain_max, "%", "stretch (longest direction vs cut)"
    else:
        tol = float(app.topo.info.get("penetration_tolerance", 0.002)) if app.topo else 0.002
        lo, hi, unit, title = 0.0, 5e3 * tol, "mm", "depth inside the body"
    bar_w, bar_h = 260.0, 16.0
    imgui.set_next_window_pos(imgui.ImVec2(w * 0.5 - bar_w * 0.5 - 10, h - 90), imgui.Cond_.always)
    flags = (imgui.WindowFlags_.no_decoration | imgui.WindowFlags_.always_auto_resize
             | imgui.WindowFlags_.no_move | imgui.WindowFlags_.no_saved_settings)
    imgui.begin("legend", None, flags)
    imgui.text(title)
    dl = imgui.get_window_draw_list()
    p = imgui.get_cursor_screen_pos()
    n = len(table)
    for i in range(n - 1):
        x0 = p.x + bar_w * i / (n - 1)
        x1 = p.x + bar_w * (i + 1) / (n - 1)
        c0 = imgui.get_color_u32(imgui.ImVec4(*(table[i, :3] / 255.0), 1.0))
        c1 = imgui.get_color_u32(imgui.ImVec4(*(table[i + 1, :3] / 255.0), 1.0))
        dl.add_rect_filled_multi_color(imgui.ImVec2(x0, p.y), imgui.ImVec2(x1 + 0.5, p.y + bar_h), c0, c1, c1, c0)
    imgui.dummy(imgui.ImVec2(bar_w, bar_h))
    for k, frac in enumerate((0.0, 0.5, 1.0)):
        label = f"{lo + frac * (hi - lo):.3g} {unit}" + ("+" if frac == 1.0 else "")
        if k:
            tw = imgui.calc_text_size(label).x
            imgui.same_line(bar_w * frac - (tw if frac == 1.0 else 0.5 * tw) + 8)
        imgui.text(label)
    imgui.end()


def _errors(app, imgui, w, h) -> None:
    imgui.set_next_window_pos(imgui.ImVec2(PANEL_W + 20, 8), imgui.Cond_.first_use_ever)
    imgui.set_next_window_size(imgui.ImVec2(max(w - 2 * PANEL_W - 40, 300), 0), imgui.Cond_.first_use_ever)
    imgui.begin("Errors")
    for msg in app.errors[-5:]:
        imgui.push_text_wrap_pos(0.0)
        imgui.text_colored(imgui.ImVec4(1.0, 0.45, 0.4, 1.0), msg)
        imgui.pop_text_wrap_pos()
    if imgui.button("dismiss"):
        app.errors.clear()
    imgui.end()


def _help(app, imgui, w, h) -> None:
    imgui.set_next_window_pos(imgui.ImVec2(w * 0.5 - 260, h * 0.2), imgui.Cond_.first_use_ever)
    opened, keep = imgui.begin("Help: shortcuts", True)
    if opened and imgui.begin_table("keys", 2, imgui.TableFlags_.row_bg | imgui.TableFlags_.borders_inner_v):
        for keys, _, what in SHORTCUTS:
            imgui.table_next_row()
            imgui.table_next_column()
            imgui.text(keys)
            imgui.table_next_column()
            imgui.text(what)
        imgui.end_table()
    imgui.end()
    if keep is False:
        app.show_help = False
