"""The frame channel: simulated positions from the sim worker to the window through shared memory.

One block per topology (a scene at one resolution level), written by the worker and read by the
window. Layout (little-endian, 8-byte aligned)::

    header  int64[8]   : seq (frames published), writing (seq of the frame being written),
                         frame (simulation frame of the newest slot), generation, garment vertex
                         count N, body vertex count B, flags (bit 0: penetration depths valid), 0
    stats   float64[8] : step_ms (wall time of the last step [ms]), kinetic energy [J/kg],
                         residual [-], seam gap [m], sim time [s], 0, 0, 0
    slot 0, slot 1     : each positions (N, 3) float32 [m], body (B, 3) float32 [m],
                         penetration depth (N,) float32 [m] (0 outside the body)

Protocol (a sequence lock over a double buffer): to publish frame k+1 the writer sets
``writing = k + 1``, fills slot ``(k + 1) % 2``, then the stats, then ``seq = k + 1``. A reader
takes ``s = seq``, copies slot ``s % 2`` and then reads ``writing``; the copy is whole if
``writing <= s + 1`` (the writer has not started on slot ``s % 2`` again, which needs
``writing = s + 2``); otherwise it retries. The writer never waits for the reader.
"""

from __future__ import annotations

from dataclasses import dataclass
from multiprocessing import shared_memory

import numpy as np

HEADER_INTS = 8
STATS_FLOATS = 8
_H = HEADER_INTS * 8 + STATS_FLOATS * 8


def block_bytes(n: int, b: int) -> int:
    """Bytes of a channel block for N garment and B body vertices."""
    return _H + 2 * _slot_bytes(n, b)


def _slot_bytes(n: int, b: int) -> int:
    return (n * 3 + b * 3 + n) * 4


@dataclass
class Frame:
    """One frame read from the channel (copies, owned by the reader)."""

    seq: int
    frame: int
    positions: np.ndarray      # (N, 3) float32 [m]
    body: np.ndarray           # (B, 3) float32 [m]
    penetration: np.ndarray | None  # (N,) float32 [m] or None when not computed
    step_ms: float
    kinetic_energy: float
    residual: float
    seam_gap: float


class FrameChannel:
    """A shared-memory frame channel (see the module docstring).

    ``FrameChannel.create(n, b, generation)`` in the worker (owns and unlinks the block);
    ``FrameChannel.attach(name, n, b)`` in the window (only maps it).
    """

    def __init__(self, shm: shared_memory.SharedMemory, n: int, b: int, owner: bool) -> None:
        self.shm = shm
        self.name = shm.name
        self.n, self.b = int(n), int(b)
        self.owner = owner
        buf = shm.buf
        self._header = np.ndarray((HEADER_INTS,), np.int64, buf, 0)
        self._stats = np.ndarray((STATS_FLOATS,), np.float64, buf, HEADER_INTS * 8)
        self._slots = []
        for k in range(2):
            off = _H + k * _slot_bytes(self.n, self.b)
            pos = np.ndarray((self.n, 3), np.float32, buf, off)
            body = np.ndarray((self.b, 3), np.float32, buf, off + self.n * 12)
            pen = np.ndarray((self.n,), np.float32, buf, off + self.n * 12 + self.b * 12)
            self._slots.append((pos, body, pen))
        self._closed = False

    @classmethod
    def create(cls, n: int, b: int, generation: int) -> "FrameChannel":
        shm = shared_memory.SharedMemory(create=True, size=block_bytes(n, b))
        ch = cls(shm, n, b, owner=True)
        ch._header[:] = 0
        ch._header[3] = generation
        ch._header[4] = n
        ch._header[5] = b
        ch._stats[:] = 0.0
        return ch

    @classmethod
    def attach(cls, name: str, n: int, b: int) -> "FrameChannel":
        # The worker (a child started with spawn) shares this process's resource tracker, whose
        # registry is a set: attaching registers the name again (no-op) and the owner's unlink
        # unregisters it once. Raises FileNotFoundError when the owner has unlinked it already.
        shm = shared_memory.SharedMemory(name=name, create=False)
        return cls(shm, n, b, owner=False)

    # ------------------------------------------------------------------ writer
    def publish(self, frame: int, positions: np.ndarray, body: np.ndarray, penetration: np.ndarray | None,
                step_ms: float, kinetic_energy: float = 0.0, residual: float = 0.0, seam_gap: float = 0.0) -> int:
        h = self._header
        nxt = int(h[0]) + 1
        h[1] = nxt
        pos, bod, pen = self._slots[nxt % 2]
        pos[...] = positions
        bod[...] = body
        if penetration is not None:
            pen[...] = penetration
        self._stats[:5] = (step_ms, kinetic_energy, residual, seam_gap, 0.0)
        h[6] = 1 if penetration is not None else 0
        h[2] = frame
        h[0] = nxt
        return nxt

    # ------------------------------------------------------------------ reader
    @property
    def seq(self) -> int:
        return int(self._header[0])

    def read(self, retries: int = 8) -> Frame | None:
        """The newest frame (copies), or None when nothing was published yet."""
        h = self._header
        for _ in range(retries):
            s = int(h[0])
            if s == 0:
                return None
            frame = int(h[2])
            flags = int(h[6])
            stats = self._stats.copy()
            pos, bod, pen = self._slots[s % 2]
            p, b = pos.copy(), bod.copy()
            d = pen.copy() if flags & 1 else None
            if int(h[1]) <= s + 1 and int(h[0]) == s:  # whole, and frame/stats belong to it
                return Frame(s, frame, p, b, d, float(stats[0]), float(stats[1]), float(stats[2]), float(stats[3]))
        return None

    # ------------------------------------------------------------------ lifetime
    def close(self) -> None:
        """Unmap (and, for the owner, unlink) the block. Idempotent."""
        if self._closed:
            return
        self._closed = True
        self._header = self._stats = None
        self._slots = []
        try:
            self.shm.close()
        except BufferError:
            pass
        if self.owner:
            try:
                self.shm.unlink()
            except FileNotFoundError:
                pass
