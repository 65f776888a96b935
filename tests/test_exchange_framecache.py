"""FrameCache: quantisation bound, random access, append after reopen, crash recovery, staleness.

Reference for the bound: positions are stored as q = round((x - lo) / s) with s = 2 * precision,
so |lo + q s - x| <= s / 2 = precision per coordinate (exact arithmetic; float64 adds ~1e-16
relative, covered by error_bound = precision * (1 + 1e-9)). Frames read as float32 add one
float32 rounding, <= 2**-24 |x|.
"""

from __future__ import annotations

import json
import os
import warnings

import numpy as np
import pytest

from clothsim.errors import InputError
from clothsim.exchange import FrameCache, StaleCacheError, metadata_hash

META = {"scene": "scenes/skirt.toml", "level": 2, "sim": {"dt": 1 / 60, "substeps": 10}, "fabric": "denim"}


def cloth_frames(count=10, n=24):
    """A hanging sheet (n x n vertices, 1 m) waving in x and z over ``count`` frames, (F, N, 3)."""
    i, j = np.meshgrid(np.linspace(-0.5, 0.5, n), np.linspace(0.5, 1.5, n))
    base = np.stack([i.ravel(), j.ravel(), np.zeros(n * n)], axis=1)
    out = []
    for k in range(count):
        x = base.copy()
        x[:, 2] = 0.1 * np.sin(2.0 * base[:, 0] + 0.4 * k) * (1.5 - base[:, 1])
        x[:, 0] += 0.01 * k
        out.append(x)
    return np.stack(out)


def grid_triangles(n=24):
    c = np.arange((n - 1) * (n - 1))
    a = (c // (n - 1)) * n + c % (n - 1)
    return np.concatenate([np.stack([a, a + 1, a + n + 1], 1), np.stack([a, a + n + 1, a + n], 1)])


def write_cache(path, frames, **kw):
    kw.setdefault("frames_per_chunk", 4)
    with FrameCache(path, "w", topology={"triangles": grid_triangles(), "uv": frames[0][:, :2]}, metadata=META,
                    fps=30, **kw) as c:
        for x in frames:
            c.append(x)
    return path


def test_roundtrip_within_stated_bound_and_compact(tmp_path):
    frames = cloth_frames(10)
    write_cache(tmp_path / "c", frames)
    c = FrameCache(tmp_path / "c")
    assert len(c) == 10 and c.fps == 30 and c.metadata == META and c.vertex_count == frames.shape[1]
    np.testing.assert_array_equal(c.triangles, grid_triangles())
    np.testing.assert_array_equal(c.topology["uv"], frames[0][:, :2])
    assert c.error_bound == pytest.approx(5e-5)  # 0.05 mm, the default precision
    err64 = max(np.abs(c.frame(k) - frames[k]).max() for k in range(10))
    assert err64 <= c.error_bound
    assert err64 > 0.5 * c.precision  # the positions really are quantised (the bound is tight)
    for k in range(10):
        x32 = c[k]
        assert x32.dtype == np.float32
        assert np.abs(x32 - frames[k]).max() <= c.error_bound + 2.0**-24 * np.abs(frames[k]).max()
    # compact: well below float32 (12 bytes per vertex); measured 1.1 bytes/vertex for this smooth sheet
    per_vertex = c.nbytes() / (len(c) * c.vertex_count)
    assert per_vertex < 6.0, per_vertex
    # a finer precision is honoured too
    write_cache(tmp_path / "fine", frames, precision=1e-6)
    f = FrameCache(tmp_path / "fine")
    assert max(np.abs(f.frame(k) - frames[k]).max() for k in range(10)) <= 1e-6 * (1 + 1e-9)


def test_large_extent_switches_to_32_bit(tmp_path):
    """An extent over 65535 steps (6.55 m at 0.05 mm) still meets the bound (uint32 codes)."""
    x = cloth_frames(2)
    x[1, :, 0] *= 20.0  # 20 m wide
    write_cache(tmp_path / "c", x)
    c = FrameCache(tmp_path / "c")
    assert np.abs(c.frame(1) - x[1]).max() <= c.error_bound


def test_random_access_and_slices(tmp_path):
    frames = cloth_frames(11)
    write_cache(tmp_path / "c", frames)
    c = FrameCache(tmp_path / "c")
    seq = c.read_all()
    assert seq.shape == (11, frames.shape[1], 3)
    rng = np.random.default_rng(1)
    for k in rng.permutation(11):
        np.testing.assert_array_equal(c[int(k)], seq[k])
    np.testing.assert_array_equal(c[-1], seq[10])
    np.testing.assert_array_equal(c[2:9:3], seq[[2, 5, 8]])
    assert [np.array_equal(a, b) for a, b in zip(c, seq)] == [True] * 11
    with pytest.raises(IndexError, match="frame 11 out of range; the cache has 11 frames"):
        c[11]


def test_append_after_reopen(tmp_path):
    frames = cloth_frames(10)
    write_cache(tmp_path / "c", frames[:6])  # chunks: 4 + 2 frames
    with FrameCache(tmp_path / "c", "a", metadata=META) as c:
        assert len(c) == 6
        for x in frames[6:]:
            c.append(x)
        np.testing.assert_allclose(c.frame(9), frames[9], atol=c.error_bound)  # readable while appending
    c = FrameCache(tmp_path / "c")
    assert len(c) == 10 and c.damage is None
    assert max(np.abs(c.frame(k) - frames[k]).max() for k in range(10)) <= c.error_bound
    assert sorted(p.name for p in (tmp_path / "c").glob("chunk_*")) == [f"chunk_00000{i}.csf" for i in range(3)]
    assert json.loads((tmp_path / "c" / "index.json").read_text())["frames_sealed"] == 10


def test_truncated_last_chunk_detected_and_earlier_frames_survive(tmp_path):
    frames = cloth_frames(10)
    write_cache(tmp_path / "c", frames)  # chunks 0 and 1 full (4 frames), chunk 2 holds frames 8, 9
    last = tmp_path / "c" / "chunk_000002.csf"
    size = last.stat().st_size
    with open(last, "rb+") as f:  # a crash in the middle of writing frame 9
        f.truncate(size - 7)
    with pytest.warns(RuntimeWarning, match=r"chunk_000002.csf: frame 9: payload cut short"):
        c = FrameCache(tmp_path / "c")
    assert len(c) == 9 and "kept frames 0..8" in c.damage
    assert max(np.abs(c.frame(k) - frames[k]).max() for k in range(9)) <= c.error_bound
    assert last.stat().st_size == size - 7  # read mode repairs nothing
    # append mode cuts the torn record and goes on from frame 9
    with pytest.warns(RuntimeWarning):
        a = FrameCache(tmp_path / "c", "a", metadata=META)
    a.append(frames[9])
    a.close()
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a clean cache again: no warning
        c = FrameCache(tmp_path / "c")
    assert len(c) == 10 and c.damage is None
    assert max(np.abs(c.frame(k) - frames[k]).max() for k in range(10)) <= c.error_bound


def test_partial_header_and_corrupt_record(tmp_path):
    frames = cloth_frames(10)
    write_cache(tmp_path / "c", frames)
    with open(tmp_path / "c" / "chunk_000002.csf", "ab") as f:  # a crash after writing half a header
        f.write(b"CSF1\x0a\x00")
    with pytest.warns(RuntimeWarning, match="frame 10: header cut short"):
        assert len(FrameCache(tmp_path / "c")) == 10
    # flip one payload byte of frame 5 (chunk 1, second record): its CRC fails; frames 0-4 survive
    chunk1 = tmp_path / "c" / "chunk_000001.csf"
    data = bytearray(chunk1.read_bytes())
    first_len = 52 + int.from_bytes(data[8:12], "little")
    data[first_len + 60] ^= 0xFF
    chunk1.write_bytes(bytes(data))
    with pytest.warns(RuntimeWarning, match=r"frame 5: CRC mismatch.*10 frames were sealed but 5 are intact"):
        c = FrameCache(tmp_path / "c")
    assert len(c) == 5
    np.testing.assert_allclose(c.frame(4), frames[4], atol=c.error_bound)


def test_metadata_mismatch_refused(tmp_path):
    write_cache(tmp_path / "c", cloth_frames(3))
    reordered = {k: META[k] for k in reversed(list(META))}  # key order does not matter
    assert len(FrameCache(tmp_path / "c", "r", metadata=reordered)) == 3
    changed = dict(META, fabric="silk", sim={"dt": 1 / 60, "substeps": 20})
    with pytest.raises(StaleCacheError, match=r"other scene/settings metadata .*keys that differ: \['fabric', 'sim'\]"):
        FrameCache(tmp_path / "c", "r", metadata=changed)
    with pytest.raises(StaleCacheError):
        FrameCache(tmp_path / "c", "a", metadata=changed)
    assert FrameCache.is_valid_for(tmp_path / "c", reordered)
    assert not FrameCache.is_valid_for(tmp_path / "c", changed)
    assert not FrameCache.is_valid_for(tmp_path / "nothing", META)
    assert metadata_hash(META) == metadata_hash(reordered) != metadata_hash(changed)
    with pytest.raises(StaleCacheError, match="triangles differ"):
        FrameCache(tmp_path / "c", "r", topology=grid_triangles()[::-1])


def test_bad_use_errors(tmp_path):
    frames = cloth_frames(2)
    p = write_cache(tmp_path / "c", frames)
    with pytest.raises(InputError, match="opened read-only"):
        FrameCache(p).append(frames[0])
    with FrameCache(tmp_path / "d", "w", topology=grid_triangles(), fps=24) as c:
        with pytest.raises(InputError, match=r"frame 0 has shape \(3, 3\); expected \(576, 3\)"):
            c.append(np.zeros((3, 3)))
        bad = frames[0].copy()
        bad[7, 2] = np.nan
        with pytest.raises(InputError, match="non-finite positions .vertex 7"):
            c.append(bad)
    with pytest.raises(InputError, match="needs fps="):
        FrameCache(tmp_path / "e", "w", topology=grid_triangles())
    with pytest.raises(InputError, match="needs topology="):
        FrameCache(tmp_path / "e", "w", fps=30)
    with pytest.raises(InputError, match="mode must be 'r', 'w' or 'a'"):
        FrameCache(p, "x")
    with pytest.raises(InputError, match=r"no frame cache here \(index.json not found\)"):
        FrameCache(tmp_path / "nothing")
    with pytest.raises(InputError, match="JSON object of plain values"):
        FrameCache(tmp_path / "e", "w", topology=grid_triangles(), fps=30, metadata={"f": object()})
    other = tmp_path / "photos"
    other.mkdir()
    (other / "holiday.jpg").write_bytes(b"x")
    with pytest.raises(InputError, match="not empty and holds no frame cache; refusing to overwrite"):
        FrameCache(other, "w", topology=grid_triangles(), fps=30)
    assert os.listdir(other) == ["holiday.jpg"]
    # 'w' over an existing cache replaces it
    with FrameCache(p, "w", topology=grid_triangles(), fps=24, metadata={"new": True}) as c:
        c.append(frames[1])
    c = FrameCache(p)
    assert len(c) == 1 and c.metadata == {"new": True} and c.fps == 24
