#version 450 core
// Ground plane quad y = u_ground_y spanning u_ground_extent (x0, z0, x1, z1) [m].
uniform mat4 u_view_proj;
uniform float u_ground_y;
uniform vec4 u_ground_extent;
out vec3 v_world;
void main() {
    vec2 corners[4] = vec2[](vec2(0.0, 0.0), vec2(1.0, 0.0), vec2(0.0, 1.0), vec2(1.0, 1.0));
    vec2 c = corners[gl_VertexID];
    vec3 p = vec3(mix(u_ground_extent.x, u_ground_extent.z, c.x), u_ground_y,
                  mix(u_ground_extent.y, u_ground_extent.w, c.y));
    v_world = p;
    gl_Position = u_view_proj * vec4(p, 1.0);
}
