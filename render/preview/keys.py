"""Keyboard shortcuts: one table, used by the key handler, the help panel and the README."""

from __future__ import annotations

# (keys as shown, command run, what it does)
SHORTCUTS = (
    ("Space", "toggle", "play / pause the simulation"),
    ("N", "step", "simulate one frame (paused)"),
    ("R", "reset", "restart the scene from frame 0 (same level)"),
    ("[  /  ]", "level - / level +", "coarser / finer resolution level (40, 20, 10, 5 mm)"),
    ("Left / Right", "scrub_by -1 / scrub_by 1", "step through the simulated frames (pauses)"),
    ("End", "live", "back to the newest frame"),
    ("+  /  -", "faster / slower", "simulation speed (max, 1/8 ... 2 x real time)"),
    ("V", "next_view", "next view: shaded, wireframe, LOD, strain, penetration, pins"),
    ("M", "markers", "show pins (red) and seams (blue) in every view"),
    ("Q", "quality", "fast preview look / catalog look (slow on CPU GL)"),
    ("F", "frame_garment", "frame the garment"),
    ("1 2 3 4 5", "camera front ... right", "front, three-quarter, left, back, right views"),
    ("F12  or  P", "screenshot", "save screenshots/preview_<time>.png"),
    ("H  or  F1", "help", "show / hide this help"),
    ("Esc", "quit", "close the window"),
    ("left drag", "", "orbit"),
    ("right / middle / shift+left drag", "", "pan"),
    ("wheel", "", "zoom"),
)


def handle_key(app, key: int, action: int, mods: int) -> None:
    """glfw key event -> ImGui (always) and a preview command (when ImGui does not want the keyboard)."""
    import glfw

    imgui = app.imgui
    io = imgui.get_io()
    app._ui_frames = 3
    down = action != glfw.RELEASE
    io.add_key_event(imgui.Key.mod_ctrl, bool(mods & glfw.MOD_CONTROL))
    io.add_key_event(imgui.Key.mod_shift, bool(mods & glfw.MOD_SHIFT))
    io.add_key_event(imgui.Key.mod_alt, bool(mods & glfw.MOD_ALT))
    ik = _IMGUI_KEYS.get(key)
    if ik is not None:
        io.add_key_event(getattr(imgui.Key, ik), down)
    if action != glfw.PRESS and not (action == glfw.REPEAT and key in (glfw.KEY_LEFT, glfw.KEY_RIGHT)):
        return
    if io.want_capture_keyboard:
        return
    cmd = _COMMANDS.get(key)
    if cmd is not None:
        app.command(cmd)


def _glfw_tables():
    import glfw

    commands = {
        glfw.KEY_SPACE: "toggle", glfw.KEY_N: "step", glfw.KEY_R: "reset",
        glfw.KEY_LEFT_BRACKET: "level -", glfw.KEY_RIGHT_BRACKET: "level +",
        glfw.KEY_LEFT: "scrub_by -1", glfw.KEY_RIGHT: "scrub_by 1", glfw.KEY_END: "live",
        glfw.KEY_EQUAL: "faster", glfw.KEY_KP_ADD: "faster", glfw.KEY_MINUS: "slower", glfw.KEY_KP_SUBTRACT: "slower",
        glfw.KEY_V: "next_view", glfw.KEY_M: "markers", glfw.KEY_Q: "quality", glfw.KEY_F: "frame_garment",
        glfw.KEY_1: "camera front", glfw.KEY_2: "camera three_quarter", glfw.KEY_3: "camera left",
        glfw.KEY_4: "camera back", glfw.KEY_5: "camera right",
        glfw.KEY_F12: "screenshot", glfw.KEY_P: "screenshot",
        glfw.KEY_H: "help", glfw.KEY_F1: "help", glfw.KEY_ESCAPE: "quit",
    }
    keys = {glfw.KEY_TAB: "tab", glfw.KEY_LEFT: "left_arrow", glfw.KEY_RIGHT: "right_arrow",
            glfw.KEY_UP: "up_arrow", glfw.KEY_DOWN: "down_arrow", glfw.KEY_HOME: "home", glfw.KEY_END: "end",
            glfw.KEY_DELETE: "delete", glfw.KEY_BACKSPACE: "backspace", glfw.KEY_ENTER: "enter",
            glfw.KEY_KP_ENTER: "keypad_enter", glfw.KEY_ESCAPE: "escape", glfw.KEY_SPACE: "space",
            glfw.KEY_LEFT_CONTROL: "left_ctrl", glfw.KEY_RIGHT_CONTROL: "right_ctrl",
            glfw.KEY_LEFT_SHIFT: "left_shift", glfw.KEY_RIGHT_SHIFT: "right_shift",
            glfw.KEY_A: "a", glfw.KEY_C: "c", glfw.KEY_V: "v", glfw.KEY_X: "x", glfw.KEY_Z: "z"}
    return commands, keys


try:
    _COMMANDS, _IMGUI_KEYS = _glfw_tables()
except Exception:  # noqa: BLE001 - no glfw (headless install): no key handling needed
    _COMMANDS, _IMGUI_KEYS = {}, {}
