// Shading of a surface point under LIGHT_COUNT punctual lights (light 0 casts the shadow map when
// SHADOWS is defined) and the environment dome, in linear radiance (before exposure and tone map).
// One function for the forward pass (mesh.frag) and the deferred pass (deferred.frag), so both
// compute the same colour from the same inputs.
#ifndef SURFACE_GLSL
#define SURFACE_GLSL

#include "brdf.glsl"
#include "environment.glsl"
#ifdef SHADOWS
#include "shadow.glsl"
#endif

#ifndef LIGHT_COUNT
#define LIGHT_COUNT 3
#endif

uniform sampler2D u_sheen_lut;      // E(mu, sheen roughness): x = N.V, y = sheen roughness
uniform float u_env_intensity;

// Punctual lights. vec: directional (unit direction towards the light, 0), point/spot (position, 1);
// radiance: illuminance (directional) or intensity [cd] x colour (point/spot, divided by d^2);
// spot: axis (the way the light travels) and cone (scale, offset) of KHR_lights_punctual.
#if LIGHT_COUNT > 0
uniform vec4 u_light_vec[LIGHT_COUNT];
uniform vec3 u_light_radiance[LIGHT_COUNT];
uniform vec3 u_light_axis[LIGHT_COUNT];
uniform vec2 u_light_cone[LIGHT_COUNT];
#endif

// m: the material at p (sheen_albedo_e is filled in here); n: unit shading normal facing the
// viewer's side; v: unit direction to the eye; p: world position [m].
#ifdef SHADOWS
#if defined(VERTEX_SHADOW) && !defined(VERTEX_STAGE)
in float v_key_vis;   // the lookup below made per vertex (mesh.vert), interpolated
#endif
// Visibility of the shadow-casting light 0 at p with shading normal n: 0 when n faces away from it
// (no lookup), else the PCSS lookup with a slope-scaled bias (steeper surfaces need more).
float surface_key_visibility(vec3 n, vec3 p) {
    float n_l_raw = dot(n, u_light_vec[0].xyz);
    if (n_l_raw <= 0.0) return 0.0;
#if defined(VERTEX_SHADOW) && !defined(VERTEX_STAGE)
    return v_key_vis;
#endif
    float n_l = clamp(n_l_raw, 0.05, 1.0);
    return key_visibility(p, 0.0015 * sqrt(1.0 - n_l * n_l) / n_l);
}
#endif

vec3 shade_surface_vis(Material m, vec3 n, vec3 v, vec3 p, float key_vis);

vec3 shade_surface(Material m, vec3 n, vec3 v, vec3 p) {
    float key_vis = 1.0;
#ifdef SHADOWS
    key_vis = surface_key_visibility(n, p);
#endif
    return shade_surface_vis(m, n, v, p, key_vis);
}

// As shade_surface, with the shadow-casting light's visibility key_vis given.
vec3 shade_surface_vis(Material m, vec3 n, vec3 v, vec3 p, float key_vis) {
    float n_v = clamp(abs(dot(n, v)), 1e-4, 1.0);
    m.sheen_albedo_e = texture(u_sheen_lut, vec2(n_v, m.sheen_roughness)).r;
    prepare_sheen(m, n_v);

    vec3 color = vec3(0.0);
#if LIGHT_COUNT > 0
    for (int i = 0; i < LIGHT_COUNT; ++i) {
        vec4 lv = u_light_vec[i];
        vec3 l = lv.xyz;
        vec3 radiance = u_light_radiance[i];
        if (lv.w != 0.0) {                       // point / spot: inverse square, cone
            vec3 d = lv.xyz - p;
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

    return color;
}

#endif
