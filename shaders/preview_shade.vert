#version 450 core
// Preview look (render.preview.painter): garment / avatar positions and normals in world space [m], the
// key-light visibility per vertex. PER_VERTEX: light here (preview_light.glsl) and pass the colour on
// (Gouraud): dense closed meshes always (the avatar: back faces culled, so the normal faces the viewer),
// every mesh while the view moves. TWO_SIDED (with PER_VERTEX; cloth): the colours of both sides, the
// fragment shader picks the side the triangle shows (gl_FrontFacing), as per-pixel lighting turns the normal.

in vec3 in_position;
in vec3 in_normal;
in float in_vis;     // key-light visibility per vertex (1 = lit)

uniform mat4 u_view_proj;

out vec3 v_world;
out vec3 v_normal;
out float v_vis;
out vec3 v_color;        // PER_VERTEX: sRGB colour of the front side
out vec3 v_color_back;   // PER_VERTEX + TWO_SIDED: of the back side

#ifdef PER_VERTEX
#include "preview_light.glsl"
#endif

void main() {
    v_world = in_position;
    v_normal = in_normal;
    v_vis = in_vis;
#ifdef PER_VERTEX
    vec3 n = normalize(in_normal);
    v_color = preview_light(in_position, n, in_vis);
#ifdef TWO_SIDED
    v_color_back = preview_light(in_position, -n, in_vis);
#else
    v_color_back = v_color;
#endif
#else
    v_color = v_color_back = vec3(0.0);
#endif
    gl_Position = u_view_proj * vec4(in_position, 1.0);
}
