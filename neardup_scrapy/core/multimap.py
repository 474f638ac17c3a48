"""A compact multimap from 32-bit bucket keys to 32-bit page ids, with no Python object per entry.

Layout: a leveled log-structured merge of sorted runs. New entries go to a small buffer (a
dict of at most ``BUFFER`` entries, so the newest pages are found by hashing rather than by a
scan); a full buffer is sorted into level 0, and a level that outgrows ``RATIO`` times the
one before it is merged into the next. A lookup is therefore one search per level, and every
entry is rewritten about ``RATIO / 2`` times per level over its life, all inside numpy.

Small levels are plain sorted ``uint32`` keys searched with ``searchsorted``. Large levels
(at least ``DIRECTORY_MIN`` entries) add a *directory*: ``offsets[b]`` is where the keys whose
top ``D`` bits equal ``b`` start, with ``D`` chosen so a directory bucket holds about 8
entries. Since ``D >= 16``, the top bits are implied by the bucket and only the low 16 bits of
each key are stored, so an entry costs 6 bytes (2 of key, 4 of id) instead of 8, and a lookup
reads one directory slot and one short contiguous window instead of ~25 scattered cache lines
of a binary search. That keeps query time nearly flat from thousands to millions of pages.

Keys are 32-bit mixes of the detector's 64-bit keys; two keys that share 32 bits only add a
false candidate, which the detector's verification discards.
"""

from __future__ import annotations

import ctypes
import ctypes.util
from collections.abc import Callable
from dataclasses import dataclass
from typing import cast

import numpy as np
import numpy.typing as npt

U32 = npt.NDArray[np.uint32]
U16 = npt.NDArray[np.uint16]
I32 = npt.NDArray[np.int32]
I64 = npt.NDArray[np.int64]

RATIO = 8
BUFFER = 2048
DIRECTORY_MIN = 1 << 18
_EMPTY_IDS = np.empty(0, dtype=np.int32)
_STEPS = np.arange(256, dtype=np.uint32)
#: Merges above this many entries hand their freed buffers back to the OS (glibc only).
TRIM_AFTER = 1 << 19


def _load_malloc_trim() -> Callable[[int], int] | None:
    """glibc's ``malloc_trim``, or ``None`` elsewhere.

    Merging large levels frees big temporary arrays; glibc raises its mmap threshold after the
    first such free and keeps later ones on the heap, so without a trim the process keeps
    hundreds of MB it no longer uses at a million pages.
    """
    name = ctypes.util.find_library("c")
    if not name:
        return None
    try:
        trim = ctypes.CDLL(name).malloc_trim
    except (OSError, AttributeError):
        return None
    trim.argtypes = [ctypes.c_size_t]
    trim.restype = ctypes.c_int
    return cast("Callable[[int], int]", trim)


_MALLOC_TRIM = _load_malloc_trim()


@dataclass
class _Level:
    """One sorted run: full keys (small runs) or directory + low 16 key bits (large runs)."""

    ids: I32
    keys: U32 | None = None
    low: U16 | None = None
    offsets: U32 | None = None
    shift: int = 32

    def __len__(self) -> int:
        return len(self.ids)

    @property
    def nbytes(self) -> int:
        parts = (self.ids, self.keys, self.low, self.offsets)
        return sum(p.nbytes for p in parts if p is not None)

    @classmethod
    def build(cls, keys: U32, ids: I32) -> _Level:
        """A level from keys sorted ascending and their ids."""
        n = len(keys)
        if n < DIRECTORY_MIN:
            return cls(ids=ids, keys=keys)
        bits = max(16, min(30, int(np.log2(n)) - 3))
        shift = 32 - bits
        bounds = (np.arange(1 << bits, dtype=np.uint64) << np.uint64(shift)).astype(np.uint32)
        offsets = np.searchsorted(keys, bounds).astype(np.uint32)
        offsets = np.append(offsets, np.uint32(n))
        return cls(ids=ids, low=(keys & np.uint32(0xFFFF)).astype(np.uint16), offsets=offsets, shift=shift)

    def full_keys(self) -> U32:
        """All keys of the level, sorted (rebuilt from the directory for large levels)."""
        if self.keys is not None:
            return self.keys
        assert self.offsets is not None and self.low is not None
        buckets = np.repeat(np.arange(len(self.offsets) - 1, dtype=np.uint32), np.diff(self.offsets))
        return (buckets << np.uint32(self.shift)) | self.low.astype(np.uint32)

    def __post_init__(self) -> None:
        self._shift = np.uint32(self.shift)
        self._ends = self.offsets[1:] if self.offsets is not None else None  # bucket b ends at _ends[b]

    def lookup(self, keys: U32, low: U16 | None) -> I32:
        """Ids under any of ``keys`` in this level (``low``: the keys' low 16 bits, which the
        directory levels need)."""
        if self.keys is not None:
            # (array methods: the np.searchsorted wrapper costs as much as a short search)
            lo = self.keys.searchsorted(keys, side="left")
            return _gather(self.ids, lo, self.keys.searchsorted(keys, side="right") - lo)
        assert self.offsets is not None and self.low is not None
        assert self._ends is not None and low is not None
        buckets = keys >> self._shift
        start = self.offsets[buckets]
        width = self._ends[buckets] - start
        widest = int(width.max()) if len(width) else 0
        if widest == 0:
            return _EMPTY_IDS
        steps = _STEPS[:widest] if widest <= len(_STEPS) else np.arange(widest, dtype=np.uint32)
        index = start[:, None] + steps[None, :]  # window of each key's directory bucket
        inside = steps[None, :] < width[:, None]
        index = np.where(inside, index, 0)
        hit = inside & (self.low[index] == low[:, None])
        found: I32 = self.ids[index[hit]]
        return found


def _gather(ids: I32, start: I64, count: I64) -> I32:
    """Concatenate ``ids[start[i] : start[i] + count[i]]`` for all ``i``."""
    (nonzero,) = count.nonzero()
    if not len(nonzero):
        return _EMPTY_IDS
    start, count = start[nonzero], count[nonzero]
    if int(np.add.reduce(count)) == len(count):  # one id per key found
        return ids[start]
    return np.concatenate([ids[s : s + c] for s, c in zip(start.tolist(), count.tolist(), strict=True)])


class KeyMultimap:
    """Multimap ``uint32 key -> int32 id`` in sorted numpy runs plus a small buffer."""

    def __init__(self) -> None:
        self._buffer: dict[int, list[int]] = {}
        self._buffered = 0
        self._levels: list[_Level] = []

    def __len__(self) -> int:
        return self._buffered + sum(len(level) for level in self._levels)

    @property
    def nbytes(self) -> int:
        """Bytes held by the sorted runs, plus 8 per buffered entry as the arrays would take."""
        return 8 * self._buffered + sum(level.nbytes for level in self._levels)

    def add(self, keys: U32, doc_id: int) -> None:
        """Add ``doc_id`` under every key of ``keys``."""
        n = len(keys)
        if n == 0:
            return
        if n > BUFFER:  # more keys than a buffer holds: push them as a run of their own
            self._push(np.sort(keys), np.full(n, doc_id, dtype=np.int32))
            return
        if self._buffered + n > BUFFER:
            self._flush()
        buffer = self._buffer
        for key in keys.tolist():
            ids = buffer.get(key)
            if ids is None:
                buffer[key] = [doc_id]
            else:
                ids.append(doc_id)
        self._buffered += n

    def lookup(self, keys: U32) -> I32:
        """All ids stored under any of ``keys`` (unsorted, may repeat)."""
        if not len(keys):
            return _EMPTY_IDS
        found: list[I32] = []
        if self._buffered:
            hits = [ids for ids in map(self._buffer.get, keys.tolist()) if ids is not None]
            if hits:
                found.append(np.array([i for ids in hits for i in ids], dtype=np.int32))
        low: U16 | None = None  # the keys' low 16 bits, for the directory levels
        for level in self._levels:
            if len(level):
                if level.keys is None and low is None:
                    low = keys.astype(np.uint16)
                ids = level.lookup(keys, low)
                if len(ids):
                    found.append(ids)
        if not found:
            return _EMPTY_IDS
        return np.concatenate(found) if len(found) > 1 else found[0]

    def _flush(self) -> None:
        if not self._buffered:
            return
        keys = np.fromiter(self._buffer, dtype=np.uint32, count=len(self._buffer))
        counts = np.fromiter(map(len, self._buffer.values()), dtype=np.int64, count=len(self._buffer))
        ids = np.fromiter(
            (i for ids in self._buffer.values() for i in ids), dtype=np.int32, count=self._buffered
        )
        keys = np.repeat(keys, counts)
        order = np.argsort(keys, kind="stable")
        self._push(keys[order], ids[order])
        self._buffer = {}
        self._buffered = 0

    def _push(self, keys: U32, ids: I32) -> None:
        level = 0
        while True:
            if level == len(self._levels):
                self._levels.append(_Level.build(keys, ids))
                return
            old = self._levels[level]
            merged_keys, merged_ids = _merge(old, keys, ids)
            if len(merged_keys) <= BUFFER * RATIO ** (level + 1):
                self._levels[level] = _Level.build(merged_keys, merged_ids)
                if len(merged_keys) >= TRIM_AFTER and _MALLOC_TRIM is not None:
                    del merged_keys, merged_ids, old, keys, ids
                    _MALLOC_TRIM(0)
                return
            # This level is full: carry the merged run one level down and leave it empty.
            self._levels[level] = _Level(ids=_EMPTY_IDS, keys=np.empty(0, dtype=np.uint32))
            keys, ids = merged_keys, merged_ids
            level += 1


def _merge(level: _Level, keys: U32, ids: I32) -> tuple[U32, I32]:
    if not len(level):
        return keys, ids
    all_keys = np.concatenate((level.full_keys(), keys))
    all_ids = np.concatenate((level.ids, ids))
    order = np.argsort(all_keys, kind="stable")  # two sorted runs: timsort merges them linearly
    return all_keys[order], all_ids[order]
