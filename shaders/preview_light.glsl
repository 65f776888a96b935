// The preview look's lighting (render.preview.painter): hemisphere ambient + a world-fixed key (its
// visibility vis from the per-vertex shadow) + a camera-side fill + normalised Blinn-Phong from the key +
// a grazing-angle sheen term; Khronos PBR Neutral tone map; returns sRGB-encoded colour.
// Units as in render.lighting: radiance (ambient) and illuminance (lights); diffuse = base / pi * E.
// Used per pixel (preview_shade.frag) or, with PER_VERTEX, per vertex (preview_shade.vert).
#ifndef PREVIEW_LIGHT_GLSL
#define PREVIEW_LIGHT_GLSL

#include "include/colour.glsl"
#include "include/tonemap.glsl"

uniform vec3 u_camera_pos;
uniform vec3 u_base;          // linear base colour
uniform vec3 u_sheen;         // linear sheen colour (grazing-angle fibre glow)
uniform float u_spec;         // Blinn-Phong lobe: F0 * (s + 8) / (8 pi) (0 = none)
uniform float u_shininess;    // Blinn-Phong exponent s
uniform vec3 u_key_dir;       // unit vector towards the key (world-fixed)
uniform vec3 u_key;           // key illuminance (linear RGB)
uniform vec3 u_fill_dir;      // unit vector towards the fill (camera side)
uniform vec3 u_fill;          // fill illuminance
uniform vec3 u_sky;           // ambient radiance from straight up
uniform vec3 u_floor;         // ambient radiance from straight down
uniform float u_exposure;

// p: world position [m]; n: unit normal on the viewer's side; vis: key visibility (1 = lit).
vec3 preview_light(vec3 p, vec3 n, float vis) {
    vec3 v = normalize(u_camera_pos - p);
    float n_v = clamp(dot(n, v), 0.0, 1.0);
    float n_l = max(dot(n, u_key_dir), 0.0) * vis;
    float n_f = max(dot(n, u_fill_dir), 0.0);
    vec3 ambient = mix(u_floor, u_sky, 0.5 + 0.5 * n.y) * mix(0.8, 1.0, vis);
    vec3 e_direct = u_key * n_l + u_fill * n_f;
    vec3 color = u_base * (ambient + e_direct * (1.0 / 3.14159265));
    vec3 h = normalize(u_key_dir + v);
    color += u_spec * pow(max(dot(n, h), 0.0), u_shininess) * u_key * n_l;
    float g = 1.0 - n_v;
    color += u_sheen * (g * g * g) * (ambient + 0.25 * e_direct);
    return linear_to_srgb(tonemap(color * u_exposure));
}

#endif
