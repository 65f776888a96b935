#version 450 core
// The hardware id pass's MSAA id texture (visibility.frag) copied into the compute rasteriser's
// layout (uvec2 per sample, pixel-major; x: id, 0xFFFFFFFF where nothing was drawn; y: 0): lets a
// test compare the two rasterisers sample by sample (render.raster.ComputeRaster.hardware_ids).
layout(local_size_x = 8, local_size_y = 8) in;
uniform usampler2DMS u_vis;
layout(std430, binding = 2) writeonly buffer Target { uvec2 target[]; };
uniform ivec2 u_size;
void main() {
    ivec2 p = ivec2(gl_GlobalInvocationID.xy);
    if (any(greaterThanEqual(p, u_size))) return;
    for (int s = 0; s < SAMPLES; ++s) {
        uint id = texelFetch(u_vis, p, s).r;
        target[uint(p.y * u_size.x + p.x) * uint(SAMPLES) + uint(s)] = uvec2(id == 0u ? 0xFFFFFFFFu : id, 0u);
    }
}
