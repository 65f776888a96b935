#version 450 core
// Garment / avatar surface. Positions are world space [m] (the simulator's output as is).
// VERTEX_SHADOW: the key light's soft-shadow lookup (shadow.glsl) once per vertex, for the side of
// the surface facing the light; mesh.frag interpolates it (dense meshes: RenderSettings.shadow_sampling).

in vec3 in_position;
in vec3 in_normal;
#ifdef HAS_UV
in vec2 in_uv;
#endif

uniform mat4 u_view_proj;
#ifdef VERTEX_SHADOW
#include "include/shadow.glsl"
uniform vec4 u_light_vec[LIGHT_COUNT];   // light 0: the shadow-casting directional key (surface.glsl)
out float v_key_vis;
#endif

out vec3 v_world;
out vec3 v_normal;
out vec2 v_uv;

void main() {
    v_world = in_position;
    v_normal = in_normal;
#ifdef HAS_UV
    v_uv = in_uv;
#else
    v_uv = vec2(0.0);
#endif
    gl_Position = u_view_proj * vec4(in_position, 1.0);
#ifdef VERTEX_SHADOW
    // surface_key_visibility's slope-scaled bias, for the normal's side that faces the light
    float n_l = clamp(abs(dot(normalize(in_normal), u_light_vec[0].xyz)), 0.05, 1.0);
    v_key_vis = key_visibility(in_position, 0.0015 * sqrt(1.0 - n_l * n_l) / n_l);
#endif
}
