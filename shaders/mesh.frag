#version 450 core
// Forward PBR shading of one material under the studio rig; writes display-encoded colour.
// Defines: HAS_UV, HAS_BASE_TEXTURE, HAS_NORMAL_MAP, SHADOWS, TONEMAP (0 neutral, 1 filmic).

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
#ifdef HAS_BASE_TEXTURE
uniform sampler2D u_base_texture;   // sRGB texture (decoded by the sampler)
uniform vec2 u_uv_scale;
#endif
#ifdef HAS_NORMAL_MAP
uniform sampler2D u_normal_map;     // tangent-space, OpenGL convention (+Y up)
uniform float u_normal_scale;
#ifndef HAS_BASE_TEXTURE
uniform vec2 u_uv_scale;
#endif
#endif

// Studio rig: key (shadowed), fill, rim; directions point towards the lights.
uniform vec3 u_key_dir;
uniform vec3 u_key_radiance;
uniform vec3 u_fill_dir;
uniform vec3 u_fill_radiance;
uniform vec3 u_rim_dir;
uniform vec3 u_rim_radiance;

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
    m.sheen_color = u_sheen_color;
    m.sheen_roughness = clamp(u_sheen_roughness, 0.03, 1.0);
    float n_v = clamp(abs(dot(n, v)), 1e-4, 1.0);
    m.sheen_albedo_e = texture(u_sheen_lut, vec2(n_v, m.sheen_roughness)).r;

    float key_vis = 1.0;
#ifdef SHADOWS
    // slope-scaled bias: steeper surfaces need more
    float n_l_raw = dot(n, u_key_dir);
    if (n_l_raw <= 0.0) {
        key_vis = 0.0;                     // facing away from the key: no lookup needed
    } else {
        float n_l = clamp(n_l_raw, 0.05, 1.0);
        key_vis = key_visibility(v_world, 0.0015 * sqrt(1.0 - n_l * n_l) / n_l);
    }
#endif

    vec3 color = shade_light(m, n, v, u_key_dir, u_key_radiance) * key_vis
               + shade_light(m, n, v, u_fill_dir, u_fill_radiance)
               + shade_light(m, n, v, u_rim_dir, u_rim_radiance);

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
