#version 450 core
// Contact-occlusion map: meshes seen from the floor looking up (orthographic over x, z).
in vec3 in_position;
uniform mat4 u_view_proj;
out float v_height;
uniform float u_ground_y;
void main() {
    v_height = in_position.y - u_ground_y;
    gl_Position = u_view_proj * vec4(in_position, 1.0);
}
