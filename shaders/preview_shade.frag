#version 450 core
// The preview's fast look (a DCC viewport's "solid/material preview", not the catalog's full PBR); the
// lighting is preview_light.glsl. The key's shadow comes per vertex (v_vis, from preview_visibility.vert:
// no texture lookups here). Cloth is one sheet: the normal is turned towards the viewer.
// PER_VERTEX: the colour was computed per vertex and is interpolated (TWO_SIDED: one per side).

in vec3 v_world;
in vec3 v_normal;
in float v_vis;             // key-light visibility, 1 = lit
in vec3 v_color;            // PER_VERTEX: sRGB colour (front side)
in vec3 v_color_back;       // PER_VERTEX: sRGB colour (back side)

out vec4 frag_color;

#ifdef PER_VERTEX
void main() {
    frag_color = vec4(gl_FrontFacing ? v_color : v_color_back, 1.0);
}
#else
#include "preview_light.glsl"

void main() {
    vec3 n = normalize(v_normal);
    if (!gl_FrontFacing) n = -n;
    frag_color = vec4(preview_light(v_world, n, v_vis), 1.0);
}
#endif
