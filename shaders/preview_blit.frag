#version 450 core
// Bilinear upscale of the reduced-resolution 3D view (already display-encoded: copied as is).

in vec2 v_uv;

uniform sampler2D u_image;

out vec4 frag_color;

void main() {
    frag_color = texture(u_image, v_uv);
}
