#version 450 core
// Preview wireframe edges and pin / seam markers (GL_LINES or GL_POINTS), world space [m].

in vec3 in_position;

uniform mat4 u_view_proj;
uniform float u_depth_bias;   // pulled towards the camera by this fraction of clip w: edges win the
                              // depth test against the surface they lie on
uniform float u_point_size;   // [px], GL_POINTS only

void main() {
    gl_Position = u_view_proj * vec4(in_position, 1.0);
    gl_Position.z -= u_depth_bias * gl_Position.w;
    gl_PointSize = u_point_size;
}
