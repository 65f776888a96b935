#version 450 core
// Per-vertex key-light visibility for the preview look, captured by transform feedback into a buffer
// once per shadow-map redraw (when the meshes move), so the per-pixel shader does no shadow lookups:
// the shadow is interpolated across each triangle (soft; as fine as the mesh).
// 3 x 3 bilinear compare taps (a 4 x 4 texel footprint) at the vertex, pushed 1.5 texels along the
// normal on the lit side (cloth is one sheet: the side facing the key) against self-shadowing.

in vec3 in_position;
in vec3 in_normal;

uniform sampler2DShadow u_shadow;   // key-light depth map, compare mode on, linear filter
uniform mat4 u_light_view_proj;     // world -> key clip (orthographic)
uniform vec3 u_key_dir;             // unit vector towards the key
uniform float u_shadow_texel;       // one shadow-map texel in uv
uniform float u_texel_world;        // one shadow-map texel [m]
uniform float u_shadow_bias;        // light-depth units

out float out_vis;

void main() {
    vec3 n = in_normal;
    if (dot(n, u_key_dir) < 0.0) n = -n;
    vec3 p = in_position + n * (1.5 * u_texel_world);
    vec4 c = u_light_view_proj * vec4(p, 1.0);
    vec3 s = c.xyz * 0.5 + 0.5;
    float z = s.z - u_shadow_bias;
    float lit = 0.0;
    for (int i = -1; i <= 1; ++i) {
        for (int j = -1; j <= 1; ++j) {
            lit += texture(u_shadow, vec3(s.xy + vec2(i, j) * u_shadow_texel, z));
        }
    }
    out_vis = lit / 9.0;
}
