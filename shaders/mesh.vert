#version 450 core
// Garment / avatar surface. Positions are world space [m] (the simulator's output as is).
// VERTEX_SHADOW: the key light's soft-shadow lookup (shadow.glsl) once per vertex, for the side of
// the surface facing the light; mesh.frag interpolates it (dense meshes: RenderSettings.shadow_sampling).
// VERTEX_SHADING (with VERTEX_SHADOW when shadowed): the whole lighting (shade_surface_vis, linear
// radiance) once per vertex for each side of the surface, as mesh.frag would light it there; mesh.frag
// interpolates, tone maps and encodes (untextured dense meshes: RenderSettings.shading_rate).

in vec3 in_position;
in vec3 in_normal;
#ifdef HAS_UV
in vec2 in_uv;
#endif

uniform mat4 u_view_proj;
#define VERTEX_STAGE
#ifdef VERTEX_SHADING
#include "include/colour.glsl"
#include "include/surface.glsl"
uniform vec3 u_camera_pos;
uniform vec4 u_base_color;          // linear RGBA
uniform float u_metallic;
uniform float u_roughness;
uniform vec3 u_sheen_color;         // linear
uniform float u_sheen_roughness;
out vec3 v_color_front;             // linear radiance of the side the normal points to
out vec3 v_color_back;              // ... of the other side
#endif
#ifdef VERTEX_SHADOW
#ifndef VERTEX_SHADING
#include "include/shadow.glsl"
uniform vec4 u_light_vec[LIGHT_COUNT];   // light 0: the shadow-casting directional key (surface.glsl)
#endif
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
#ifdef VERTEX_SHADING
    Material m;
    m.base_color = u_base_color.rgb;
    m.metallic = u_metallic;
    m.roughness = clamp(u_roughness, 0.03, 1.0);
    m.sheen_color = u_sheen_color;
    m.sheen_roughness = clamp(u_sheen_roughness, 0.03, 1.0);
    vec3 n = normalize(in_normal);
    vec3 v = normalize(u_camera_pos - in_position);
    float key_vis = 1.0;
#ifdef VERTEX_SHADOW
    key_vis = v_key_vis;
#endif
    // the key reaches only the side facing it (surface_key_visibility's 0 for the other)
#if LIGHT_COUNT > 0
    float lit_front = dot(n, u_light_vec[0].xyz) > 0.0 ? 1.0 : 0.0;
#else
    float lit_front = 0.0;
#endif
    v_color_front = shade_surface_vis(m, n, v, in_position, key_vis * lit_front);
    v_color_back = shade_surface_vis(m, -n, v, in_position, key_vis * (1.0 - lit_front));
#endif
}
