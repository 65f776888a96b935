#version 450 core
// Visibility-buffer shading (Burns & Hunt 2013, "The Visibility Buffer"): one invocation per pixel
// reads the pixel's SAMPLES triangle ids (visibility.frag); for each distinct id it fetches the
// triangle's vertices (vertex textures, render.visibility.VisibilityGeometry), intersects the
// camera ray through the pixel centre with its plane (barycentrics, and ray differentials for
// texture filtering and the normal map's tangent frame), interpolates position, normal and uv, and
// shades with the forward pass's code (shade_surface, ground_colour). Each sample gets its
// surface's tone-mapped, sRGB-encoded colour; their average (coverage-weighted: the MSAA resolve)
// goes to u_out. The forward pass also shades at the pixel centre, extrapolating the triangle's
// plane, so an unmerged frame matches it up to float rounding and its resolve's 8-bit rounding.
// The floor's samples (one id) are shaded once.
// COMPUTE_IDS: the ids come from the compute rasteriser's storage buffer (render.raster), not the
// MSAA texture.
// MERGE: samples of distinct triangles of one mesh that share a vertex share one shading.
// Defines: SAMPLES, SLOTS (meshes), TEX_WIDTH, UV_MASK, BASE_TEX_MASK, NORMAL_MAP_MASK,
// MR_TEX_MASK (bit k: slot k has uvs / that texture; textured slots are 0..5, their textures on
// units 8-13, 14-19, 20-25; the vertex textures on 26-29), MERGE and the lighting ones
// (LIGHT_COUNT, SHADOWS, KEY_SHADOW, HAS_GROUND, TRANSPARENT, TONEMAP).

layout(local_size_x = 8, local_size_y = 8) in;

#include "include/colour.glsl"
#include "include/surface.glsl"
#include "include/tonemap.glsl"
#include "include/normal_map.glsl"
#ifdef HAS_GROUND
#include "include/ground_shade.glsl"
#endif

#define GROUND_OBJECT 255u
#define DERIV_STEP 0.125                 // pixels: the step of the derivatives' difference quotients

#ifdef COMPUTE_IDS
// the compute rasteriser's ids (render.raster): (id, depth bits) per sample, pixel-major; 0xFFFFFFFF = none
layout(std430, binding = 4) readonly buffer VisIds { uvec2 vis_ids[]; };
#else
uniform usampler2DMS u_vis;                         // triangle id per sample (visibility.frag)
#endif
layout(rgba8, binding = 0) writeonly uniform image2D u_out;   // premultiplied display colour

// mesh data of all slots, TEX_WIDTH texels a row (render.visibility.VisibilityGeometry): each
// slot's vertices from u_vertex_base[slot], its triangles from u_triangle_base[slot]
// (GEOMETRY_BUFFERS: the same data in storage buffers, tightly packed: GPUs, where filling the
// textures went through a slow pixel-upload path)
#ifdef GEOMETRY_BUFFERS
layout(std430, binding = 5) readonly buffer VisPositions { float vis_positions[]; };
layout(std430, binding = 6) readonly buffer VisNormals { float vis_normals[]; };
layout(std430, binding = 7) readonly buffer VisUvs { float vis_uvs[]; };
layout(std430, binding = 8) readonly buffer VisTriangles { uint vis_triangles[]; };
#else
layout(binding = 26) uniform sampler2D u_vis_positions;  // [m], xyz
layout(binding = 27) uniform sampler2D u_vis_normals;    // xyz
layout(binding = 28) uniform sampler2D u_vis_uvs;        // uv
layout(binding = 29) uniform usampler2D u_vis_triangles; // vertex indices, local to the slot
#endif

uniform mat4 u_inv_view_proj;       // clip -> world
uniform ivec2 u_size;               // image [px]
uniform vec3 u_camera_pos;
uniform float u_exposure;
uniform vec4 u_clear;               // premultiplied display colour where nothing was drawn
uniform float u_ground_y;           // floor height [m]

uniform uint u_vertex_base[SLOTS];
uniform uint u_triangle_base[SLOTS];
uniform vec4 u_base_colors[SLOTS];         // linear RGBA
uniform vec3 u_sheen_colors[SLOTS];        // linear
uniform vec4 u_mat_params[SLOTS];          // metallic, roughness, sheen roughness (raw factors), 0
uniform vec4 u_uv_params[SLOTS];           // uv scale (2), normal scale (2)

#if BASE_TEX_MASK != 0
layout(binding = 8) uniform sampler2D u_base_textures[6];     // sRGB (decoded by the sampler)
#endif
#if NORMAL_MAP_MASK != 0
layout(binding = 14) uniform sampler2D u_normal_maps[6];
#endif
#if MR_TEX_MASK != 0
layout(binding = 20) uniform sampler2D u_mr_textures[6];
#endif

// Sampler arrays may only be indexed by constants: one case per textured slot. The ray
// differentials give textureGrad the derivatives mesh.frag's implicit lookups take from the quad
// (on llvmpipe through a sampler without anisotropy: its anisotropic filter reads the quad
// derivatives that a compute shader does not have).
#define TEX_SAMPLE(T, uv, dx, dy) textureGrad(T, uv, dx, dy)
#define TEX_CASE(ARR, MASK, K) if (((MASK) & (1 << K)) != 0 && slot == K) texel = TEX_SAMPLE(ARR[K], uv, dx, dy);
#define TEX_CASES(ARR, MASK) TEX_CASE(ARR, MASK, 0) TEX_CASE(ARR, MASK, 1) TEX_CASE(ARR, MASK, 2) \
    TEX_CASE(ARR, MASK, 3) TEX_CASE(ARR, MASK, 4) TEX_CASE(ARR, MASK, 5)

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
    int slot;          // mesh slot
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

#ifdef GEOMETRY_BUFFERS
#define VEC3_AT(T, I) vec3(T[3u * (I)], T[3u * (I) + 1u], T[3u * (I) + 2u])
#define VEC2_AT(T, I) vec2(T[2u * (I)], T[2u * (I) + 1u])
#define TRIANGLE_AT(I) uvec3(vis_triangles[3u * (I)], vis_triangles[3u * (I) + 1u], vis_triangles[3u * (I) + 2u])
#define u_vis_positions vis_positions
#define u_vis_normals vis_normals
#define u_vis_uvs vis_uvs
#else
#define TEXEL(T, I) texelFetch(T, ivec2(int((I) % uint(TEX_WIDTH)), int((I) / uint(TEX_WIDTH))), 0)
#define VEC3_AT(T, I) TEXEL(T, I).xyz
#define VEC2_AT(T, I) TEXEL(T, I).xy
#define TRIANGLE_AT(I) TEXEL(u_vis_triangles, I).xyz
#endif

// The global vertex indices of mesh triangle id.
uvec3 triangle_vertices(uint id) {
    int slot = int(id >> 24) - 1;
    return TRIANGLE_AT(u_triangle_base[slot] + (id & 0xFFFFFFu)) + u_vertex_base[slot];
}

// The point of mesh triangle id (global vertex indices vi) seen through the pixel centre (d: the
// ray's direction; d_x, d_y: the rays DERIV_STEP pixels right and up). The derivatives per pixel
// are difference quotients over that small step: the rasteriser's derivatives are those of the
// plane's attribute interpolation at the pixel, and a whole-pixel difference blows up on steep
// (nearly edge-on) triangles, where the next pixel's ray meets the plane far away.
Hit reconstruct(uint id, uvec3 vi, vec3 d, vec3 d_x, vec3 d_y) {
    Hit h;
    h.uv = h.duvdx = h.duvdy = vec2(0.0);
    int slot = int(id >> 24) - 1;
    h.slot = slot;
    vec3 a = VEC3_AT(u_vis_positions, vi.x);
    vec3 e1 = VEC3_AT(u_vis_positions, vi.y) - a;
    vec3 e2 = VEC3_AT(u_vis_positions, vi.z) - a;
    vec3 w = barycentrics(a, e1, e2, d);
    vec3 wx = (barycentrics(a, e1, e2, d_x) - w) * (1.0 / DERIV_STEP);
    vec3 wy = (barycentrics(a, e1, e2, d_y) - w) * (1.0 / DERIV_STEP);
    h.p = a + e1 * w.y + e2 * w.z;
    h.dpdx = e1 * wx.y + e2 * wx.z;
    h.dpdy = e1 * wy.y + e2 * wy.z;
    vec3 n = VEC3_AT(u_vis_normals, vi.x) * w.x + VEC3_AT(u_vis_normals, vi.y) * w.y + VEC3_AT(u_vis_normals, vi.z) * w.z;
    h.n = normalize(n);
    if (dot(cross(e1, e2), u_camera_pos - a) < 0.0) h.n = -h.n;   // back face: cloth is seen from both sides
    if (slot_has(UV_MASK, slot)) {
        vec2 scale = u_uv_params[slot].xy;
        vec2 ua = VEC2_AT(u_vis_uvs, vi.x);
        vec2 f1 = VEC2_AT(u_vis_uvs, vi.y) - ua, f2 = VEC2_AT(u_vis_uvs, vi.z) - ua;
        h.uv = (ua + f1 * w.y + f2 * w.z) * scale;
        h.duvdx = (f1 * wx.y + f2 * wx.z) * scale;
        h.duvdy = (f1 * wy.y + f2 * wy.z) * scale;
    }
    return h;
}

// The display colour of a mesh hit: the material as mesh.frag assembles it (textures, normal map),
// then shade_surface (the key light's shadow lookup with mesh.frag's slope bias), tone map, sRGB.
vec4 shade_mesh(Hit h) {
    int slot = h.slot;
    vec3 n = h.n;
    Material m;
    vec4 params = u_mat_params[slot];
    m.base_color = u_base_colors[slot].rgb;
    m.metallic = params.x;
    m.roughness = clamp(params.y, 0.03, 1.0);
    m.sheen_color = u_sheen_colors[slot];
    m.sheen_roughness = clamp(params.z, 0.03, 1.0);
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
    vec3 v = normalize(u_camera_pos - h.p);
    vec3 color = shade_surface(m, n, v, h.p);
    return vec4(linear_to_srgb(tonemap(color * u_exposure)), 1.0);
}

// Two samples' triangles belong to one smooth surface, so one shading serves both (MERGE): the same
// mesh, and they share a vertex. Neighbouring triangles of a mesh with smooth vertex normals
// extrapolate to nearly the same position and normal at the pixel centre (the normal changes by
// about the angle between its vertex normals across a triangle); a silhouette against another
// part of the mesh or another mesh has no shared vertex.
bool same_surface(uint ida, uvec3 va, uint idb, uvec3 vb) {
    return (ida >> 24) == (idb >> 24)
        && (any(equal(va, vb.xxx)) || any(equal(va, vb.yyy)) || any(equal(va, vb.zzz)));
}

// The loops over samples have constant bounds (unrolled: arrays stay in registers) and each
// shading has one call site inside a loop: a SIMD rasteriser such as llvmpipe runs both sides of a
// divergent branch, but leaves a loop as soon as no lane of the block needs another iteration. So
// the floor is shaded only in blocks that show it, and meshes as often as the block's most
// distinct mesh surfaces (usually once, twice on an edge).
void main() {
    ivec2 px = ivec2(gl_GlobalInvocationID.xy);
    if (any(greaterThanEqual(px, u_size))) return;
    uint ids[SAMPLES];
    vec4 acc = vec4(0.0);
    int todo = 0;                                  // bit s: sample s still needs a colour
    for (int s = 0; s < SAMPLES; ++s) {
#ifdef COMPUTE_IDS
        ids[s] = vis_ids[uint(px.y * u_size.x + px.x) * uint(SAMPLES) + uint(s)].x;
        if (ids[s] == 0xFFFFFFFFu) ids[s] = 0u;
#else
        ids[s] = texelFetch(u_vis, px, s).r;
#endif
        if (ids[s] == 0u) acc += u_clear;          // nothing drawn there: the backdrop
        else todo |= 1 << s;
    }
    vec2 c = vec2(px) + 0.5;
    vec3 d = ray_dir(c);
#ifdef HAS_GROUND
    int floor_bits = 0;                            // the floor: one id, one shading for its samples
    for (int s = 0; s < SAMPLES; ++s) {
        if ((ids[s] >> 24) == GROUND_OBJECT) floor_bits |= 1 << s;
    }
    todo &= ~floor_bits;
    for (int g = 0; g < 1 && floor_bits != 0; ++g) {
        acc += float(bitCount(floor_bits)) * ground_colour(u_camera_pos + d * ((u_ground_y - u_camera_pos.y) / d.y));
    }
#endif
    if (todo != 0) {
        vec3 d_x = ray_dir(c + vec2(DERIV_STEP, 0.0)), d_y = ray_dir(c + vec2(0.0, DERIV_STEP));
        uvec3 tv[SAMPLES];                         // each sample's triangle (global vertex indices)
        for (int s = 0; s < SAMPLES; ++s) {
            bool repeat = s > 0 && ids[s] == ids[s - 1];
            if ((todo & (1 << s)) != 0 && !repeat) tv[s] = triangle_vertices(ids[s]);
            else if (repeat) tv[s] = tv[s - 1];
            else tv[s] = uvec3(0xFFFFFFFFu);
        }
        for (int k = 0; k < SAMPLES && todo != 0; ++k) {
            int r = findLSB(todo);
            uint id = ids[0];
            uvec3 vr = tv[0];
            for (int s = 1; s < SAMPLES; ++s) {
                if (s == r) {
                    id = ids[s];
                    vr = tv[s];
                }
            }
            float weight = 0.0;
            for (int s = 0; s < SAMPLES; ++s) {
                bool same = ids[s] == id;
#ifdef MERGE
                same = same || same_surface(id, vr, ids[s], tv[s]);
#endif
                if ((todo & (1 << s)) != 0 && same) {
                    weight += 1.0;
                    todo &= ~(1 << s);
                }
            }
            acc += weight * shade_mesh(reconstruct(id, vr, d, d_x, d_y));
        }
    }
    imageStore(u_out, px, acc / float(SAMPLES));
}
