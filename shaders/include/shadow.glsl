// Key-light shadow map with soft filtering: percentage-closer soft shadows (Fernando 2005):
// blocker search, penumbra width from the light's angular size, then Poisson-disk PCF with
// hardware depth comparison.
#ifndef SHADOW_GLSL
#define SHADOW_GLSL

uniform sampler2DShadow u_shadow_cmp;  // depth texture, compare mode on
uniform sampler2D u_shadow_depth;      // the same depth, raw (blocker search)
uniform mat4 u_light_view_proj;        // world -> light clip (orthographic)
uniform float u_light_size_uv;         // light angular size * depth range, in shadow-map uv per unit depth
uniform float u_shadow_bias;           // in light depth units [0, 1]

const vec2 POISSON[16] = vec2[](
    vec2(-0.94201624, -0.39906216), vec2(0.94558609, -0.76890725),
    vec2(-0.09418410, -0.92938870), vec2(0.34495938, 0.29387760),
    vec2(-0.91588581, 0.45771432), vec2(-0.81544232, -0.87912464),
    vec2(-0.38277543, 0.27676845), vec2(0.97484398, 0.75648379),
    vec2(0.44323325, -0.97511554), vec2(0.53742981, -0.47373420),
    vec2(-0.26496911, -0.41893023), vec2(0.79197514, 0.19090188),
    vec2(-0.24188840, 0.99706507), vec2(-0.81409955, 0.91437590),
    vec2(0.19984126, 0.78641367), vec2(0.14383161, -0.14100790));

// Shadow-map uv to light depth units: the map spans 2 s_radius, the depth range is 3 s_radius
// (render/renderer.py fits both to the scene), so a receiver tilted by tan(theta) to the light's view
// plane changes depth by tan(theta) * (2/3) per unit of uv.
const float UV_TO_DEPTH = 2.0 / 3.0;

// Fraction of the key light reaching world point p (1 = lit). extra_bias: the slope-scaled constant
// bias, 0.0015 * tan(theta) (theta: angle between the surface normal and the light), so tan(theta) =
// extra_bias / 0.0015. Every tap at uv offset r also compares against the receiver's own plane there,
// z - tan(theta) * |r| * UV_TO_DEPTH (a receiver-plane depth bias): a wide PCSS kernel on a surface
// tilted away from the light otherwise finds the surface itself nearer the light than p and shades a
// lit surface (the T-shirt's side over the thigh under a key from the side: a patch with the map's
// texel steps on its edge).
float key_visibility(vec3 p, float extra_bias) {
    vec4 c = u_light_view_proj * vec4(p, 1.0);
    vec3 s = c.xyz / c.w * 0.5 + 0.5;
    if (any(lessThan(s.xy, vec2(0.0))) || any(greaterThan(s.xy, vec2(1.0))) || s.z > 1.0) return 1.0;
    float z = s.z - u_shadow_bias - extra_bias;
    // depth change per uv across the receiver; tan(theta) capped at 3 (72 deg): nearer grazing the
    // receiver-plane offset would outgrow any real occluder's depth step and leak light
    float slope = min(extra_bias / 0.0015, 3.0) * UV_TO_DEPTH;
    vec2 texel = 1.0 / vec2(textureSize(u_shadow_depth, 0));

    // blocker search over a fixed region: 8 taps; none in shadow -> fully lit, no filtering. On a tilted
    // receiver it is no wider than the widest PCF kernel (24 texels), where the receiver-plane offset
    // stays small; the floor (slope 0) keeps the wide search its long shadows need.
    float search = max(u_light_size_uv * 0.5, 3.0 * texel.x);
    if (slope > 0.0) search = min(search, 24.0 * texel.x);
    float blockers = 0.0, blocker_depth = 0.0;
    for (int i = 0; i < 8; ++i) {
        vec2 o = POISSON[2 * i] * search;
        float d = texture(u_shadow_depth, s.xy + o).r;
        if (d < z - slope * length(o)) { blockers += 1.0; blocker_depth += d; }
    }
    if (blockers == 0.0) return 1.0;
    blocker_depth /= blockers;
    float penumbra = clamp((z - blocker_depth) * u_light_size_uv, 2.5 * texel.x, 24.0 * texel.x);

    // percentage-closer filtering: 12 bilinear compare taps (4 depth comparisons each)
    float lit = 0.0;
    for (int i = 0; i < 12; ++i) {
        vec2 o = POISSON[i] * penumbra;
        lit += texture(u_shadow_cmp, vec3(s.xy + o, z - slope * length(o)));
    }
    return lit / 12.0;
}

#endif
