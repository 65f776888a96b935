#version 450 core
// Visibility-buffer shading (Burns & Hunt 2013, "The Visibility Buffer"): one invocation per pixel
// reads the pixel's SAMPLES triangle ids (visibility.frag), and for each distinct id fetches the
// triangle's vertices from the mesh buffers, intersects the camera ray through the pixel centre with
// it (barycentrics, and ray differentials one pixel right and up for texture filtering and the
// normal map's tangent frame), interpolates position, normal and uv, and shades with the forward
// pass's code (shade_surface_vis, ground_colour_vis). Each sample gets its surface's tone-mapped,
// sRGB-encoded colour; their average (coverage-weighted: the MSAA resolve) goes to u_out.
// The forward pass also shades at the pixel centre, extrapolating the triangle's plane, so an
// unmerged frame matches it up to float rounding and the 8-bit quantisation of its resolve.
// MERGE: samples of distinct triangles of one smooth surface (same mesh, positions within half a
// pixel's footprint, normals within MERGE_COS) share one shading, as in deferred.frag.
// Defines: SAMPLES, SLOTS (meshes), UV_MASK, BASE_TEX_MASK, NORMAL_MAP_MASK, MR_TEX_MASK (bit k:
// slot k has uvs / that texture; textured slots are 0..7), MERGE, MERGE_COS, and the lighting ones
// (LIGHT_COUNT, SHADOWS, KEY_SHADOW, HAS_GROUND, TRANSPARENT, TONEMAP), EXPLICIT_LOD.

layout(local_size_x = 8, local_size_y = 8) in;

#include "include/colour.glsl"
#include "include/surface.glsl"
#include "include/tonemap.glsl"
#include "include/normal_map.glsl"
#ifdef HAS_GROUND
#include "include/ground_shade.glsl"
#endif

#ifndef MERGE_COS
#define MERGE_COS 0.9962            // cos(5 degrees)
#endif
#define GROUND_OBJECT 255u

uniform usampler2DMS u_vis;                         // triangle id per sample (visibility.frag)
layout(rgba8, binding = 0) writeonly uniform image2D u_out;   // premultiplied display colour

// mesh data of all slots (each slot's vertices from u_vertex_base[slot], its triangles from
// u_triangle_base[slot]; indices are local to the slot)
layout(std430, binding = 0) readonly buffer VisPositions { float vis_positions[]; };  // [m], xyz
layout(std430, binding = 1) readonly buffer VisNormals { float vis_normals[]; };      // xyz
layout(std430, binding = 2) readonly buffer VisUvs { float vis_uvs[]; };              // uv
layout(std430, binding = 3) readonly buffer VisIndices { uint vis_indices[]; };       // 3 per triangle

uniform mat4 u_inv_view_proj;       // clip -> world
uniform ivec2 u_size;               // image [px]
uniform vec3 u_camera_pos;
uniform float u_exposure;
uniform vec4 u_clear;               // premultiplied display colour where nothing was drawn
uniform float u_merge_scale;        // half a pixel's footprint per metre of distance from the eye
uniform float u_ground_y;           // floor height [m]

uniform uint u_vertex_base[SLOTS];
uniform uint u_triangle_base[SLOTS];
uniform vec4 u_base_colors[SLOTS];         // linear RGBA
uniform vec3 u_sheen_colors[SLOTS];        // linear
uniform vec4 u_mat_params[SLOTS];          // metallic, roughness, sheen roughness (raw factors), 0
uniform vec4 u_uv_params[SLOTS];           // uv scale (2), normal scale (2)

#if BASE_TEX_MASK != 0
layout(binding = 8) uniform sampler2D u_base_textures[8];     // sRGB (decoded by the sampler)
#endif
#if NORMAL_MAP_MASK != 0
layout(binding = 16) uniform sampler2D u_normal_maps[8];
#endif
#if MR_TEX_MASK != 0
layout(binding = 24) uniform sampler2D u_mr_textures[8];
#endif

// Sampler arrays may only be indexed by constants: one case per textured slot.
// EXPLICIT_LOD (software rasterisers): llvmpipe's textureGrad, and textureLod with a level that
// varies between the lanes of a compute shader, returned wrong texels (stripes where neighbouring
// invocations wanted different levels). There the level comes from the ray differentials
// (isotropic: the GL formula without anisotropy) and the trilinear blend is made by hand from
// lookups whose level is the same in every lane (one per mip level of the texture). GPUs take
// textureGrad with the sampler's anisotropic filtering, as mesh.frag's implicit derivatives.
#ifdef EXPLICIT_LOD
vec4 sample_explicit_lod(sampler2D t, vec2 uv, vec2 dx, vec2 dy) {
    vec2 size = vec2(textureSize(t, 0));
    int levels = textureQueryLevels(t);
    float rho = max(length(dx * size), length(dy * size));
    float lod = clamp(log2(max(rho, 1e-8)), 0.0, float(levels - 1));
    float base = floor(lod), f = lod - base;
    vec4 texel = vec4(0.0);
    for (int level = 0; level < levels; ++level) {
        float w = float(level) == base ? 1.0 - f : (float(level) == base + 1.0 ? f : 0.0);
        texel += w * textureLod(t, uv, float(level));
    }
    return texel;
}
#define TEX_SAMPLE(T, uv, dx, dy) sample_explicit_lod(T, uv, dx, dy)
#else
#define TEX_SAMPLE(T, uv, dx, dy) textureGrad(T, uv, dx, dy)
#endif
#define TEX_CASE(ARR, MASK, K) if (((MASK) & (1 << K)) != 0 && slot == K) texel = TEX_SAMPLE(ARR[K], uv, dx, dy);
#define TEX_CASES(ARR, MASK) TEX_CASE(ARR, MASK, 0) TEX_CASE(ARR, MASK, 1) TEX_CASE(ARR, MASK, 2) \
    TEX_CASE(ARR, MASK, 3) TEX_CASE(ARR, MASK, 4) TEX_CASE(ARR, MASK, 5) TEX_CASE(ARR, MASK, 6) TEX_CASE(ARR, MASK, 7)

vec4 base_texture(int slot, vec2 uv, vec2 dx, vec2 dy) {
    vec4 texel = vec4(1.0);
#if BASE_TEX_MASK != 0
    TEX_CASES(u_base_textures, BASE_TEX_MASK)
#endif
    return texel;
}

vec4 normal_texture(int slot, vec2 uv, vec2 dx, vec2 dy) {
    vec4 texel = vec4(0.5, 0.5, 1.0, 1.0);
#if NORMAL_MAP_MASK != 0
    TEX_CASES(u_normal_maps, NORMAL_MAP_MASK)
#endif
    return texel;
}

vec4 mr_texture(int slot, vec2 uv, vec2 dx, vec2 dy) {
    vec4 texel = vec4(1.0);
#if MR_TEX_MASK != 0
    TEX_CASES(u_mr_textures, MR_TEX_MASK)
#endif
    return texel;
}

bool slot_has(int mask, int slot) { return (mask & (1 << slot)) != 0; }

// A surface point seen through the pixel centre.
struct Hit {
    vec3 p;            // world position [m]
    vec3 n;            // unit interpolated normal, on the viewer's side
    vec3 dpdx, dpdy;   // position change one pixel right / up
    vec2 uv, duvdx, duvdy;   // scaled uv and its changes (slots with uvs)
    int slot;          // mesh slot; -1: the floor
};

// Direction (not unit) of the camera ray through window point w (pixel centre = integer + 0.5).
vec3 ray_dir(vec2 w) {
    vec4 q = u_inv_view_proj * vec4(w / vec2(u_size) * 2.0 - 1.0, 1.0, 1.0);
    return q.xyz / q.w - u_camera_pos;
}

// Barycentrics (w0, w1, w2) of the ray u_camera_pos + t d on the plane of triangle (a, a + e1,
// a + e2) (Möller-Trumbore, not restricted to the triangle: the rasteriser extrapolates the same
// way at pixel centres outside it). A ray parallel to the plane gets the centroid.
vec3 barycentrics(vec3 a, vec3 e1, vec3 e2, vec3 d) {
    vec3 pv = cross(d, e2);
    float det = dot(e1, pv);
    if (abs(det) <= 1e-7 * length(d) * length(e1) * length(e2)) return vec3(1.0 / 3.0);
    vec3 tv = u_camera_pos - a;
    float inv = 1.0 / det;
    float u = dot(tv, pv) * inv;
    float v = dot(d, cross(tv, e1)) * inv;
    return vec3(1.0 - u - v, u, v);
}

#define VEC3_AT(BUF, I) vec3(BUF[3u * (I)], BUF[3u * (I) + 1u], BUF[3u * (I) + 2u])
#define VEC2_AT(BUF, I) vec2(BUF[2u * (I)], BUF[2u * (I) + 1u])

Hit reconstruct(uint id, vec3 d, vec3 d_x, vec3 d_y) {
    Hit h;
    h.uv = h.duvdx = h.duvdy = vec2(0.0);
    uint obj = id >> 24;
    if (obj == GROUND_OBJECT) {       // the floor y = u_ground_y
        h.slot = -1;
        h.p = u_camera_pos + d * ((u_ground_y - u_camera_pos.y) / d.y);
        h.n = vec3(0.0, 1.0, 0.0);
        h.dpdx = h.dpdy = vec3(0.0);
        return h;
    }
    int slot = int(obj) - 1;
    h.slot = slot;
    uint t = u_triangle_base[slot] + (id & 0xFFFFFFu);
    uvec3 vi = uvec3(vis_indices[3u * t], vis_indices[3u * t + 1u], vis_indices[3u * t + 2u]) + u_vertex_base[slot];
    vec3 a = VEC3_AT(vis_positions, vi.x);
    vec3 e1 = VEC3_AT(vis_positions, vi.y) - a;
    vec3 e2 = VEC3_AT(vis_positions, vi.z) - a;
    vec3 w = barycentrics(a, e1, e2, d);
    vec3 wx = barycentrics(a, e1, e2, d_x) - w;
    vec3 wy = barycentrics(a, e1, e2, d_y) - w;
    h.p = a + e1 * w.y + e2 * w.z;
    h.dpdx = e1 * wx.y + e2 * wx.z;
    h.dpdy = e1 * wy.y + e2 * wy.z;
    vec3 n = VEC3_AT(vis_normals, vi.x) * w.x + VEC3_AT(vis_normals, vi.y) * w.y + VEC3_AT(vis_normals, vi.z) * w.z;
    h.n = normalize(n);
    if (dot(cross(e1, e2), u_camera_pos - a) < 0.0) h.n = -h.n;   // back face: cloth is seen from both sides
    if (slot_has(UV_MASK, slot)) {
        vec2 scale = u_uv_params[slot].xy;
        vec2 ua = VEC2_AT(vis_uvs, vi.x);
        vec2 f1 = VEC2_AT(vis_uvs, vi.y) - ua, f2 = VEC2_AT(vis_uvs, vi.z) - ua;
        h.uv = (ua + f1 * w.y + f2 * w.z) * scale;
        h.duvdx = (f1 * wx.y + f2 * wx.z) * scale;
        h.duvdy = (f1 * wy.y + f2 * wy.z) * scale;
    }
    return h;
}

// The display colour (premultiplied RGBA) of a hit: the material as mesh.frag assembles it, the
// key light's visibility as deferred.frag looks it up (one lookup for floor and meshes), then
// shade_surface_vis / ground_colour_vis. One call site in main().
vec4 shade_hit(Hit h) {
    bool ground = h.slot < 0;
    int slot = max(h.slot, 0);
    vec3 n = h.n;
    Material m;
    vec4 params = u_mat_params[slot];
    m.base_color = u_base_colors[slot].rgb;
    m.metallic = params.x;
    m.roughness = clamp(params.y, 0.03, 1.0);
    m.sheen_color = u_sheen_colors[slot];
    m.sheen_roughness = clamp(params.z, 0.03, 1.0);
    if (!ground) {
        if (slot_has(BASE_TEX_MASK, slot)) m.base_color *= base_texture(slot, h.uv, h.duvdx, h.duvdy).rgb;
        if (slot_has(NORMAL_MAP_MASK, slot)) {
            vec3 tn = normal_texture(slot, h.uv, h.duvdx, h.duvdy).xyz * 2.0 - 1.0;
            tn.xy *= u_uv_params[slot].zw;
            n = normalize(cotangent_frame(n, h.dpdx, h.dpdy, h.duvdx, h.duvdy) * tn);
        }
        if (slot_has(MR_TEX_MASK, slot)) {
            vec4 mr = mr_texture(slot, h.uv, h.duvdx, h.duvdy);
            m.metallic *= mr.b;
            m.roughness = clamp(params.y * mr.g, 0.03, 1.0);
        }
    }
    float key_vis = 1.0;
#ifdef SHADOWS
    float n_l_raw = dot(n, u_light_vec[0].xyz);
    float n_l = clamp(n_l_raw, 0.05, 1.0);
    float bias = ground ? 0.0 : 0.0015 * sqrt(1.0 - n_l * n_l) / n_l;
    key_vis = (!ground && n_l_raw <= 0.0) ? 0.0 : key_visibility(h.p, bias);
#endif
#ifdef HAS_GROUND
    if (ground) return ground_colour_vis(h.p, key_vis);
#endif
    vec3 v = normalize(u_camera_pos - h.p);
    vec3 color = shade_surface_vis(m, n, v, h.p, key_vis);
    return vec4(linear_to_srgb(tonemap(color * u_exposure)), 1.0);
}

// Two hits on one smooth surface (one shading serves both): as deferred.frag's same_surface.
bool same_surface(Hit a, Hit b) {
    if (a.slot != b.slot || a.slot < 0) return false;
    float tol = u_merge_scale * distance(u_camera_pos, a.p);
    return distance(a.p, b.p) <= tol && dot(a.n, b.n) >= MERGE_COS;
}

void main() {
    ivec2 px = ivec2(gl_GlobalInvocationID.xy);
    if (any(greaterThanEqual(px, u_size))) return;
    uint ids[SAMPLES];
    vec4 acc = vec4(0.0);
    bool any_drawn = false;
    for (int s = 0; s < SAMPLES; ++s) {
        ids[s] = texelFetch(u_vis, px, s).r;
        if (ids[s] == 0u) acc += u_clear;     // nothing drawn there: the backdrop
        else any_drawn = true;
    }
    if (any_drawn) {
        vec2 c = vec2(px) + 0.5;
        vec3 d = ray_dir(c), d_x = ray_dir(c + vec2(1.0, 0.0)), d_y = ray_dir(c + vec2(0.0, 1.0));
        // each distinct id reconstructed once; weight = the samples it covers
        Hit hits[SAMPLES];
        uint hit_id[SAMPLES];
        int weight[SAMPLES];
        int count = 0;
        for (int s = 0; s < SAMPLES; ++s) {
            if (ids[s] == 0u) continue;
            int k = 0;
            while (k < count && hit_id[k] != ids[s]) ++k;
            if (k < count) {
                weight[k] += 1;
            } else {
                hit_id[count] = ids[s];
                weight[count] = 1;
                hits[count] = reconstruct(ids[s], d, d_x, d_y);
                ++count;
            }
        }
#ifdef MERGE
        for (int i = 1; i < count; ++i) {
            for (int j = 0; j < i; ++j) {
                if (weight[j] > 0 && same_surface(hits[j], hits[i])) {
                    weight[j] += weight[i];
                    weight[i] = 0;
                    break;
                }
            }
        }
#endif
        for (int i = 0; i < count; ++i) {
            if (weight[i] > 0) acc += float(weight[i]) * shade_hit(hits[i]);
        }
    }
    imageStore(u_out, px, acc / float(SAMPLES));
}
