#version 450 core
// Garment / avatar surface. Positions are world space [m] (the simulator's output as is).

in vec3 in_position;
in vec3 in_normal;
#ifdef HAS_UV
in vec2 in_uv;
#endif

uniform mat4 u_view_proj;

out vec3 v_world;
out vec3 v_normal;
out vec2 v_uv;

void main() {
    v_world = in_position;
    v_normal = in_normal;
#ifdef HAS_UV
    v_uv = in_uv;
#else
    v_uv = vec2(0.0);
#endif
    gl_Position = u_view_proj * vec4(in_position, 1.0);
}
