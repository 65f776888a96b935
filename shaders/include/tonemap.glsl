// Tone maps: linear scene-referred radiance -> display-referred [0, 1] (still linear; encode after).
// TONEMAP == 0: Khronos PBR Neutral (keeps base colours true up to ~0.8; default for product shots).
// TONEMAP == 1: filmic (Narkowicz's fit of the ACES RRT+ODT), more contrast, shifts hues.
#ifndef TONEMAP_GLSL
#define TONEMAP_GLSL

#ifndef TONEMAP
#define TONEMAP 0
#endif

// Khronos PBR Neutral tone mapper, reference implementation of the Khronos specification
// (github.com/KhronosGroup/ToneMapping, PBR_Neutral).
vec3 tonemap_pbr_neutral(vec3 color) {
    const float start_compression = 0.8 - 0.04;
    const float desaturation = 0.15;
    float x = min(color.r, min(color.g, color.b));
    float offset = x < 0.08 ? x - 6.25 * x * x : 0.04;
    color -= offset;
    float peak = max(color.r, max(color.g, color.b));
    if (peak < start_compression) return color;
    const float d = 1.0 - start_compression;
    float new_peak = 1.0 - d * d / (peak + d - start_compression);
    color *= new_peak / peak;
    float g = 1.0 - 1.0 / (desaturation * (peak - new_peak) + 1.0);
    return mix(color, vec3(new_peak), g);
}

// K. Narkowicz, "ACES Filmic Tone Mapping Curve" (2016).
vec3 tonemap_filmic(vec3 x) {
    const float a = 2.51, b = 0.03, c = 2.43, d = 0.59, e = 0.14;
    return clamp((x * (a * x + b)) / (x * (c * x + d) + e), 0.0, 1.0);
}

vec3 tonemap(vec3 color) {
#if TONEMAP == 1
    return tonemap_filmic(color);
#else
    return tonemap_pbr_neutral(color);
#endif
}

#endif
