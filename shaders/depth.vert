#version 450 core
// Depth-only pass (shadow maps, contact map, depth readback).
in vec3 in_position;
uniform mat4 u_view_proj;
void main() {
    gl_Position = u_view_proj * vec4(in_position, 1.0);
}
