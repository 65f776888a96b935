#version 450 core
// One colour (sRGB) for wireframe edges and markers. Define ROUND_POINTS: round point sprites.

uniform vec3 u_color;

out vec4 frag_color;

void main() {
#ifdef ROUND_POINTS
    vec2 d = gl_PointCoord * 2.0 - 1.0;
    if (dot(d, d) > 1.0) discard;
#endif
    frag_color = vec4(u_color, 1.0);
}
