"""A compact multimap from 48-bit bucket keys to 32-bit page ids, with no Python object per entry.

Layout: a leveled log-structured merge of sorted runs. New entries go to a small buffer (a
hash table of at most ``BUFFER`` entries, so the newest pages are found by hashing rather
than by a scan); a full buffer is sorted into level 0, and a level that outgrows ``BUFFER * RATIO**(k+1)``
entries is merged into the next. A lookup is one search per level, so the ratio is large
(32): at 31 bucket entries per page, 10k pages fill two levels and 1M pages three, which keeps
query time nearly flat. The price is write amplification -- every entry is rewritten about
``RATIO / 2`` times per level over its life -- which a linear merge (one ``searchsorted`` of
the smaller run into the larger, then masked copies, all inside numpy) keeps at a few
microseconds per page amortised.

Keys are the low 48 bits of the detector's 64-bit bucket keys, which the sketcher already
mixed. With 32-bit keys a million pages (31M entries) would make one query in four meet a page
by a chance key collision, and each such false candidate costs a fetch and a verification;
with 48 bits it is about one in 300,000.

Small levels are plain sorted ``uint64`` keys. Large levels (at least ``DIRECTORY_MIN``
entries) add a *directory*: slot ``b`` holds where the keys whose top ``D`` bits (of 48) equal
``b`` start (its low 32 bits) and a *summary* of them (its high 32 bits: bit ``key % 32`` set
for each), with ``D`` chosen so a directory bucket holds 4 to 8 entries on average (2 to 4 in
the smallest directory levels; the directory costs 1 to 2 bytes per entry, at most 4). Each
entry keeps only its key's low 32 bits, its *tag*: since ``D >= 16``, bucket and tag together
still determine all 48 bits, so merging loses nothing. An entry then costs 8 bytes (4 of tag,
4 of id) plus its directory share instead of 12, and a lookup reads one directory slot, and
the bucket only when the summary holds the key's bit: most keys looked up are in no bucket of a
level, and with 4 to 8 entries a summary rules out about 5 in 6 of them, so a key costs about
one cache miss per large level instead of two (a binary search over a level too large for the
caches takes one per halving). Only level 0, rewritten at every flush of the buffer, stays a
plain sorted run (a directory of ``2**16`` slots per flush would cost more than it saves).

Lookups and the buffer are compiled (:mod:`neardup_scrapy.core.native.bucketmap`): one call
searches every level and the buffer for all of a page's keys; merges stay in numpy.
"""

from __future__ import annotations

import ctypes
import ctypes.util
from collections.abc import Callable
from typing import cast

import numpy as np
import numpy.typing as npt

from .native.bucketmap import EntryBuffer, Run, lookup

U64 = npt.NDArray[np.uint64]
U32 = npt.NDArray[np.uint32]
I32 = npt.NDArray[np.int32]

RATIO = 32
BUFFER = 2048
DIRECTORY_MIN = 2 * BUFFER * RATIO  # 2**17: at least 2 entries per slot of 2**16
_EMPTY_IDS = np.empty(0, dtype=np.int32)
_EMPTY_KEYS = np.empty(0, dtype=np.uint64)
KEY_BITS = 48
_KEY_MASK = np.uint64((1 << KEY_BITS) - 1)
#: Merges above this many entries hand their freed buffers back to the OS (glibc only).
TRIM_AFTER = 1 << 19
_NO_BUFFER = EntryBuffer(1)


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


class _Level:
    """One sorted run: full keys (small runs) or a directory plus 32-bit tags (large runs)."""

    def __init__(self, ids: I32, keys: U64 | None = None) -> None:
        self.ids = ids
        self.keys: U64 | None = None
        self.tags: U32 | None = None
        self.directory: U64 | None = None
        n = len(ids)
        if keys is None:
            keys = _EMPTY_KEYS
        if n < DIRECTORY_MIN:
            self.keys = keys
            self.run = Run(ids, keys)
            return
        bits = max(16, min(40, int(np.log2(n)) - 2))
        self._shift = np.uint64(KEY_BITS - bits)
        bounds = np.arange(1 << bits, dtype=np.uint64) << self._shift
        starts = keys.searchsorted(bounds).astype(np.uint64)
        self.tags = keys.astype(np.uint32)  # the low 32 bits
        # each bucket's summary: bit (key % 32) of every key in it
        marks = np.left_shift(np.uint32(1), self.tags & np.uint32(31))
        summary = np.zeros(len(starts), dtype=np.uint64)
        filled = np.flatnonzero(np.diff(starts, append=np.uint64(n)))
        summary[filled] = np.bitwise_or.reduceat(marks, starts[filled].astype(np.intp))
        self.directory = np.append(starts | (summary << np.uint64(32)), np.uint64(n))
        self.run = Run(ids, directory=self.directory, tags=self.tags, shift=KEY_BITS - bits)

    def __len__(self) -> int:
        return len(self.ids)

    @property
    def nbytes(self) -> int:
        parts = (self.ids, self.keys, self.tags, self.directory)
        return sum(p.nbytes for p in parts if p is not None)

    def full_keys(self) -> U64:
        """All keys of the level, sorted (rebuilt from the directory for large levels)."""
        if self.keys is not None:
            return self.keys
        assert self.directory is not None and self.tags is not None
        starts = self.directory & np.uint64(0xFFFFFFFF)
        buckets = np.repeat(np.arange(len(starts) - 1, dtype=np.uint64), np.diff(starts).astype(np.intp))
        return (buckets << self._shift) | self.tags.astype(np.uint64)

    def lookup(self, keys: U64, cap: int = 1 << 30) -> I32:
        """Ids under any of ``keys`` (48-bit) in this level alone, at most ``cap`` per key."""
        return lookup([self.run], _NO_BUFFER, np.ascontiguousarray(keys, dtype=np.uint64), cap)


class KeyMultimap:
    """Multimap ``48-bit key -> int32 id`` in sorted numpy runs plus a small buffer.

    Keys are passed as ``uint64``; only their low ``KEY_BITS`` bits count.
    """

    def __init__(self) -> None:
        self._buffer = EntryBuffer(BUFFER)
        self._levels: list[_Level] = []
        self._runs: list[Run] = []

    def __len__(self) -> int:
        return len(self._buffer) + sum(len(level) for level in self._levels)

    @property
    def nbytes(self) -> int:
        """Bytes held by the sorted runs, plus 12 per buffered entry as the arrays would take."""
        return 12 * len(self._buffer) + sum(level.nbytes for level in self._levels)

    def add(self, keys: U64, doc_id: int) -> None:
        """Add ``doc_id`` under every key of ``keys``."""
        n = len(keys)
        if n == 0:
            return
        keys = keys & _KEY_MASK
        if n > self._buffer.capacity:  # more keys than a buffer holds: push them as a run of their own
            self._push(np.sort(keys), np.full(n, doc_id, dtype=np.int32))
            return
        if len(self._buffer) + n > self._buffer.capacity:
            self._flush()
        self._buffer.add(keys, doc_id)

    def lookup(self, keys: U64, cap: int = 1 << 30) -> I32:
        """The ids stored under any of ``keys``, at most ``cap`` per key: the first ``cap``
        added under it (unsorted across keys, may repeat)."""
        if not len(keys):
            return _EMPTY_IDS
        return lookup(self._runs, self._buffer, keys & _KEY_MASK, cap)

    def _flush(self) -> None:
        if not len(self._buffer):
            return
        keys, ids = self._buffer.drain()
        order = np.argsort(keys, kind="stable")  # one key's ids stay in insertion order
        self._push(keys[order], ids[order])

    def _push(self, keys: U64, ids: I32) -> None:
        level = 0
        while True:
            if level == len(self._levels):
                self._set_level(level, _Level(ids, keys))
                return
            old = self._levels[level]
            merged_keys, merged_ids = _merge(old, keys, ids)
            if len(merged_keys) <= BUFFER * RATIO ** (level + 1):
                self._set_level(level, _Level(merged_ids, merged_keys))
                if len(merged_keys) >= TRIM_AFTER and _MALLOC_TRIM is not None:
                    del merged_keys, merged_ids, old, keys, ids
                    _MALLOC_TRIM(0)
                return
            # This level is full: carry the merged run one level down and leave it empty.
            self._set_level(level, _Level(_EMPTY_IDS))
            keys, ids = merged_keys, merged_ids
            level += 1

    def _set_level(self, level: int, run: _Level) -> None:
        if level == len(self._levels):
            self._levels.append(run)
            self._runs.append(run.run)
        else:
            self._levels[level] = run
            self._runs[level] = run.run


def _merge(level: _Level, keys: U64, ids: I32) -> tuple[U64, I32]:
    """Merge the sorted run ``keys``/``ids`` into ``level`` in linear time.

    A new entry lands after the level's entries with the same or smaller keys and after the
    new entries before it: position ``searchsorted(old, key, "right") + i``. The old entries
    fill the remaining positions in order.
    """
    if not len(level):
        return keys, ids
    old_keys = level.full_keys()
    total = len(old_keys) + len(keys)
    at = old_keys.searchsorted(keys, side="right") + np.arange(len(keys))
    is_old = np.ones(total, dtype=bool)
    is_old[at] = False
    merged_keys = np.empty(total, dtype=np.uint64)
    merged_keys[at] = keys
    merged_keys[is_old] = old_keys
    merged_ids = np.empty(total, dtype=np.int32)
    merged_ids[at] = ids
    merged_ids[is_old] = level.ids
    return merged_keys, merged_ids
