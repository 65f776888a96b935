// Ground contact shadow: an orthographic depth map rendered from the ground plane looking up (+Y)
// stores, per (x, z), the height of the lowest surface above the ground. Occlusion at a ground
// point is the disk average of exp(-h / u_contact_height): surfaces touching the ground darken it
// fully, those a few u_contact_height above barely at all.
#ifndef CONTACT_GLSL
#define CONTACT_GLSL

uniform sampler2D u_contact_depth;   // depth in [0, 1] maps to height [0, u_contact_range] m
uniform mat4 u_contact_view_proj;    // world -> contact clip
uniform float u_contact_range;       // m
uniform float u_contact_height;      // m, e-folding height of the occlusion
uniform float u_contact_radius_uv;   // disk radius in contact-map uv

float contact_occlusion(vec3 p) {
    vec4 c = u_contact_view_proj * vec4(p, 1.0);
    vec2 uv = c.xy / c.w * 0.5 + 0.5;
    float occ = 0.0;
    const int RINGS = 3;
    const int PER_RING = 8;
    float total = 0.0;
    for (int r = 0; r <= RINGS; ++r) {
        float rad = u_contact_radius_uv * float(r) / float(RINGS);
        int n = r == 0 ? 1 : PER_RING;
        float w = 1.0 - 0.6 * float(r) / float(RINGS);
        for (int i = 0; i < n; ++i) {
            float a = 6.2831853 * (float(i) + 0.5 * float(r)) / float(n);
            vec2 q = uv + rad * vec2(cos(a), sin(a));
            float h = texture(u_contact_depth, q).r * u_contact_range;
            bool inside = all(greaterThanEqual(q, vec2(0.0))) && all(lessThanEqual(q, vec2(1.0)));
            occ += w * (inside ? exp(-h / u_contact_height) : 0.0);
            total += w;
        }
    }
    return occ / total;
}

#endif
