#version 450 core
// The compute rasteriser's depth map (raster.comp MODE_DEPTH: the bits of a float window depth per
// texel) into the bound depth texture: a full-screen triangle (deferred.vert) drawn with the depth
// test set to always passes, each fragment writing its texel's depth. (Uploading the buffer into the
// depth texture as pixel data instead took 14-25 ms on the H200's driver: a slow conversion path.)
layout(std430, binding = 2) readonly buffer Target { uint depths[]; };
uniform int u_width;   // [texels]
void main() {
    ivec2 p = ivec2(gl_FragCoord.xy);
    gl_FragDepth = uintBitsToFloat(depths[p.y * u_width + p.x]);
}
