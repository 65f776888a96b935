"""clothsim renderer (moderngl: headless EGL, preview window, catalog shots).

Nothing here yet: the renderer arrives with issue 4. It will import ``clothsim``; ``clothsim``
never imports ``render``. GLSL lives in ``shaders/``, not in Python strings.
"""
