#version 450 core
// Flat-coloured preview surface under a headlight (two-sided: cloth is one sheet).
// Defines: USE_SCALAR (colour from u_colormap at (scalar - lo) / (hi - lo), clamped), else u_color.

in vec3 v_world;
in vec3 v_normal;
in float v_scalar;

uniform vec3 u_camera_pos;
uniform vec3 u_color;            // sRGB
#ifdef USE_SCALAR
uniform sampler2D u_colormap;    // (256 x 1) sRGB RGBA8 colour scale, sampled raw
uniform vec2 u_scalar_range;     // (lo, hi)
#endif

out vec4 frag_color;

void main() {
    vec3 v = normalize(u_camera_pos - v_world);
    vec3 n = normalize(v_normal);
#ifdef USE_SCALAR
    float t = clamp((v_scalar - u_scalar_range.x) / max(u_scalar_range.y - u_scalar_range.x, 1e-12), 0.0, 1.0);
    vec3 base = texture(u_colormap, vec2(t * (255.0 / 256.0) + 0.5 / 256.0, 0.5)).rgb;
#else
    vec3 base = u_color;
#endif
    // headlight: 40 % ambient + 60 % Lambert on |n.v| (either side), in linear light. The colour scale is
    // sRGB-encoded: on the power-law part of the sRGB curve, ((c + 0.055) / 1.055)^2.4, scaling the linear
    // value by k maps c to k^(1/2.4) (c + 0.055) - 0.055 exactly; below c = 0.04045 (the linear toe) this is
    // within 3 levels of 8 bits (2.6 at worst, k in [0.4, 1]). One scalar pow per pixel instead of the six
    // vector ones of a decode and re-encode (llvmpipe shades every pixel on the CPU).
    float lambert = abs(dot(n, v));
    float k = pow(0.4 + 0.6 * lambert, 1.0 / 2.4);
    frag_color = vec4(max(k * (base + 0.055) - 0.055, 0.0), 1.0);
}
