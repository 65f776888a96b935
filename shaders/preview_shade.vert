#version 450 core
// Preview look (render.preview.painter): garment / avatar positions and normals in world space [m], the
// key-light visibility per vertex. PER_VERTEX: light here (preview_light.glsl) and pass the colour on:
// used for dense closed meshes (the avatar: back faces culled, so the normal faces the viewer), where the
// interpolated colour matches per-pixel lighting and the rasteriser's per-pixel work drops to a copy.

in vec3 in_position;
in vec3 in_normal;
in float in_vis;     // key-light visibility per vertex (1 = lit)

uniform mat4 u_view_proj;

out vec3 v_world;
out vec3 v_normal;
out float v_vis;
out vec3 v_color;

#ifdef PER_VERTEX
#include "preview_light.glsl"
#endif

void main() {
    v_world = in_position;
    v_normal = in_normal;
    v_vis = in_vis;
#ifdef PER_VERTEX
    v_color = preview_light(in_position, normalize(in_normal), in_vis);
#else
    v_color = vec3(0.0);
#endif
    gl_Position = u_view_proj * vec4(in_position, 1.0);
}
