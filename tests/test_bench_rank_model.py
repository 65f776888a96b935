"""benchmarks/rank_variants.py: the numpy model of the warp's bitonic network (32 lanes × K slots, shuffles across
lanes, swaps between a lane's slots) sorts every list length the CUDA code takes: up to 128 entries (clothsim's
``contact_lists._warp_bitonic``) and up to 512 (the ``bitonic512`` variant), duplicates included. The CUDA code's
own output is checked against the insertion sort on the GPU (tests/test_collision_gpu.py, detect_variants.py)."""

import importlib.util
import os

import numpy as np
import pytest

# loaded by path (benchmarks/ on sys.path would shadow the render package for later test modules)
_spec = importlib.util.spec_from_file_location(
    "bench_rank_variants", os.path.join(os.path.dirname(__file__), "..", "benchmarks", "rank_variants.py"))
_rv = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_rv)


@pytest.mark.parametrize("max_entries", [128, 512])
def test_bitonic_model_sorts_every_length(max_entries):
    rng = np.random.default_rng(max_entries)
    for n in range(max_entries + 1):
        # repeated entries too: a list holds distinct ids, but the network must not rely on that
        vals = rng.integers(0, max(1, n // 2), size=n)
        assert _rv.bitonic_model(vals, max_entries) == sorted(vals.tolist()), n
    with pytest.raises(AssertionError):
        _rv.bitonic_model(np.arange(max_entries + 1), max_entries)
