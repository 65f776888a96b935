// glTF 2.0 metallic-roughness BRDF (Appendix B of the glTF specification) and the
// KHR_materials_sheen lobe: Charlie distribution (Estevez & Kulla 2017, "Production Friendly
// Microfacet Sheen BRDF") with their fitted visibility term, layered on top of the base with the
// albedo scaling the extension defines: f = f_sheen + (1 - max3(sheenColor) * E(N.V)) * f_base.
#ifndef BRDF_GLSL
#define BRDF_GLSL

#include "colour.glsl"

const float PI = 3.14159265358979;

// GGX / Trowbridge-Reitz normal distribution, alpha = roughness^2.
float d_ggx(float n_h, float alpha) {
    float a2 = alpha * alpha;
    float f = n_h * n_h * (a2 - 1.0) + 1.0;
    return a2 / (PI * f * f);
}

// Height-correlated Smith visibility V = G / (4 N.L N.V).
float v_smith_ggx(float n_l, float n_v, float alpha) {
    float a2 = alpha * alpha;
    float gv = n_l * sqrt(n_v * n_v * (1.0 - a2) + a2);
    float gl = n_v * sqrt(n_l * n_l * (1.0 - a2) + a2);
    float s = gv + gl;
    return s > 0.0 ? 0.5 / s : 0.0;
}

vec3 f_schlick(vec3 f0, float v_h) {
    float x = 1.0 - v_h;
    float x2 = x * x;
    return f0 + (1.0 - f0) * (x2 * x2 * x);   // (1 - V.H)^5 without pow
}

// Charlie sheen distribution; alpha = sheenRoughness^2.
float d_charlie(float n_h, float alpha) {
    alpha = max(alpha, 1e-6);
    float inv_r = 1.0 / alpha;
    float sin2h = max(1.0 - n_h * n_h, 0.0);
    return (2.0 + inv_r) * pow(sin2h, 0.5 * inv_r) / (2.0 * PI);
}

// Estevez-Kulla fitted Lambda for the Charlie distribution (their Table 1, interpolated in
// (1 - alpha)^2).
float sheen_l(float x, float alpha) {
    float t = (1.0 - alpha) * (1.0 - alpha);
    float a = mix(21.5473, 25.3245, t);
    float b = mix(3.82987, 3.32435, t);
    float c = mix(0.19823, 0.16801, t);
    float d = mix(-1.97760, -1.27393, t);
    float e = mix(-4.32054, -4.85967, t);
    return a / (1.0 + b * pow(x, c)) + d * x + e;
}

// l_half = sheen_l(0.5, alpha). One sheen_l evaluation (a SIMD rasterizer evaluates both sides of
// a select, so the two cases share it).
float sheen_lambda_h(float cos_theta, float alpha, float l_half) {
    bool low = abs(cos_theta) < 0.5;
    float l = sheen_l(low ? cos_theta : 1.0 - cos_theta, alpha);
    return exp(low ? l : 2.0 * l_half - l);
}

float sheen_lambda(float cos_theta, float alpha) {
    return sheen_lambda_h(cos_theta, alpha, sheen_l(0.5, alpha));
}

// The Charlie visibility with the view direction's Lambda precomputed (once per pixel, not per light).
float v_charlie_pre(float n_l, float n_v, float lambda_v, float alpha, float l_half) {
    float denom = (1.0 + lambda_v + sheen_lambda_h(n_l, alpha, l_half)) * 4.0 * n_v * n_l;
    return clamp(1.0 / max(denom, 1e-6), 0.0, 1.0);
}

float v_charlie(float n_l, float n_v, float sheen_roughness) {
    float alpha = max(sheen_roughness, 1e-3);
    alpha *= alpha;
    float l_half = sheen_l(0.5, alpha);
    return v_charlie_pre(n_l, n_v, sheen_lambda_h(n_v, alpha, l_half), alpha, l_half);
}

struct Material {
    vec3 base_color;        // linear
    float metallic;
    float roughness;        // perceptual
    vec3 sheen_color;       // linear
    float sheen_roughness;  // perceptual
    float sheen_albedo_e;   // E(N.V) of the sheen lobe, from the precomputed table
    // per pixel, filled in by prepare_sheen(): alpha of the visibility term, sheen_l(0.5, alpha),
    // and Lambda(N.V)
    float sheen_v_alpha;
    float sheen_l_half;
    float sheen_lambda_v;
};

// Fill in the view-dependent sheen terms shade_light uses (n_v as shade_light clamps it).
void prepare_sheen(inout Material m, float n_v) {
    float alpha = max(m.sheen_roughness, 1e-3);
    m.sheen_v_alpha = alpha * alpha;
    m.sheen_l_half = sheen_l(0.5, m.sheen_v_alpha);
    m.sheen_lambda_v = sheen_lambda_h(n_v, m.sheen_v_alpha, m.sheen_l_half);
}

// Radiance reflected towards v from a directional light l of radiance `radiance` (times N.L).
// Call prepare_sheen(m, N.V) first.
vec3 shade_light(Material m, vec3 n, vec3 v, vec3 l, vec3 radiance) {
    float n_l = clamp(dot(n, l), 0.0, 1.0);
    if (n_l <= 0.0) return vec3(0.0);
    float n_v = clamp(abs(dot(n, v)), 1e-4, 1.0);
    vec3 h = normalize(l + v);
    float n_h = clamp(dot(n, h), 0.0, 1.0);
    float v_h = clamp(dot(v, h), 0.0, 1.0);
    float alpha = max(m.roughness * m.roughness, 1e-3);

    vec3 f0 = mix(vec3(0.04), m.base_color, m.metallic);
    vec3 f = f_schlick(f0, v_h);
    vec3 c_diff = mix(m.base_color, vec3(0.0), m.metallic);
    vec3 f_diffuse = (1.0 - f) * c_diff / PI;
    vec3 f_specular = f * d_ggx(n_h, alpha) * v_smith_ggx(n_l, n_v, alpha);
    vec3 f_base = f_diffuse + f_specular;

    float s_alpha = max(m.sheen_roughness * m.sheen_roughness, 1e-3);
    vec3 f_sheen = m.sheen_color * d_charlie(n_h, s_alpha)
                 * v_charlie_pre(n_l, n_v, m.sheen_lambda_v, m.sheen_v_alpha, m.sheen_l_half);
    float albedo_scaling = 1.0 - max3(m.sheen_color) * m.sheen_albedo_e;

    return (f_sheen + albedo_scaling * f_base) * radiance * n_l;
}

// Analytic fit of the split-sum environment BRDF (Karis 2014 / Lazarov 2013).
vec2 env_brdf_approx(float n_v, float roughness) {
    const vec4 c0 = vec4(-1.0, -0.0275, -0.572, 0.022);
    const vec4 c1 = vec4(1.0, 0.0425, 1.04, -0.04);
    vec4 r = roughness * c0 + c1;
    float a004 = min(r.x * r.x, exp2(-9.28 * n_v)) * r.x + r.y;
    return vec2(-1.04, 1.04) * a004 + r.zw;
}

#endif
