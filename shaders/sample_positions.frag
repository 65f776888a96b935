#version 450 core
// Writes the driver's position of each sample of a multisampled 1x1 target (in the pixel, [0, 1)^2,
// by gl_SampleID) and the sample count: the compute rasteriser uses the same positions
// (render.raster.ComputeRaster.sample_positions).
layout(std430, binding = 0) buffer Probe { int count; float positions[]; };
layout(location = 0) out vec4 out_dummy;
void main() {
    positions[2 * gl_SampleID] = gl_SamplePosition.x;
    positions[2 * gl_SampleID + 1] = gl_SamplePosition.y;
    count = gl_NumSamples;
    out_dummy = vec4(0.0);
}
