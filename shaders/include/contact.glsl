// Ground contact shadow: a colour map rendered from the floor looking up stores, per (x, z), the
// occlusion exp(-h / h0) of the lowest surface at height h (contact.frag, MAX blending). Its mip
// chain is a box-filtered blur; a few taps at a coarse level give a soft contact shadow that is
// darkest where cloth touches the floor.
#ifndef CONTACT_GLSL
#define CONTACT_GLSL

uniform sampler2D u_contact_occ;     // R: occlusion in [0, 1], mipmapped
uniform mat4 u_contact_view_proj;    // world -> contact clip
uniform float u_contact_lod;         // mip level of the blur
uniform float u_contact_radius_uv;   // tap offset in contact-map uv

float contact_occlusion(vec3 p) {
    vec4 c = u_contact_view_proj * vec4(p, 1.0);
    vec2 uv = c.xy / c.w * 0.5 + 0.5;
    if (any(lessThan(uv, vec2(0.0))) || any(greaterThan(uv, vec2(1.0)))) return 0.0;
    float r = u_contact_radius_uv;
    float sharp = textureLod(u_contact_occ, uv, max(u_contact_lod - 2.0, 0.0)).r;
    float soft = 0.25 * (textureLod(u_contact_occ, uv + vec2(r, 0.0), u_contact_lod).r
                       + textureLod(u_contact_occ, uv - vec2(r, 0.0), u_contact_lod).r
                       + textureLod(u_contact_occ, uv + vec2(0.0, r), u_contact_lod).r
                       + textureLod(u_contact_occ, uv - vec2(0.0, r), u_contact_lod).r);
    return 0.35 * sharp + 0.65 * soft;
}

#endif
