#version 450 core
// Compute-shader triangle rasteriser ("software raster": Laine & Karras 2011, Nanite): one
// invocation per triangle of one mesh. It transforms the triangle's vertices, culls it when it lies
// wholly outside one clip plane, and sends it to the hardware fallback (raster_fallback.*: an
// indirect draw of the listed triangles) when a vertex is at or behind the eye plane (w <= 0: the
// GL clipper's case) or its pixel bounding box is larger than MAX_PIXELS. Otherwise it snaps the
// window positions to 1/256 px (SUBPIXEL_BITS 8, as the GL rasterisers snap), and for every sample
// of every pixel of its bounding box evaluates the three edge functions exactly in 32-bit integers
// (a box of at most MAX_SPAN = 64 px a side keeps every product below 2^30), with a consistent fill
// rule (a sample on an edge shared by two triangles belongs to exactly one of them: no holes, no
// double hits; the rule below), interpolates window depth z (affine in window space) and keeps the sample when
// 0 <= z < 1 (the near/far clip planes and the depth test against the cleared 1.0). No face culling
// (cloth is seen from both sides; the hardware passes draw with culling off).
//
// Modes (one define):
//   MODE_ID64: target = uint64 per sample, (depth bits << 32) | triangle id; one atomicMin keeps the
//       nearest triangle, the lower id on equal depth (the first drawn, as the depth test "<").
//       Needs GL_NV_shader_atomic_int64.
//   MODE_ID32: target = uvec2 per sample (x: id, y: depth bits). u_pass 0: atomicMin on the depth;
//       u_pass 1 (after a barrier): atomicMin on the id where the sample's depth equals the
//       stored one. One program for both passes, so the depth bits are computed identically.
//   MODE_DEPTH: target = uint per sample (depth bits): the shadow map.
//   MODE_HEIGHT: target = uint per sample: the lowest height above u_ground_y (bits of max(h, 0))
//       among the surfaces drawn there: the contact map (occlusion exp(-h / h0) = the max of the
//       hardware pass's MAX blend).
// Non-negative floats order like their bits as unsigned integers: atomicMin on the bits is a float min.
// Defines: SAMPLES, one MODE_*, MAX_PIXELS, LOCAL_SIZE, FILL_DY_SIGN, FILL_DX_SIGN.

#include "include/raster_target.glsl"

layout(local_size_x = LOCAL_SIZE) in;

layout(std430, binding = 0) readonly buffer Positions { float positions[]; };   // xyz per vertex [m]
layout(std430, binding = 1) readonly buffer Indices { uint indices[]; };        // 3 per triangle
// the fallback: a DrawArraysIndirectCommand (vertex count, instances, first, base instance), then
// the listed triangles (mesh-local index)
layout(std430, binding = 3) buffer Fallback { uint draw_count; uint draw_instances; uint draw_first;
                                              uint draw_base; uint fallback[]; };

uniform mat4 u_view_proj;          // world -> clip
uniform ivec2 u_size;              // target [px]
uniform uint u_triangle_count;
uniform uint u_object;             // ID modes: the id's high byte (mesh slot + 1) << 24
uniform float u_ground_y;          // MODE_HEIGHT [m]
uniform uint u_fallback_capacity;  // triangles the fallback list holds
uniform ivec2 u_sample_offsets[SAMPLES];   // sample positions in the pixel, 1/256 px

#define SUBPIXEL 256
#define MAX_SPAN 64

void main() {
    uint t = gl_WorkGroupID.x * uint(LOCAL_SIZE) + gl_LocalInvocationID.x
           + gl_WorkGroupID.y * gl_NumWorkGroups.x * uint(LOCAL_SIZE);
    if (t >= u_triangle_count) return;
    uvec3 vi = uvec3(indices[3u * t], indices[3u * t + 1u], indices[3u * t + 2u]);
    vec3 p0 = vec3(positions[3u * vi.x], positions[3u * vi.x + 1u], positions[3u * vi.x + 2u]);
    vec3 p1 = vec3(positions[3u * vi.y], positions[3u * vi.y + 1u], positions[3u * vi.y + 2u]);
    vec3 p2 = vec3(positions[3u * vi.z], positions[3u * vi.z + 1u], positions[3u * vi.z + 2u]);
    vec4 c0 = u_view_proj * vec4(p0, 1.0);
    vec4 c1 = u_view_proj * vec4(p1, 1.0);
    vec4 c2 = u_view_proj * vec4(p2, 1.0);
    // wholly outside one clip plane: nothing to draw
    if ((c0.x > c0.w && c1.x > c1.w && c2.x > c2.w) || (c0.x < -c0.w && c1.x < -c1.w && c2.x < -c2.w)
        || (c0.y > c0.w && c1.y > c1.w && c2.y > c2.w) || (c0.y < -c0.w && c1.y < -c1.w && c2.y < -c2.w)
        || (c0.z > c0.w && c1.z > c1.w && c2.z > c2.w) || (c0.z < -c0.w && c1.z < -c1.w && c2.z < -c2.w)) return;
    bool fallback_it = min(c0.w, min(c1.w, c2.w)) <= 1e-6 * max(abs(c0.w), max(abs(c1.w), abs(c2.w)))
                       || min(c0.w, min(c1.w, c2.w)) <= 0.0;
    vec2 hs = 0.5 * vec2(u_size);
    vec2 s0 = vec2(0.0), s1 = vec2(0.0), s2 = vec2(0.0);
    vec2 lo = vec2(0.0), hi = vec2(0.0);
    if (!fallback_it) {
        s0 = (c0.xy / c0.w + 1.0) * hs;
        s1 = (c1.xy / c1.w + 1.0) * hs;
        s2 = (c2.xy / c2.w + 1.0) * hs;
        lo = floor(min(s0, min(s1, s2)));
        hi = floor(max(s0, max(s1, s2)));
        vec2 span = hi - lo + 1.0;
        fallback_it = span.x > float(MAX_SPAN) || span.y > float(MAX_SPAN) || span.x * span.y > float(MAX_PIXELS);
    }
    if (fallback_it) {
#if defined(MODE_ID32)
        if (u_pass != 0) return;      // listed (and drawn) in the depth pass; the id pass redraws the list
#endif
        uint k = atomicAdd(draw_count, 3u) / 3u;
        if (k < u_fallback_capacity) fallback[k] = t;
        return;
    }
    // fixed point, relative to the box's corner pixel (exact integers: |coordinate| < 2^15)
    ivec2 origin = ivec2(lo);
    ivec2 v0 = ivec2(round(s0 * float(SUBPIXEL))) - origin * SUBPIXEL;
    ivec2 v1 = ivec2(round(s1 * float(SUBPIXEL))) - origin * SUBPIXEL;
    ivec2 v2 = ivec2(round(s2 * float(SUBPIXEL))) - origin * SUBPIXEL;
    float z0 = c0.z / c0.w * 0.5 + 0.5, z1 = c1.z / c1.w * 0.5 + 0.5, z2 = c2.z / c2.w * 0.5 + 0.5;
    // depth (and height) planes over the window from the unsnapped positions, as the GL rasterisers
    // set up attribute planes; evaluated at each sample relative to vertex 0
    vec2 e1 = s1 - s0, e2 = s2 - s0;
    float inv_det = 1.0 / (e1.x * e2.y - e1.y * e2.x);
    vec2 dz = vec2((z1 - z0) * e2.y - (z2 - z0) * e1.y, (z2 - z0) * e1.x - (z1 - z0) * e2.x) * inv_det;
#ifdef MODE_HEIGHT
    float h0 = p0.y - u_ground_y;
    vec2 dh = vec2((p1.y - p0.y) * e2.y - (p2.y - p0.y) * e1.y, (p2.y - p0.y) * e1.x - (p1.y - p0.y) * e2.x) * inv_det;
#endif
    int area = (v1.x - v0.x) * (v2.y - v0.y) - (v1.y - v0.y) * (v2.x - v0.x);
    if (area == 0) return;            // degenerate after snapping: the hardware draws nothing
    if (area < 0) {                   // make it counter-clockwise (y up): swap vertices 1 and 2
        ivec2 tv = v1; v1 = v2; v2 = tv;
        area = -area;
    }
    // edge k runs from vertex k+1 to vertex k+2 (opposite vertex k); inside: E > 0, or E == 0 on the
    // edges the driver's fill rule gives the triangle (render.raster.ComputeRaster.fill_rule probes
    // it): FILL_DY_SIGN * dy > 0 (-1: left edges, running down), or for horizontal edges
    // FILL_DX_SIGN * dx > 0 (+1: bottom edges, running right). Mesa (llvmpipe) is (-1, +1): D3D's
    // top-left rule with y pointing down the image; the mirrored rule differed on 1e-3 of the
    // samples of a sheet seen from the front, on axis-aligned edges
    ivec2 a0 = v1, d0 = v2 - v1;
    ivec2 a1 = v2, d1 = v0 - v2;
    ivec2 a2 = v0, d2 = v1 - v0;
    int bias0 = (FILL_DY_SIGN * d0.y > 0 || (d0.y == 0 && FILL_DX_SIGN * d0.x > 0)) ? 0 : -1;
    int bias1 = (FILL_DY_SIGN * d1.y > 0 || (d1.y == 0 && FILL_DX_SIGN * d1.x > 0)) ? 0 : -1;
    int bias2 = (FILL_DY_SIGN * d2.y > 0 || (d2.y == 0 && FILL_DX_SIGN * d2.x > 0)) ? 0 : -1;
    ivec2 plo = max(origin, ivec2(0));
    ivec2 phi = min(ivec2(hi), u_size - 1);
    uint id = u_object | t;
    for (int py = plo.y; py <= phi.y; ++py) {
        for (int px = plo.x; px <= phi.x; ++px) {
            ivec2 base = (ivec2(px, py) - origin) * SUBPIXEL;
            uint pixel = uint(py * u_size.x + px) * uint(SAMPLES);
            for (int s = 0; s < SAMPLES; ++s) {
                ivec2 q = base + u_sample_offsets[s];
                int e0 = d0.x * (q.y - a0.y) - d0.y * (q.x - a0.x);
                int e1 = d1.x * (q.y - a1.y) - d1.y * (q.x - a1.x);
                int e2 = d2.x * (q.y - a2.y) - d2.y * (q.x - a2.x);
                if (e0 + bias0 < 0 || e1 + bias1 < 0 || e2 + bias2 < 0) continue;
                vec2 r = vec2(px, py) + vec2(u_sample_offsets[s]) * (1.0 / float(SUBPIXEL)) - s0;
                precise float z = z0 + dz.x * r.x + dz.y * r.y;
                if (!(z >= 0.0 && z < 1.0)) continue;
#ifdef MODE_HEIGHT
                float h = h0 + dh.x * r.x + dh.y * r.y;
#else
                float h = 0.0;
#endif
                write_sample(pixel + uint(s), z, h, id);
            }
        }
    }
}
