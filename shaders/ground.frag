#version 450 core
// Shadow-catching ground: the same colour as the backdrop, darkened by the key light's soft
// shadow and the contact occlusion, so the floor and the backdrop meet without a seam.
// TRANSPARENT: only the shadow is drawn, as black with alpha (premultiplied).

// KEY_SHADOW: a light casts the shadow map (else only the contact shadow).
#ifdef KEY_SHADOW
#include "include/shadow.glsl"
#endif
#include "include/contact.glsl"

in vec3 v_world;
uniform vec3 u_background;        // display-encoded sRGB backdrop colour
uniform float u_shadow_strength;  // darkness of a fully shadowed point, key light
uniform float u_contact_strength; // darkness of full contact occlusion
uniform vec4 u_ground_extent;      // x0, z0, x1, z1 [m] of the quad
uniform float u_ground_fade;       // m: shadows fade out over this distance to the quad's edge
out vec4 frag_color;

void main() {
#ifdef KEY_SHADOW
    float key = 1.0 - key_visibility(v_world, 0.0);
#else
    float key = 0.0;
#endif
    float contact = contact_occlusion(v_world);
    float dark = 1.0 - (1.0 - u_shadow_strength * key) * (1.0 - u_contact_strength * contact);
    vec2 to_edge = min(v_world.xz - u_ground_extent.xy, u_ground_extent.zw - v_world.xz);
    dark *= smoothstep(0.0, u_ground_fade, min(to_edge.x, to_edge.y));
#ifdef TRANSPARENT
    frag_color = vec4(0.0, 0.0, 0.0, dark);
#else
    frag_color = vec4(u_background * (1.0 - dark), 1.0);
#endif
}
