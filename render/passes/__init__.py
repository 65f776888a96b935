"""The Renderer's passes, in frame order: shadow and contact maps (maps), the colour pass into the
MSAA / G-buffer / id target (colour), then shading, resolve and readback (shade). Each takes the
Renderer (which owns every GL object) and the frame's render.frame.Frame."""
