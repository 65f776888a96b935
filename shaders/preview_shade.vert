#version 450 core
// Preview look (render.preview.painter): garment / avatar positions and normals in world space [m].

in vec3 in_position;
in vec3 in_normal;
in float in_vis;     // key-light visibility per vertex (1 = lit)

uniform mat4 u_view_proj;

out vec3 v_world;
out vec3 v_normal;
out float v_vis;

void main() {
    v_world = in_position;
    v_normal = in_normal;
    v_vis = in_vis;
    gl_Position = u_view_proj * vec4(in_position, 1.0);
}
