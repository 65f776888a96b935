// The shadow-catching ground's colour at a floor point: the backdrop colour darkened by the key
// light's soft shadow (KEY_SHADOW) and the contact occlusion, so floor and backdrop meet without a
// seam; TRANSPARENT: black with alpha (premultiplied). Used by ground.frag and deferred.frag.
#ifndef GROUND_SHADE_GLSL
#define GROUND_SHADE_GLSL

#ifdef KEY_SHADOW
#include "shadow.glsl"
#endif
#include "contact.glsl"

uniform vec3 u_background;        // display-encoded sRGB backdrop colour
uniform float u_shadow_strength;  // darkness of a fully shadowed point, key light
uniform float u_contact_strength; // darkness of full contact occlusion
uniform vec4 u_ground_extent;     // x0, z0, x1, z1 [m] of the quad
uniform float u_ground_fade;      // m: shadows fade out over this distance to the quad's edge

vec4 ground_colour_vis(vec3 p, float key_vis);

vec4 ground_colour(vec3 p) {
#ifdef KEY_SHADOW
    return ground_colour_vis(p, key_visibility(p, 0.0));
#else
    return ground_colour_vis(p, 1.0);
#endif
}

// As ground_colour, with the key light's visibility at p given (1 = lit).
vec4 ground_colour_vis(vec3 p, float key_vis) {
    float key = 1.0 - key_vis;
    float contact = contact_occlusion(p);
    float dark = 1.0 - (1.0 - u_shadow_strength * key) * (1.0 - u_contact_strength * contact);
    vec2 to_edge = min(p.xz - u_ground_extent.xy, u_ground_extent.zw - p.xz);
    dark *= smoothstep(0.0, u_ground_fade, min(to_edge.x, to_edge.y));
#ifdef TRANSPARENT
    return vec4(0.0, 0.0, 0.0, dark);
#else
    return vec4(u_background * (1.0 - dark), 1.0);
#endif
}

#endif
