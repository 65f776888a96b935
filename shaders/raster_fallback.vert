#version 450 core
// The compute rasteriser's fallback (raster.comp): the triangles it listed (a vertex at or behind
// the eye plane, or a large one) drawn by the GL rasteriser through an indirect draw of 3 vertices
// per listed triangle; raster_fallback.frag writes their samples into the same target.
layout(std430, binding = 0) readonly buffer Positions { float positions[]; };
layout(std430, binding = 1) readonly buffer Indices { uint indices[]; };
layout(std430, binding = 3) readonly buffer Fallback { uint draw_count; uint draw_instances; uint draw_first;
                                                       uint draw_base; uint fallback[]; };
uniform mat4 u_view_proj;
uniform float u_ground_y;
sample out vec2 v_zw;               // clip z, w (perspective-correct: their ratio is the sample's NDC depth)
sample out float v_height;          // above the floor [m]
flat out uint v_triangle;
void main() {
    uint t = fallback[gl_VertexID / 3];
    uint v = indices[3u * t + uint(gl_VertexID % 3)];
    vec3 p = vec3(positions[3u * v], positions[3u * v + 1u], positions[3u * v + 2u]);
    gl_Position = u_view_proj * vec4(p, 1.0);
    v_zw = gl_Position.zw;
    v_height = p.y - u_ground_y;
    v_triangle = t;
}
