"""benchmarks/newton_side.py's count of the self-contact pairs Newton drops: its lists have a fixed length per
primitive, its detection counts every pair but stores only what fits. The counting kernel runs without Newton
(plain Warp arrays standing in for Newton's count and buffer-size arrays)."""

import importlib.util
import os
import sys

import numpy as np
import warp as wp

_spec = importlib.util.spec_from_file_location(
    "bench_newton_side", os.path.join(os.path.dirname(__file__), "..", "benchmarks", "newton_side.py"))
_ns = importlib.util.module_from_spec(_spec)
sys.modules[_spec.name] = _ns  # its dataclasses look their module up
_spec.loader.exec_module(_ns)


def test_dropped_pairs_are_counted_per_list_and_summed_over_launches():
    counts = [np.array([3, 70, 64, 0, 65], np.int32), np.array([1, 2], np.int32)]
    caps = [np.full(5, 64, np.int32), np.array([1, 1], np.int32)]
    longest = wp.zeros(3, dtype=wp.int32, device="cpu")
    dropped = wp.zeros(3, dtype=wp.float64, device="cpu")
    kernel = _ns._watch_kernel()
    for _substep in range(2):  # two substeps with the same lists: drops add up, the longest is a maximum
        for slot, c, b in ((0, counts[0], caps[0]), (2, counts[1], caps[1])):
            wp.launch(kernel, dim=len(c), inputs=[wp.array(c, device="cpu"), wp.array(b, device="cpu"), slot],
                      outputs=[longest, dropped], device="cpu")
    assert longest.numpy().tolist() == [70, 0, 2]
    # list 0: 70 - 64 and 65 - 64 past the buffer, twice; list 2: 2 - 1, twice
    assert dropped.numpy().tolist() == [14.0, 0.0, 2.0]
