// The compute rasteriser's target (raster.comp, raster_fallback.frag): one element per sample,
// pixel-major ((y * width + x) * SAMPLES + sample), and the write of one covered sample. Include it
// first (it may enable extensions). Modes as raster.comp describes.
#ifndef RASTER_TARGET_GLSL
#define RASTER_TARGET_GLSL

#ifdef MODE_ID64
#extension GL_ARB_gpu_shader_int64 : require
#extension GL_NV_shader_atomic_int64 : require
layout(std430, binding = 2) coherent buffer Target { uint64_t target[]; };
#else
layout(std430, binding = 2) coherent buffer Target { uint target[]; };
#endif

uniform int u_pass;    // MODE_ID32: 0 depth, 1 id

// Sample i covered at window depth z (height h above the floor; id: the triangle's id).
void write_sample(uint i, float z, float h, uint id) {
#if defined(MODE_ID64)
    atomicMin(target[i], (uint64_t(floatBitsToUint(z)) << 32) | uint64_t(id));
#elif defined(MODE_ID32)
    uint zb = floatBitsToUint(z);
    if (u_pass == 0) atomicMin(target[2u * i + 1u], zb);
    else if (target[2u * i + 1u] == zb) atomicMin(target[2u * i], id);
#elif defined(MODE_DEPTH)
    atomicMin(target[i], floatBitsToUint(z));
#else
    atomicMin(target[i], floatBitsToUint(max(h, 0.0)));
#endif
}

#endif
