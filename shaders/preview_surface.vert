#version 450 core
// Preview views (strain map, LOD level colours, penetration highlights): the garment with a
// per-vertex scalar. Positions are world space [m].

in vec3 in_position;
in vec3 in_normal;
in float in_scalar;

uniform mat4 u_view_proj;

out vec3 v_world;
out vec3 v_normal;
out float v_scalar;

void main() {
    v_world = in_position;
    v_normal = in_normal;
    v_scalar = in_scalar;
    gl_Position = u_view_proj * vec4(in_position, 1.0);
}
