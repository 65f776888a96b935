"""The CPU colour sweep's synchronisation (clothsim.solver.kernels.vbd_solve_sweep_kernel, launched by
SolverVBD._solve_cpu_sweep): one Warp launch per CPU thread sweeps every colour of a Gauss–Seidel
iteration; the threads claim chunks of a colour and meet at a spin barrier before the next. Warp's CPU
atomics are plain reads and writes (a CPU launch runs its threads one after another), so these are the
compiler's, in native snippets; on CUDA they are never launched."""

import warp as wp


# CPU sweep (vbd_solve_sweep_kernel): at most this many colours (more: SolverVBD sweeps colour by colour)
SWEEP_MAX_COLORS = 60
# time-stamp cycles a thread waits at the sweep's barrier before it gives up and flags it (sync[1]): a few
# seconds (the native code's constant; 2^31 spins where there is no time-stamp counter)
SWEEP_WAIT_CYCLES = 1 << 33


@wp.func_native(
    """
    #if defined(__CUDA_ARCH__)
    return 1;
    #else
    return __atomic_exchange_n(claims.data + index, 1, __ATOMIC_ACQ_REL) == 0 ? 1 : 0;
    #endif
    """
)
def cpu_claim(claims: wp.array(dtype=wp.int32), index: int) -> int:
    """CPU sweep: 1 if this thread is the first to claim chunk ``index`` (claims zeroed before the sweep), else 0."""
    ...


@wp.func_native(
    """
    #if defined(__CUDA_ARCH__)
    return 1;
    #else
    __atomic_fetch_add(sync.data, 1, __ATOMIC_ACQ_REL);
    #if defined(__x86_64__) || defined(__i386__)
    const unsigned long long t0 = __builtin_ia32_rdtsc();
    #endif
    long long spins = 0;
    while (__atomic_load_n(sync.data, __ATOMIC_ACQUIRE) < target) {
        if (__atomic_load_n(sync.data + 1, __ATOMIC_ACQUIRE) != 0) {
            return 0;
        }
        ++spins;
        #if defined(__x86_64__) || defined(__i386__)
        __builtin_ia32_pause();
        if ((spins & 1023) == 0 && __builtin_ia32_rdtsc() - t0 > (1ULL << 33)) {
            __atomic_store_n(sync.data + 1, 1, __ATOMIC_RELEASE);
            return 0;
        }
        #else
        if (spins > (1LL << 31)) {
            __atomic_store_n(sync.data + 1, 1, __ATOMIC_RELEASE);
            return 0;
        }
        #endif
    }
    return 1;
    #endif
    """
)
def cpu_barrier(sync: wp.array(dtype=wp.int32), target: int) -> int:
    """CPU threads of one sweep (each in its own Warp launch, run at once on worker threads; Warp's CPU atomics
    are plain reads and writes, so these are the compiler's): arrive at the barrier in sync[0] and wait until
    ``target`` threads have arrived; the release/acquire order makes every position a thread wrote before
    arriving visible to the others after. A wait longer than 2^33 time-stamp cycles (a few seconds: a thread
    that never came) sets the failure flag sync[1]; a thread that finds the flag set stops waiting. Returns 0
    then, else 1."""
    ...
