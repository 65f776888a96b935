#version 450 core
// Per sample (gl_SampleID makes it run per sample): the sample's window depth from the clipped
// triangle, then raster.comp's write into the target. The colour output is a dummy.
#include "include/raster_target.glsl"
sample in vec2 v_zw;
sample in float v_height;
flat in uint v_triangle;
uniform ivec2 u_size;
uniform uint u_object;
layout(location = 0) out vec4 out_dummy;
void main() {
    float z = v_zw.x / v_zw.y * 0.5 + 0.5;
    ivec2 px = ivec2(gl_FragCoord.xy);
    if (z >= 0.0 && z < 1.0)
        write_sample(uint(px.y * u_size.x + px.x) * uint(SAMPLES) + uint(gl_SampleID), z, v_height, u_object | v_triangle);
    out_dummy = vec4(0.0);
}
