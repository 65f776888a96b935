#version 450 core
// Contact map from the compute rasteriser's heights (raster.comp MODE_HEIGHT): occlusion
// exp(-h / h0) of the lowest surface at height h (0 where none: h = +inf), as contact.frag's MAX
// blend leaves it; the mip chain is built afterwards.
layout(local_size_x = 8, local_size_y = 8) in;
layout(std430, binding = 2) readonly buffer Target { uint heights[]; };
layout(r16f, binding = 1) writeonly uniform image2D u_contact;
uniform ivec2 u_size;
uniform float u_contact_height;   // h0 [m]
void main() {
    ivec2 p = ivec2(gl_GlobalInvocationID.xy);
    if (any(greaterThanEqual(p, u_size))) return;
    float h = uintBitsToFloat(heights[p.y * u_size.x + p.x]);
    imageStore(u_contact, p, vec4(exp(-h / u_contact_height), 0.0, 0.0, 1.0));
}
