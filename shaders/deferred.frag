#version 450 core
// Deferred shading with MSAA: one invocation per pixel reads the SAMPLES G-buffer samples, shades
// each distinct surface among them once (see same_surface), tone maps and encodes each sample's
// colour, and writes their average: the MSAA resolve folded in.
// The forward pass shades every fragment of every (small) triangle, most of them in partly covered
// pixel blocks; here the expensive shading runs once per visible surface per pixel.
// Defines: SAMPLES, SLOTS (mesh materials), GROUND_SLOT, LIGHT_COUNT, SHADOWS, KEY_SHADOW,
// TRANSPARENT, HAS_GROUND, TONEMAP.

#include "include/colour.glsl"
#include "include/surface.glsl"
#include "include/tonemap.glsl"
#ifdef HAS_GROUND
#include "include/ground_shade.glsl"
#endif

uniform sampler2DMS u_g_position;   // world position [m], slot (0: nothing drawn)
uniform sampler2DMS u_g_normal;     // shading normal, roughness
uniform sampler2DMS u_g_base;       // linear base colour, metallic
uniform vec3 u_camera_pos;
uniform float u_exposure;
uniform vec4 u_clear;               // premultiplied display colour where nothing was drawn
uniform float u_merge_scale;        // half a pixel's footprint per metre of distance from the eye
#ifndef MERGE_COS
#define MERGE_COS 0.9962            // cos(5 degrees)
#endif
uniform vec3 u_sheen_colors[SLOTS];        // linear, per slot (slot 1 at index 0)
uniform float u_sheen_roughnesses[SLOTS];  // clamped to [0.03, 1]

out vec4 frag_color;

// The display colour of one G-buffer sample that shows a mesh or the floor (slot > 0). One call
// site, so the SIMD rasterizer (llvmpipe runs both sides of a divergent branch) pays for one
// shading per distinct surface, not one per branch.
vec4 shade_sample(vec4 gp, vec4 gn, vec4 gb) {
    int slot = int(gp.w + 0.5);
    vec3 p = gp.xyz;
    bool ground = false;
#ifdef HAS_GROUND
    ground = slot == GROUND_SLOT;
#endif
    vec3 n = normalize(gn.xyz);
    // one shadow lookup for the floor (no bias, as ground.frag) and meshes (as mesh.frag)
    float key_vis = 1.0;
#ifdef SHADOWS
    float n_l_raw = dot(n, u_light_vec[0].xyz);
    float n_l = clamp(n_l_raw, 0.05, 1.0);
    float bias = ground ? 0.0 : 0.0015 * sqrt(1.0 - n_l * n_l) / n_l;
    key_vis = (!ground && n_l_raw <= 0.0) ? 0.0 : key_visibility(p, bias);
#endif
#ifdef HAS_GROUND
    if (ground) return ground_colour_vis(p, key_vis);
#endif
    Material m;
    m.base_color = gb.rgb;
    m.metallic = gb.a;
    m.roughness = gn.w;
    m.sheen_color = u_sheen_colors[clamp(slot - 1, 0, SLOTS - 1)];
    m.sheen_roughness = u_sheen_roughnesses[clamp(slot - 1, 0, SLOTS - 1)];
    vec3 v = normalize(u_camera_pos - p);
    vec3 color = shade_surface_vis(m, n, v, p, key_vis);
    return vec4(linear_to_srgb(tonemap(color * u_exposure)), 1.0);
}

// Two samples show the same smooth surface (then one shading serves both): the same slot,
// positions within half a pixel's footprint and normals within MERGE_COS. Neighbouring triangles
// of one surface extrapolate to nearly the same values at the pixel centre; silhouettes and folds
// differ by far more.
bool same_surface(vec4 pa, vec4 na, vec4 pb, vec4 nb) {
    if (pa.w != pb.w) return false;
    float tol = u_merge_scale * distance(u_camera_pos, pa.xyz);
    return distance(pa.xyz, pb.xyz) <= tol && dot(na.xyz, nb.xyz) >= MERGE_COS && abs(na.w - nb.w) < 1e-3;
}

void main() {
    ivec2 px = ivec2(gl_FragCoord.xy);
    vec4 gp[SAMPLES], gn[SAMPLES];
    vec4 acc = vec4(0.0);
    int todo = 0;                                  // bit s: sample s still needs a colour
    for (int s = 0; s < SAMPLES; ++s) {
        gp[s] = texelFetch(u_g_position, px, s);
        gn[s] = texelFetch(u_g_normal, px, s);
        if (gp[s].w == 0.0) acc += u_clear;        // nothing drawn there: the backdrop
        else todo |= 1 << s;
    }
    // one shading per distinct surface: the loop runs as often as the pixel (in fact its SIMD
    // block) has distinct surfaces, usually once, twice on an edge
    for (int k = 0; k < SAMPLES && todo != 0; ++k) {
        int r = findLSB(todo);
        vec4 pr = gp[0], nr = gn[0];
        for (int s = 1; s < SAMPLES; ++s) {
            if (s == r) { pr = gp[s]; nr = gn[s]; }
        }
        vec4 c = shade_sample(pr, nr, texelFetch(u_g_base, px, r));
        for (int s = 0; s < SAMPLES; ++s) {
            if ((todo & (1 << s)) != 0 && (s == r || same_surface(pr, nr, gp[s], gn[s]))) {
                acc += c;
                todo &= ~(1 << s);
            }
        }
    }
    frag_color = acc / float(SAMPLES);
}
