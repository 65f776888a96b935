#version 450 core
// Flat-coloured preview surface under a headlight (two-sided: cloth is one sheet).
// Defines: USE_SCALAR (colour from u_colormap at (scalar - lo) / (hi - lo), clamped), else u_color.

#include "include/colour.glsl"

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
    // headlight: 40 % ambient + 60 % Lambert on |n.v| (either side), in linear light
    float lambert = abs(dot(n, v));
    vec3 lin = srgb_to_linear(base) * (0.4 + 0.6 * lambert);
    frag_color = vec4(linear_to_srgb(lin), 1.0);
}
