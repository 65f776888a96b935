#version 450 core
// Shadow-catching ground (include/ground_shade.glsl). KEY_SHADOW: a light casts the shadow map (else
// only the contact shadow). TRANSPARENT: only the shadow, as black with alpha (premultiplied).
// GBUFFER: write the floor point and the ground slot to the deferred pass's G-buffer instead.

in vec3 v_world;
#ifdef GBUFFER
uniform float u_slot;
layout(location = 0) out vec4 g_position;
layout(location = 1) out vec4 g_normal;
layout(location = 2) out vec4 g_base;
void main() {
    g_position = vec4(v_world, u_slot);
    g_normal = vec4(0.0, 1.0, 0.0, 0.0);
    g_base = vec4(0.0);
}
#else
#include "include/ground_shade.glsl"
out vec4 frag_color;
void main() {
    frag_color = ground_colour(v_world);
}
#endif
