// Tangent frame from the derivatives of position and uv across the screen (C. Schüler, "Normal
// mapping without precomputed tangents", 2013): no tangent attribute, works on deforming cloth.
// dp1, dp2: d(position)/dx, d(position)/dy per pixel; duv1, duv2: d(uv)/dx, d(uv)/dy.
// The forward pass passes dFdx/dFdy; the visibility pass (visibility.comp) its analytic ray
// differentials, so both build the same frame.
#ifndef NORMAL_MAP_GLSL
#define NORMAL_MAP_GLSL

mat3 cotangent_frame(vec3 n, vec3 dp1, vec3 dp2, vec2 duv1, vec2 duv2) {
    vec3 dp2perp = cross(dp2, n);
    vec3 dp1perp = cross(n, dp1);
    vec3 t = dp2perp * duv1.x + dp1perp * duv2.x;
    vec3 b = dp2perp * duv1.y + dp1perp * duv2.y;
    float invmax = inversesqrt(max(dot(t, t), dot(b, b)) + 1e-20);
    return mat3(t * invmax, b * invmax, n);
}

#endif
