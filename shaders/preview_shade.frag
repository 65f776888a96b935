#version 450 core
// The preview's fast look (a DCC viewport's "solid/material preview", not the catalog's full PBR):
// hemisphere ambient + a world-fixed key light + a camera-side fill + Blinn-Phong highlight + a
// grazing sheen term; Khronos PBR Neutral tone map, sRGB out. The key's shadow comes per vertex
// (v_vis, from preview_visibility.vert: no texture lookups here). Cloth is one sheet: the normal is
// turned towards the viewer.
// Units as in render.lighting: radiance (ambient) and illuminance (lights); diffuse = base / pi * E.

#include "include/colour.glsl"
#include "include/tonemap.glsl"

in vec3 v_world;
in vec3 v_normal;
in float v_vis;             // key-light visibility, 1 = lit

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

out vec4 frag_color;

void main() {
    vec3 v = normalize(u_camera_pos - v_world);
    vec3 n = normalize(v_normal);
    if (!gl_FrontFacing) n = -n;
    float n_v = clamp(dot(n, v), 0.0, 1.0);
    float n_l = dot(n, u_key_dir);
    float vis = v_vis;
    n_l = max(n_l, 0.0) * vis;
    float n_f = max(dot(n, u_fill_dir), 0.0);
    vec3 ambient = mix(u_floor, u_sky, 0.5 + 0.5 * n.y) * mix(0.8, 1.0, vis);
    vec3 e_direct = u_key * n_l + u_fill * n_f;
    vec3 color = u_base * (ambient + e_direct * (1.0 / 3.14159265));
    vec3 h = normalize(u_key_dir + v);
    color += u_spec * pow(max(dot(n, h), 0.0), u_shininess) * u_key * n_l;
    float g = 1.0 - n_v;
    color += u_sheen * (g * g * g) * (ambient + 0.25 * e_direct);
    frag_color = vec4(linear_to_srgb(tonemap(color * u_exposure)), 1.0);
}
