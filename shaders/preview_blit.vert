#version 450 core
// Full-window triangle for the preview's upscale of a reduced-resolution 3D view (no vertex buffer).

out vec2 v_uv;

void main() {
    vec2 p = vec2(float((gl_VertexID & 1) << 2), float((gl_VertexID & 2) << 1)) - 1.0;   // (-1,-1) (3,-1) (-1,3)
    v_uv = 0.5 * p + 0.5;
    gl_Position = vec4(p, 0.0, 1.0);
}
