#version 450 core
// Visibility buffer (Burns & Hunt 2013): each MSAA sample stores which triangle covers it, as one
// 32-bit id: bits 24-31 the object (mesh slot + 1; 255 the floor; 0 = nothing drawn, the clear
// value), bits 0-23 gl_PrimitiveID, the triangle's index in its draw call. With depth.vert
// (positions only) or ground.vert; visibility.comp shades from it.
uniform uint u_object;      // (slot + 1) << 24
layout(location = 0) out uint out_id;
void main() {
    out_id = u_object | (uint(gl_PrimitiveID) & 0xFFFFFFu);
}
