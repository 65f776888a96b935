#version 450 core
// Clears the compute rasteriser's target (raster.comp). MODE_FILL: every uint = u_value (depth
// maps: the bits of 1.0; contact heights: +inf). MODE_IDS: per sample (x: id, y: depth bits) =
// nothing drawn (id 0xFFFFFFFF, depth 1.0), or with HAS_GROUND the floor where the ray through
// the sample meets it: the quad y = u_ground_y over u_ground_extent (x0, z0, x1, z1) [m] that the
// hardware path rasterises (ground.vert), id GROUND_OBJECT << 24, its window depth less GROUND_TIE.
// Meshes then replace it where they are nearer (the hardware path draws the floor after them with
// "<=" against 24-bit depths: GROUND_TIE, render.raster.GROUND_TIE_DEPTH, keeps those ties its way).
layout(local_size_x = 256) in;
#ifdef MODE_IDS
layout(std430, binding = 2) writeonly buffer Target { uvec2 target[]; };
uniform ivec2 u_size;
uniform vec2 u_sample_positions[SAMPLES];   // in the pixel [px]
uniform mat4 u_view_proj;
uniform mat4 u_inv_view_proj;
uniform float u_ground_y;
uniform vec4 u_ground_extent;
#else
layout(std430, binding = 2) writeonly buffer Target { uint target[]; };
uniform uint u_value;
#endif
uniform uint u_count;

void main() {
    uint i = gl_GlobalInvocationID.x + gl_GlobalInvocationID.y * gl_NumWorkGroups.x * 256u;
    if (i >= u_count) return;
#ifdef MODE_IDS
    uvec2 value = uvec2(0xFFFFFFFFu, floatBitsToUint(1.0));
#ifdef HAS_GROUND
    uint pixel = i / uint(SAMPLES);
    vec2 w = vec2(float(pixel % uint(u_size.x)), float(pixel / uint(u_size.x))) + u_sample_positions[i % uint(SAMPLES)];
    vec2 ndc = w / vec2(u_size) * 2.0 - 1.0;
    vec4 a = u_inv_view_proj * vec4(ndc, -1.0, 1.0);
    vec4 b = u_inv_view_proj * vec4(ndc, 1.0, 1.0);
    vec3 pa = a.xyz / a.w, pb = b.xyz / b.w;
    float t = (u_ground_y - pa.y) / (pb.y - pa.y);
    if (t >= 0.0 && t <= 1.0) {
        vec3 p = mix(pa, pb, t);
        if (p.x >= u_ground_extent.x && p.x <= u_ground_extent.z && p.z >= u_ground_extent.y && p.z <= u_ground_extent.w) {
            vec4 c = u_view_proj * vec4(p.x, u_ground_y, p.z, 1.0);
            float z = c.z / c.w * 0.5 + 0.5;
            if (z >= 0.0 && z < 1.0) value = uvec2(GROUND_OBJECT << 24, floatBitsToUint(max(z - GROUND_TIE, 0.0)));
        }
    }
#endif
    target[i] = value;
#else
    target[i] = u_value;
#endif
}
