#version 450 core
// Occlusion a surface at height h above the floor casts straight down: exp(-h / h0). Drawn with
// MAX blending, so each texel keeps the lowest surface's (largest) value; mipmaps then blur it.
in float v_height;
uniform float u_contact_height;   // h0 [m]
out vec4 frag_occlusion;
void main() {
    frag_occlusion = vec4(exp(-max(v_height, 0.0) / u_contact_height), 0.0, 0.0, 1.0);
}
