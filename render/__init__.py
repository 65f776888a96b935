"""clothsim renderer: moderngl, headless through EGL; catalog shots.

Imports ``clothsim``; ``clothsim`` never imports ``render``. GLSL lives in ``shaders/``.

    from render import Renderer, Camera, Material, MeshItem, RenderSettings, standard_view
    with Renderer() as r:
        rgba = r.render([MeshItem(v, t, Material.fabric("navy"))], camera, RenderSettings(width=512, height=512))
"""

from .camera import STANDARD_VIEWS, Camera, framed_camera, standard_view
from .gl import GLUnavailableError, create_headless_context
from .lighting import Light, SceneLight, SceneLights, StudioRig
from .material import Material, MeshItem, parse_colour
from .renderer import RenderSettings, Renderer

__all__ = ["Camera", "GLUnavailableError", "Light", "Material", "MeshItem", "RenderSettings", "Renderer",
           "STANDARD_VIEWS", "SceneLight", "SceneLights", "StudioRig", "create_headless_context", "framed_camera", "parse_colour",
           "standard_view"]
