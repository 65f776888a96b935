// Colour-space helpers. Shading is linear; output is sRGB-encoded (IEC 61966-2-1).
#ifndef COLOUR_GLSL
#define COLOUR_GLSL

vec3 srgb_to_linear(vec3 c) {
    return mix(c / 12.92, pow((c + 0.055) / 1.055, vec3(2.4)), step(vec3(0.04045), c));
}

vec3 linear_to_srgb(vec3 c) {
    c = clamp(c, 0.0, 1.0);
    return mix(c * 12.92, 1.055 * pow(c, vec3(1.0 / 2.4)) - 0.055, step(vec3(0.0031308), c));
}

float max3(vec3 v) { return max(v.r, max(v.g, v.b)); }

#endif
