// Studio environment: a soft gradient dome (bright overhead softbox, grey walls, darker floor)
// evaluated as diffuse irradiance (hemispherical mix) and as a blurred specular lookup.
#ifndef ENVIRONMENT_GLSL
#define ENVIRONMENT_GLSL

uniform vec3 u_env_top;      // linear radiance straight up
uniform vec3 u_env_horizon;  // at the horizon
uniform vec3 u_env_bottom;   // straight down

vec3 env_radiance(vec3 dir, float blur) {
    float y = clamp(dir.y, -1.0, 1.0);
    float k = mix(1.0, 0.35, blur);   // blurrier lookups see a wider, flatter gradient
    vec3 up = mix(u_env_horizon, u_env_top, pow(max(y, 0.0), k));
    vec3 dn = mix(u_env_horizon, u_env_bottom, pow(max(-y, 0.0), k));
    return y >= 0.0 ? up : dn;
}

// Irradiance / PI of the gradient dome for a surface with normal n (hemisphere-light formula).
vec3 env_irradiance(vec3 n) {
    float t = 0.5 + 0.5 * n.y;
    return mix(mix(u_env_bottom, u_env_horizon, 0.6), mix(u_env_horizon, u_env_top, 0.6), t);
}

#endif
