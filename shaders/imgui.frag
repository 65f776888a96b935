#version 450 core
// Dear ImGui: vertex colour times the font atlas / image texture (straight alpha, blended).

in vec2 v_uv;
in vec4 v_color;

uniform sampler2D u_texture;

out vec4 frag_color;

void main() {
    frag_color = v_color * texture(u_texture, v_uv);
}
