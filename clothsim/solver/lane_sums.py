"""CUDA: a vertex block's force and Hessian summed over the lanes (threads) that shared its elements and
contact pairs, by warp shuffles in a fixed butterfly (deterministic); the tiled VBD solve kernels
(clothsim.solver.kernels) call them. On the CPU each sum is the one lane's value."""

import warp as wp


@wp.func_native(
    """
    #if defined(__CUDA_ARCH__)
    float r = v;
    r += __shfl_xor_sync(0xffffffffu, r, 8, 16);
    r += __shfl_xor_sync(0xffffffffu, r, 4, 16);
    r += __shfl_xor_sync(0xffffffffu, r, 2, 16);
    r += __shfl_xor_sync(0xffffffffu, r, 1, 16);
    return r;
    #else
    return v;
    #endif
    """
)
def _half_warp_sum(v: float) -> float: ...


@wp.func
def half_warp_sum_block(f: wp.vec3, H: wp.mat33):
    """Sum a force and Hessian block over the 16 lanes of a half warp (a fixed butterfly: deterministic).
    Every lane of the warp must call it (the shuffles are warp-synchronous)."""
    fs = wp.vec3(_half_warp_sum(f[0]), _half_warp_sum(f[1]), _half_warp_sum(f[2]))
    Hs = wp.mat33(
        _half_warp_sum(H[0, 0]), _half_warp_sum(H[0, 1]), _half_warp_sum(H[0, 2]),
        _half_warp_sum(H[1, 0]), _half_warp_sum(H[1, 1]), _half_warp_sum(H[1, 2]),
        _half_warp_sum(H[2, 0]), _half_warp_sum(H[2, 1]), _half_warp_sum(H[2, 2]),
    )
    return fs, Hs


@wp.func_native(
    """
    #if defined(__CUDA_ARCH__)
    float r = v;
    r += __shfl_xor_sync(0xffffffffu, r, 16);
    r += __shfl_xor_sync(0xffffffffu, r, 8);
    r += __shfl_xor_sync(0xffffffffu, r, 4);
    r += __shfl_xor_sync(0xffffffffu, r, 2);
    r += __shfl_xor_sync(0xffffffffu, r, 1);
    return r;
    #else
    return v;
    #endif
    """
)
def _warp_sum(v: float) -> float: ...


@wp.func
def warp_sum_block(f: wp.vec3, H: wp.mat33):
    """Sum a force and Hessian block over the 32 lanes of a warp (fixed butterfly: deterministic)."""
    fs = wp.vec3(_warp_sum(f[0]), _warp_sum(f[1]), _warp_sum(f[2]))
    Hs = wp.mat33(
        _warp_sum(H[0, 0]), _warp_sum(H[0, 1]), _warp_sum(H[0, 2]),
        _warp_sum(H[1, 0]), _warp_sum(H[1, 1]), _warp_sum(H[1, 2]),
        _warp_sum(H[2, 0]), _warp_sum(H[2, 1]), _warp_sum(H[2, 2]),
    )
    return fs, Hs
