"""CPU work shared between threads: recorded Warp launches taken in turn.

Warp releases the GIL while a CPU kernel runs, so threads that each launch their share run at once. When the
shares are uneven (a fold's layers lie in some rows of the cloth, not others), the work is cut into more
chunks than threads and each thread takes the next chunk not yet taken until none is left.
"""

from __future__ import annotations

import itertools


def taker():
    """A ``take(launches)`` for the threads of one piece of work: each call launches the chunks not yet taken
    by any thread, in turn, until ``len(launches)`` have been taken. The threads share one counter (``next`` on
    an ``itertools.count`` is atomic under the GIL), so each chunk index runs once; ``launches`` may be a
    thread's own list (the same chunks with the thread's own output arrays) or one list shared by all."""
    taken = itertools.count()

    def take(launches):
        while (k := next(taken)) < len(launches):
            launches[k].launch()

    return take
