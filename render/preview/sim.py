"""The window's handle on the simulation worker process (multiprocessing, spawn)."""

from __future__ import annotations

import multiprocessing as mp
import queue

from .worker import worker_main


class SimProcess:
    """Starts :func:`render.preview.worker.worker_main` in its own process and talks to it.

    ``send(name, *args)`` queues a command (never blocks); ``poll()`` returns the events that
    arrived; ``sent`` counts commands so a caller can wait until the worker has ``handled`` them
    (reported in its ``state`` events).
    """

    def __init__(self, scene_path, *, level=None, device: str | None = None, playing: bool = False) -> None:
        ctx = mp.get_context("spawn")
        self.commands = ctx.Queue()
        self.events = ctx.Queue()
        self.sent = 0
        self.proc = ctx.Process(target=worker_main, name="clothsim-preview-sim", daemon=True,
                                args=(self.commands, self.events, None if scene_path is None else str(scene_path),
                                      level, device, playing))
        self.proc.start()
        self.pid = self.proc.pid
        self._closed = False

    def send(self, name: str, *args) -> None:
        if self._closed:
            return
        self.sent += 1
        self.commands.put((name, *args))

    def poll(self, limit: int = 64) -> list[dict]:
        out = []
        for _ in range(limit):
            try:
                out.append(self.events.get_nowait())
            except queue.Empty:
                break
        return out

    @property
    def alive(self) -> bool:
        return self.proc.is_alive()

    def close(self, timeout: float = 10.0) -> None:
        """Ask the worker to quit, wait for it, and end it if it does not. Idempotent."""
        if self._closed:
            return
        self._closed = True
        try:
            self.commands.put(("quit",))
        except (OSError, ValueError):
            pass
        import time

        deadline = time.perf_counter() + timeout
        while self.proc.is_alive() and time.perf_counter() < deadline:
            self.poll(1024)   # keep draining: a worker blocked on a full event pipe cannot exit
            self.proc.join(0.05)
        if self.proc.is_alive():
            self.proc.terminate()
            self.proc.join(2.0)
        for q in (self.commands, self.events):
            q.cancel_join_thread()
            q.close()
