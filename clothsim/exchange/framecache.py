"""FrameCache: simulated frames on disk, compact, crash-safe, with random access.

A drape is simulated once, then exported, scrubbed or rendered many times from the cache.

Layout: a folder holding

* ``index.json``: format, version, fps, vertex count, precision, frames per chunk, the caller's
  metadata (scene and settings, a JSON object) and its SHA-256, and the number of frames in sealed
  (complete, fsync-ed) chunks. Written atomically (temporary name + rename).
* ``topology.npz``: the triangles (M, 3) and any other per-mesh arrays the caller gives (UVs, ...),
  stored once.
* ``chunk_000000.csf``, ``chunk_000001.csf``, ...: ``frames_per_chunk`` frame records each,
  append-only.

Frame record: a 52-byte little-endian header (magic ``CSF1``, frame index, payload length, CRC-32 of
header fields and payload, integer width, lower corner ``lo`` (3 float64) [m], step (float64) [m])
then the payload: positions quantised as ``q = round((x - lo) / step)`` with ``lo`` the frame's
bounding-box minimum and ``step = 2 * precision``; stored axis-major, delta-coded along the vertex
order (wrapping in the integer type), byte-shuffled and zlib-compressed. uint16 is used when the
frame's extent fits in 65535 steps (6.5 m at the default 0.05 mm precision), else uint32.

Error bound: decoding gives ``lo + q * step`` in float64, within ``step / 2 = precision`` of the
stored position per coordinate (rounding to the nearest step); frames are returned as float32,
which adds at most ``2**-24 * |x|`` (float32 rounding). :attr:`FrameCache.error_bound` gives the sum
for the cached frames.

Crash safety: records are only ever appended; each append is one ``write`` of a whole record
followed by a flush, and chunks are fsync-ed when sealed and on :meth:`flush`/:meth:`close`. A
record cut short or corrupted (by a crash or a damaged disk) fails its length or CRC check when the
cache is opened: it and everything after it is dropped (reported in :attr:`FrameCache.damage` and a
warning), every earlier frame stays readable, and mode ``"a"`` truncates the damaged tail and goes on
appending after the last good frame.

Staleness: opening with ``metadata=`` compares SHA-256 hashes of canonical JSON (sorted keys) and
raises :class:`StaleCacheError` naming the keys that differ, so a cache of another scene is never
silently reused. One writer at a time (no file locking).
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import struct
import warnings
import zlib
from collections.abc import Mapping
from pathlib import Path

import numpy as np

from ..errors import InputError
from ..io import write_json, write_npz

__all__ = ["FrameCache", "StaleCacheError", "metadata_hash"]

FORMAT = "clothsim-framecache"
VERSION = 1
_MAGIC = b"CSF1"
_HEADER = struct.Struct("<4sIII B B 2x 3d d")  # magic, frame, payload_len, crc, width, reserved
_INDEX = "index.json"
_TOPOLOGY = "topology.npz"
_DTYPES = {2: np.dtype('<u2'), 4: np.dtype('<u4')}


class StaleCacheError(InputError):
    """The cache was written for other scene/settings metadata than the current ones."""


def metadata_hash(metadata: Mapping) -> str:
    """SHA-256 (hex) of ``metadata`` as canonical JSON: sorted keys, no whitespace, UTF-8."""
    try:
        text = json.dumps(metadata, sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False)
    except (TypeError, ValueError) as e:
        raise InputError(f"frame cache metadata must be a JSON object of plain values: {e}") from None
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def _chunk_name(c: int) -> str:
    return f"chunk_{c:06d}.csf"


def _chunk_number(p: Path) -> int:
    try:
        return int(p.stem.split("_", 1)[1])
    except (IndexError, ValueError):
        return -1


def encode_frame(x: np.ndarray, precision: float, frame: int, level: int = 6) -> bytes:
    """One frame record (header + payload) for positions ``x`` (N, 3) [m]."""
    x = np.asarray(x, dtype=np.float64)
    lo = x.min(axis=0)
    step = 2.0 * precision
    span = float((x.max(axis=0) - lo).max()) / step
    if span <= 65535 - 1:  # one step of slack for rounding at the top
        width = 2
    elif span <= 2.0**32 - 2:
        width = 4
    else:
        raise InputError(f"frame {frame}: extent {span * step:.3g} m is too large for precision {precision} m")
    dt = _DTYPES[width]
    q = np.rint((x - lo) / step).astype(dt).T  # (3, N) axis-major
    d = q.copy()
    d[:, 1:] = q[:, 1:] - q[:, :-1]  # wraps in the unsigned type; undone by a wrapping cumsum
    shuffled = d.reshape(-1).view(np.uint8).reshape(-1, width).T.tobytes()
    payload = zlib.compress(shuffled, level)
    fields = (_MAGIC, frame, len(payload), 0, width, 0, *lo.tolist(), step)
    crc = zlib.crc32(payload, zlib.crc32(_HEADER.pack(*fields)))
    return _HEADER.pack(_MAGIC, frame, len(payload), crc, width, 0, *lo.tolist(), step) + payload


def decode_payload(header: tuple, payload: bytes, vertex_count: int) -> np.ndarray:
    """Positions (N, 3) float64 from a record's header fields and payload."""
    _, _, _, _, width, _, lx, ly, lz, step = header
    raw = np.frombuffer(zlib.decompress(payload), dtype=np.uint8)
    d = raw.reshape(width, -1).T.copy().view(_DTYPES[width]).reshape(3, vertex_count)
    q = np.cumsum(d, axis=1, dtype=_DTYPES[width])
    return q.T.astype(np.float64) * step + np.array([lx, ly, lz])


class FrameCache:
    """Simulated frames on disk (see the module doc for format, error bound and crash safety).

    Args:
        path: the cache folder.
        mode: ``"w"`` create (replacing an existing cache there), ``"a"`` append to an existing
            cache, ``"r"`` read only.
        topology: mode "w": the triangles (M, 3), or a mapping with ``"triangles"`` and any other
            arrays to keep with them (e.g. ``"uv"``); ``"vertex_count"`` in the mapping overrides
            ``triangles.max() + 1``. Modes "r"/"a": if given, must equal the stored triangles.
        metadata: the scene and settings that produce the frames (a JSON object). Mode "w": stored
            with its hash. Modes "r"/"a": if given, must hash to the stored hash, else
            :class:`StaleCacheError`.
        fps: frames per second (mode "w", required).
        precision: largest quantisation error per coordinate [m] (mode "w"; default 5e-5 = 0.05 mm).
        frames_per_chunk: frames per chunk file (mode "w").

    Use as a context manager or call :meth:`close`.
    """

    def __init__(self, path: str | os.PathLike, mode: str = "r", *, topology=None, metadata: Mapping | None = None,
                 fps: float | None = None, precision: float = 5e-5, frames_per_chunk: int = 64,
                 compress_level: int = 6):
        if mode not in ("r", "w", "a"):
            raise InputError(f"FrameCache {path}: mode must be 'r', 'w' or 'a', got {mode!r}")
        self.path = Path(path)
        self.mode = mode
        self._level = int(compress_level)
        self._records: list[tuple[int, int, int]] = []  # (chunk, offset, record length) per frame
        self._writer = None
        self._writer_chunk = -1
        self.damage: str | None = None
        if mode == "w":
            self._create(topology, metadata, fps, precision, frames_per_chunk)
        else:
            self._open_existing(topology, metadata)

    # ------------------------------------------------------------------ create / open
    def _create(self, topology, metadata, fps, precision, frames_per_chunk):
        where = f"FrameCache {self.path}"
        if topology is None:
            raise InputError(f"{where}: mode 'w' needs topology= (triangles (M, 3) or a mapping with 'triangles')")
        topo = dict(topology) if isinstance(topology, Mapping) else {"triangles": topology}
        if "triangles" not in topo:
            raise InputError(f"{where}: topology mapping needs a 'triangles' entry, got keys {sorted(topo)}")
        tris = np.asarray(topo["triangles"])
        if tris.ndim != 2 or tris.shape[1] != 3 or len(tris) == 0 or not np.issubdtype(tris.dtype, np.integer):
            raise InputError(f"{where}: topology triangles must be integer (M, 3) with M > 0, "
                             f"got {tris.dtype} {tris.shape}")
        n = int(topo.pop("vertex_count", int(tris.max()) + 1))
        if tris.min() < 0 or tris.max() >= n:
            raise InputError(f"{where}: triangle indices span [{tris.min()}, {tris.max()}] but vertex_count is {n}")
        if fps is None or not (float(fps) > 0 and math.isfinite(float(fps))):
            raise InputError(f"{where}: mode 'w' needs fps= a positive number of frames per second, got {fps!r}")
        if not (float(precision) > 0 and math.isfinite(float(precision))):
            raise InputError(f"{where}: precision must be a positive number of metres, got {precision!r}")
        if int(frames_per_chunk) < 1:
            raise InputError(f"{where}: frames_per_chunk must be >= 1, got {frames_per_chunk!r}")
        meta = {} if metadata is None else metadata
        if not isinstance(meta, Mapping):
            raise InputError(f"{where}: metadata must be a mapping (JSON object), got {type(meta).__name__}")
        digest = metadata_hash(meta)
        if self.path.exists():
            if not self.path.is_dir():
                raise InputError(f"{where}: exists and is not a folder")
            entries = list(self.path.iterdir())
            if entries and not (self.path / _INDEX).is_file():
                raise InputError(f"{where}: the folder is not empty and holds no frame cache; refusing to overwrite it")
            if (self.path / _INDEX).exists():
                (self.path / _INDEX).unlink()  # first: a crash from here on leaves no half-old cache
            for e in entries:  # only our own files
                if e.name == _TOPOLOGY or (e.name.startswith("chunk_") and e.name.endswith(".csf")):
                    e.unlink()
        self.path.mkdir(parents=True, exist_ok=True)
        topo["triangles"] = tris.astype(np.int32 if n < 2**31 else np.int64)
        write_npz(self.path / _TOPOLOGY, **{k: np.asarray(v) for k, v in topo.items()})
        self._index = {"format": FORMAT, "version": VERSION, "fps": float(fps), "vertex_count": n,
                       "triangle_count": int(len(tris)), "precision_m": float(precision),
                       "frames_per_chunk": int(frames_per_chunk), "metadata": meta, "metadata_sha256": digest,
                       "frames_sealed": 0}
        write_json(self.path / _INDEX, self._index)  # last: a folder with an index is a cache
        self._topology = topo

    def _open_existing(self, topology, metadata):
        where = f"FrameCache {self.path}"
        idx_path = self.path / _INDEX
        if not idx_path.is_file():
            raise InputError(f"{where}: no frame cache here ({_INDEX} not found)")
        try:
            self._index = json.loads(idx_path.read_text(encoding="utf-8"))
        except (OSError, ValueError) as e:
            raise InputError(f"{where}: cannot read {_INDEX}: {e}") from None
        if self._index.get("format") != FORMAT or self._index.get("version") != VERSION:
            raise InputError(f"{where}: {_INDEX} is not a {FORMAT} version {VERSION} index "
                             f"(format {self._index.get('format')!r}, version {self._index.get('version')!r})")
        if metadata is not None:
            digest = metadata_hash(metadata)
            if digest != self._index["metadata_sha256"]:
                old = self._index.get("metadata", {})
                keys = sorted(k for k in set(old) | set(metadata) if old.get(k, ...) != metadata.get(k, ...))
                raise StaleCacheError(f"{where}: the cache was made for other scene/settings metadata "
                                      f"(hash {self._index['metadata_sha256'][:12]} vs current {digest[:12]}; "
                                      f"keys that differ: {keys}); simulate again or open without metadata")
        with np.load(self.path / _TOPOLOGY) as z:
            self._topology = {k: z[k] for k in z.files}
        if topology is not None:
            given = np.asarray(topology["triangles"] if isinstance(topology, Mapping) else topology)
            if not np.array_equal(given, self._topology["triangles"]):
                raise StaleCacheError(f"{where}: the cache's triangles differ from the given topology")
        self._scan()
        if self.mode == "a":
            self._repair_tail()

    def _scan(self) -> None:
        """Find every intact record in chunk order; stop at the first cut-short or corrupt one."""
        n, fpc = self.vertex_count, self.frames_per_chunk
        c = 0
        while True:
            fp = self.path / _chunk_name(c)
            if not fp.is_file():
                break
            data = fp.read_bytes()
            off, k = 0, 0
            problem = None
            while off < len(data) and k < fpc:
                frame = len(self._records)
                problem = self._check_record(data, off, frame, n)
                if problem:
                    break
                length = _HEADER.size + _HEADER.unpack_from(data, off)[2]
                self._records.append((c, off, length))
                off += length
                k += 1
            if problem is None and off < len(data):
                problem = f"{len(data) - off} bytes after its last frame"
            if problem:
                self.damage = (f"{fp.name}: {problem}; kept frames 0..{len(self._records) - 1}, dropped the rest")
                break
            if k < fpc:
                break  # the open (last) chunk
            c += 1
        later = sorted(p.name for p in self.path.glob("chunk_*.csf") if _chunk_number(p) > c)
        if later and self.damage is None:
            self.damage = f"chunk files after an incomplete chunk ignored: {later}"
        sealed = int(self._index.get("frames_sealed", 0))
        if len(self._records) < sealed:
            lost = f"the index says {sealed} frames were sealed but {len(self._records)} are intact"
            self.damage = lost if self.damage is None else f"{self.damage} ({lost})"
        if self.damage:
            warnings.warn(f"FrameCache {self.path}: {self.damage}", RuntimeWarning, stacklevel=3)

    @staticmethod
    def _check_record(data: bytes, off: int, frame: int, n: int) -> str | None:
        if off + _HEADER.size > len(data):
            return f"frame {frame}: header cut short ({len(data) - off} of {_HEADER.size} bytes)"
        h = _HEADER.unpack_from(data, off)
        magic, fidx, plen, crc, width = h[:5]
        if magic != _MAGIC:
            return f"frame {frame}: bad record marker {magic!r}"
        if fidx != frame:
            return f"frame {frame}: record says frame {fidx}"
        if width not in _DTYPES:
            return f"frame {frame}: bad integer width {width}"
        end = off + _HEADER.size + plen
        if end > len(data):
            return f"frame {frame}: payload cut short ({len(data) - off - _HEADER.size} of {plen} bytes)"
        fields = (magic, fidx, plen, 0, *h[4:])
        if zlib.crc32(data[off + _HEADER.size:end], zlib.crc32(_HEADER.pack(*fields))) != crc:
            return f"frame {frame}: CRC mismatch (corrupt record)"
        return None

    def _repair_tail(self) -> None:
        """Mode "a": cut each chunk after its last good record and delete chunks without one, so
        appends continue right after the last good frame."""
        if self.damage is None:
            return
        ends = {}
        for c, off, length in self._records:
            ends[c] = off + length
        for p in self.path.glob("chunk_*.csf"):
            c = _chunk_number(p)
            if c not in ends:
                p.unlink()
            elif p.stat().st_size > ends[c]:
                with open(p, "rb+") as fh:
                    fh.truncate(ends[c])
                    os.fsync(fh.fileno())

    # ------------------------------------------------------------------ properties
    @property
    def fps(self) -> float:
        return float(self._index["fps"])

    @property
    def metadata(self) -> dict:
        return dict(self._index["metadata"])

    @property
    def metadata_sha256(self) -> str:
        return str(self._index["metadata_sha256"])

    @property
    def vertex_count(self) -> int:
        return int(self._index["vertex_count"])

    @property
    def precision(self) -> float:
        """Largest quantisation error per coordinate [m] (before float32 rounding)."""
        return float(self._index["precision_m"])

    @property
    def frames_per_chunk(self) -> int:
        return int(self._index["frames_per_chunk"])

    @property
    def triangles(self) -> np.ndarray:
        return self._topology["triangles"].astype(np.int64)

    @property
    def topology(self) -> dict:
        """The stored topology arrays (``triangles`` and whatever else was given)."""
        return dict(self._topology)

    @property
    def error_bound(self) -> float:
        """Largest error per coordinate [m] of :meth:`frame` in float64: the quantisation half-step
        (``precision``) plus float64 rounding. Frames read as float32 (``cache[k]``) add the float32
        rounding of the value, at most ``2**-24 * |x|``."""
        return self.precision * (1.0 + 1e-9)

    def nbytes(self) -> int:
        """Bytes on disk of the frame records (not index or topology)."""
        return sum(r[2] for r in self._records)

    def __len__(self) -> int:
        return len(self._records)

    def __repr__(self) -> str:
        return f"FrameCache({str(self.path)!r}, mode={self.mode!r}, frames={len(self)}, fps={self.fps})"

    # ------------------------------------------------------------------ writing
    def append(self, positions) -> int:
        """Add the next frame: positions (N, 3) [m]. Returns its frame index."""
        if self.mode == "r":
            raise InputError(f"FrameCache {self.path}: opened read-only (mode 'r'); open with 'a' to append")
        x = np.asarray(positions, dtype=np.float64)
        if x.shape != (self.vertex_count, 3):
            raise InputError(f"FrameCache {self.path}: frame {len(self)} has shape {x.shape}; "
                             f"expected ({self.vertex_count}, 3)")
        if not np.all(np.isfinite(x)):
            raise InputError(f"FrameCache {self.path}: frame {len(self)} has non-finite positions "
                             f"(vertex {int(np.argwhere(~np.isfinite(x))[0][0])})")
        k = len(self._records)
        c, slot = divmod(k, self.frames_per_chunk)
        if self._writer is not None and self._writer_chunk != c:
            self._seal()
        if self._writer is None:
            self._writer = open(self.path / _chunk_name(c), "ab")
            self._writer_chunk = c
        rec = encode_frame(x, self.precision, k, self._level)
        off = self._writer.tell()
        self._writer.write(rec)
        self._writer.flush()
        self._records.append((c, off, len(rec)))
        if slot == self.frames_per_chunk - 1:
            self._seal()
        return k

    def _seal(self) -> None:
        """fsync the open chunk, close it and record the sealed frame count in the index."""
        if self._writer is None:
            return
        self._writer.flush()
        os.fsync(self._writer.fileno())
        self._writer.close()
        self._writer = None
        self._index["frames_sealed"] = len(self._records)
        write_json(self.path / _INDEX, self._index)

    def flush(self) -> None:
        """Make every appended frame durable (fsync) and update the index."""
        if self._writer is not None:
            self._writer.flush()
            os.fsync(self._writer.fileno())
            self._index["frames_sealed"] = len(self._records)
            write_json(self.path / _INDEX, self._index)

    def close(self) -> None:
        """Seal the open chunk (modes "w"/"a") and close every file. Idempotent."""
        if self._writer is not None:
            self._seal()

    def __del__(self) -> None:
        # not closed: close the chunk file; what was written and flushed stays readable (the next
        # open finds every complete record); the index's sealed count is not updated
        w = getattr(self, "_writer", None)
        if w is not None:
            w.close()

    def __enter__(self) -> "FrameCache":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    # ------------------------------------------------------------------ reading
    def _read(self, k: int) -> np.ndarray:
        c, off, length = self._records[k]
        if self._writer is not None and self._writer_chunk == c:
            self._writer.flush()
        with open(self.path / _chunk_name(c), "rb") as fh:
            fh.seek(off)
            data = fh.read(length)
        problem = self._check_record(data, 0, k, self.vertex_count)
        if problem:
            raise InputError(f"FrameCache {self.path}: {_chunk_name(c)}: {problem} (changed since it was opened?)")
        return decode_payload(_HEADER.unpack_from(data, 0), data[_HEADER.size:], self.vertex_count)

    def frame(self, k: int, dtype=np.float64) -> np.ndarray:
        """Frame ``k`` (N, 3) [m] in ``dtype`` (float64 keeps the decoded values exactly)."""
        k = int(k)
        if k < 0:
            k += len(self)
        if not 0 <= k < len(self):
            raise IndexError(f"FrameCache {self.path}: frame {k} out of range; the cache has {len(self)} frames")
        return self._read(k).astype(dtype, copy=False)

    def __getitem__(self, k):
        """Frame ``k`` as (N, 3) float32 [m] (negative k counts from the end); a slice gives (F, N, 3)."""
        if isinstance(k, slice):
            out = np.zeros((len(range(*k.indices(len(self)))), self.vertex_count, 3), dtype=np.float32)
            for j, i in enumerate(range(*k.indices(len(self)))):
                out[j] = self.frame(i)
            return out
        return self.frame(k, np.float32)

    def __iter__(self):
        for k in range(len(self)):
            yield self[k]

    def read_all(self) -> np.ndarray:
        """Every frame, (F, N, 3) float32 [m]."""
        return self[:]

    # ------------------------------------------------------------------ checks
    @staticmethod
    def is_valid_for(path: str | os.PathLike, metadata: Mapping) -> bool:
        """True when ``path`` holds a frame cache made for exactly this metadata (hash equal)."""
        try:
            idx = json.loads((Path(path) / _INDEX).read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return False
        return idx.get("format") == FORMAT and idx.get("metadata_sha256") == metadata_hash(metadata)
