#version 450 core
// Forward PBR shading of one material under LIGHT_COUNT punctual lights (render.lighting.LightSet:
// the studio rig or scene lights) and the environment dome; writes display-encoded colour.
// Defines: LIGHT_COUNT, HAS_UV, HAS_BASE_TEXTURE, HAS_NORMAL_MAP, HAS_MR_TEXTURE, SHADOWS (light 0 casts the shadow
// map), TONEMAP (0 neutral, 1 filmic).

#ifndef LIGHT_COUNT
#define LIGHT_COUNT 3
#endif

#include "include/colour.glsl"
#include "include/brdf.glsl"
#include "include/environment.glsl"
#include "include/tonemap.glsl"
#ifdef SHADOWS
#include "include/shadow.glsl"
#endif

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
uniform sampler2D u_sheen_lut;      // E(mu, sheen roughness): x = N.V, y = sheen roughness
uniform float u_env_intensity;
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

// Punctual lights. vec: directional (unit direction towards the light, 0), point/spot (position, 1);
// radiance: illuminance (directional) or intensity [cd] x colour (point/spot, divided by d^2);
// spot: axis (the way the light travels) and cone (scale, offset) of KHR_lights_punctual.
#if LIGHT_COUNT > 0
uniform vec4 u_light_vec[LIGHT_COUNT];
uniform vec3 u_light_radiance[LIGHT_COUNT];
uniform vec3 u_light_axis[LIGHT_COUNT];
uniform vec2 u_light_cone[LIGHT_COUNT];
#endif

out vec4 frag_color;

#ifdef HAS_NORMAL_MAP
// Tangent frame from screen-space derivatives (C. Schüler, "Normal mapping without precomputed
// tangents", 2013): no tangent attribute, works on deforming cloth.
mat3 cotangent_frame(vec3 n, vec3 p, vec2 uv) {
    vec3 dp1 = dFdx(p), dp2 = dFdy(p);
    vec2 duv1 = dFdx(uv), duv2 = dFdy(uv);
    vec3 dp2perp = cross(dp2, n);
    vec3 dp1perp = cross(n, dp1);
    vec3 t = dp2perp * duv1.x + dp1perp * duv2.x;
    vec3 b = dp2perp * duv1.y + dp1perp * duv2.y;
    float invmax = inversesqrt(max(dot(t, t), dot(b, b)) + 1e-20);
    return mat3(t * invmax, b * invmax, n);
}
#endif

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
    n = normalize(cotangent_frame(n, v_world, v_uv * u_uv_scale) * tn);
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
    float n_v = clamp(abs(dot(n, v)), 1e-4, 1.0);
    m.sheen_albedo_e = texture(u_sheen_lut, vec2(n_v, m.sheen_roughness)).r;

    float key_vis = 1.0;
#ifdef SHADOWS
    // slope-scaled bias: steeper surfaces need more
    float n_l_raw = dot(n, u_light_vec[0].xyz);
    if (n_l_raw <= 0.0) {
        key_vis = 0.0;                     // facing away from the key: no lookup needed
    } else {
        float n_l = clamp(n_l_raw, 0.05, 1.0);
        key_vis = key_visibility(v_world, 0.0015 * sqrt(1.0 - n_l * n_l) / n_l);
    }
#endif

    vec3 color = vec3(0.0);
#if LIGHT_COUNT > 0
    for (int i = 0; i < LIGHT_COUNT; ++i) {
        vec4 lv = u_light_vec[i];
        vec3 l = lv.xyz;
        vec3 radiance = u_light_radiance[i];
        if (lv.w != 0.0) {                       // point / spot: inverse square, cone
            vec3 d = lv.xyz - v_world;
            float d2 = max(dot(d, d), 1e-8);
            l = d * inversesqrt(d2);
            float cone = clamp(dot(-l, u_light_axis[i]) * u_light_cone[i].x + u_light_cone[i].y, 0.0, 1.0);
            radiance *= cone * cone / d2;
        }
        vec3 c = shade_light(m, n, v, l, radiance);
#ifdef SHADOWS
        if (i == 0) c *= key_vis;
#endif
        color += c;
    }
#endif

    // environment: diffuse irradiance + split-sum specular, scaled like the direct lobes
    vec3 f0 = mix(vec3(0.04), m.base_color, m.metallic);
    vec2 ab = env_brdf_approx(n_v, m.roughness);
    vec3 spec_env = env_radiance(reflect(-v, n), m.roughness) * (f0 * ab.x + ab.y);
    vec3 diff_env = env_irradiance(n) * mix(m.base_color, vec3(0.0), m.metallic);
    float albedo_scaling = 1.0 - max3(m.sheen_color) * m.sheen_albedo_e;
    vec3 sheen_env = m.sheen_color * m.sheen_albedo_e * env_irradiance(n);
    // the key light's shadow also dims the ambient a little: occluded folds read as folds
    float ambient_occ = mix(0.75, 1.0, key_vis);
    color += u_env_intensity * ambient_occ * (albedo_scaling * (diff_env + spec_env) + sheen_env);

    color = tonemap(color * u_exposure);
    frag_color = vec4(linear_to_srgb(color), 1.0);   // premultiplied by alpha = 1
}
