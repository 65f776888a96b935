#version 450 core
// Forward PBR shading of one material under LIGHT_COUNT punctual lights (render.lighting.LightSet:
// the studio rig or scene lights) and the environment dome; writes display-encoded colour.
// Defines: LIGHT_COUNT, HAS_UV, HAS_BASE_TEXTURE, HAS_NORMAL_MAP, HAS_MR_TEXTURE, SHADOWS (light 0 casts the shadow
// map; VERTEX_SHADOW: its lookup made per vertex by mesh.vert), VERTEX_SHADING (the lighting made per
// vertex by mesh.vert: interpolated, tone mapped, encoded here), TONEMAP (0 neutral, 1 filmic); GBUFFER: write the material's inputs to the deferred pass's
// G-buffer (position and slot, shading normal and roughness, base colour and metallic) instead.

#ifndef LIGHT_COUNT
#define LIGHT_COUNT 3
#endif

#include "include/colour.glsl"
#include "include/brdf.glsl"
#include "include/environment.glsl"
#include "include/tonemap.glsl"
#include "include/surface.glsl"
#include "include/normal_map.glsl"

in vec3 v_world;
in vec3 v_normal;
in vec2 v_uv;

uniform vec3 u_camera_pos;
uniform float u_exposure;

uniform vec4 u_base_color;          // linear RGBA
uniform float u_metallic;
uniform float u_roughness;
uniform vec3 u_sheen_color;         // linear
uniform float u_sheen_roughness;
#ifdef HAS_UV
uniform vec2 u_uv_scale;
#endif
#ifdef HAS_BASE_TEXTURE
uniform sampler2D u_base_texture;   // sRGB texture (decoded by the sampler)
#endif
#ifdef HAS_NORMAL_MAP
uniform sampler2D u_normal_map;     // tangent-space, OpenGL convention (+Y up)
uniform vec2 u_normal_scale;        // (scale, +-scale): y negated when green runs against v (glTF)
#endif
#ifdef HAS_MR_TEXTURE
uniform sampler2D u_mr_texture;     // glTF metallicRoughnessTexture: G roughness, B metallic (linear)
#endif


#ifdef GBUFFER
uniform float u_slot;               // this mesh's material slot in the deferred pass (1, 2, ...)
layout(location = 0) out vec4 g_position;   // world position [m], slot
layout(location = 1) out vec4 g_normal;     // unit shading normal (viewer's side), roughness
layout(location = 2) out vec4 g_base;       // linear base colour, metallic
#else
out vec4 frag_color;
#endif


#ifdef VERTEX_SHADING
in vec3 v_color_front;
in vec3 v_color_back;

void main() {
    // the side seen: the front face shows the normal's side, as the per-pixel path flips n
    vec3 color = gl_FrontFacing ? v_color_front : v_color_back;
    frag_color = vec4(linear_to_srgb(tonemap(color * u_exposure)), 1.0);
}
#else
void main() {
    vec3 v = normalize(u_camera_pos - v_world);
    vec3 n = normalize(v_normal);
    if (!gl_FrontFacing) n = -n;        // cloth is one surface seen from both sides

    vec4 base = u_base_color;
#ifdef HAS_BASE_TEXTURE
    base *= texture(u_base_texture, v_uv * u_uv_scale);
#endif
#ifdef HAS_NORMAL_MAP
    vec3 tn = texture(u_normal_map, v_uv * u_uv_scale).xyz * 2.0 - 1.0;
    tn.xy *= u_normal_scale;
    vec2 uv_s = v_uv * u_uv_scale;
    n = normalize(cotangent_frame(n, dFdx(v_world), dFdy(v_world), dFdx(uv_s), dFdy(uv_s)) * tn);
#endif

    Material m;
    m.base_color = base.rgb;
    m.metallic = u_metallic;
    m.roughness = clamp(u_roughness, 0.03, 1.0);
#ifdef HAS_MR_TEXTURE
    vec4 mr = texture(u_mr_texture, v_uv * u_uv_scale);
    m.metallic *= mr.b;
    m.roughness = clamp(u_roughness * mr.g, 0.03, 1.0);
#endif
    m.sheen_color = u_sheen_color;
    m.sheen_roughness = clamp(u_sheen_roughness, 0.03, 1.0);
#ifdef GBUFFER
    g_position = vec4(v_world, u_slot);
    g_normal = vec4(n, m.roughness);
    g_base = vec4(m.base_color, m.metallic);
#else
    vec3 color = shade_surface(m, n, v, v_world);

    color = tonemap(color * u_exposure);
    frag_color = vec4(linear_to_srgb(color), 1.0);   // premultiplied by alpha = 1
#endif
}
#endif
