# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True, initializedcheck=False
"""The compiled half of the bucket multimap (:mod:`neardup_scrapy.core.multimap`).

A check looks up about 35 keys in every sorted run and in the buffer of newest entries, and
adds as many; done with numpy and a dict, that is dozens of small calls and a Python object per
key. Here both are one call each:

* :class:`EntryBuffer` holds the newest entries (at most its capacity) in insertion order,
  chained per hash slot, so the ids of one key come back in the order they were added.
* :class:`Run` exposes one sorted run's arrays (held by the Python run object) to
  :func:`lookup`: a small run is searched by binary search over its full 48-bit keys; a large
  one reads its directory slot ``directory[key >> shift]`` and, when the slot's summary holds
  bit ``key % 32``, binary-searches the bucket's 32-bit tags (sorted within a bucket, since the
  bucket bits and the tag together are the whole key).
* :func:`lookup` returns, for every key, at most ``cap`` ids: the first ones added under it,
  searching the runs from the oldest to the newest and then the buffer.
"""

import numpy as np

from libc.stdint cimport int32_t, int64_t, uint32_t, uint64_t
from libc.stdlib cimport free, malloc
from libc.string cimport memcpy, memset

from neardup_scrapy.core.native._common cimport ByteBuf, bytebuf_reserve

cdef extern from *:
    """
    #if defined(__GNUC__) || defined(__clang__)
    #define ND_PREFETCH(p) __builtin_prefetch((const void *)(p))
    #else
    #define ND_PREFETCH(p) ((void)0)
    #endif
    """
    void ND_PREFETCH(const void *p) noexcept nogil

ctypedef fused sorted_key:
    uint32_t
    uint64_t


cdef class EntryBuffer:
    """The newest ``(key, id)`` entries, in insertion order, with a chained hash index."""

    def __cinit__(self, Py_ssize_t capacity):
        cdef Py_ssize_t slots = 16
        if capacity < 1:
            raise ValueError("capacity must be >= 1")
        while slots < 2 * capacity:
            slots <<= 1
        self.capacity = capacity
        self.size = 0
        self.slot_mask = <uint64_t>(slots - 1)
        self.keys = <uint64_t *>malloc(capacity * sizeof(uint64_t))
        self.ids = <int32_t *>malloc(capacity * sizeof(int32_t))
        self.chain = <int32_t *>malloc(capacity * sizeof(int32_t))
        self.head = <int32_t *>malloc(slots * sizeof(int32_t))
        self.tail = <int32_t *>malloc(slots * sizeof(int32_t))
        if not (self.keys and self.ids and self.chain and self.head and self.tail):
            raise MemoryError()
        memset(self.head, 0xFF, slots * sizeof(int32_t))  # -1: empty slot

    def __dealloc__(self):
        free(self.keys)
        free(self.ids)
        free(self.chain)
        free(self.head)
        free(self.tail)

    def __len__(self):
        return self.size

    def add(self, const uint64_t[::1] keys, int32_t doc_id):
        """Add ``doc_id`` under every key of ``keys`` (48-bit keys; the caller makes room)."""
        cdef Py_ssize_t i, at
        cdef uint64_t slot
        if self.size + keys.shape[0] > self.capacity:
            raise OverflowError("the buffer is full: drain it first")
        for i in range(keys.shape[0]):
            at = self.size
            self.keys[at] = keys[i]
            self.ids[at] = doc_id
            self.chain[at] = -1
            slot = keys[i] & self.slot_mask  # keys are mixed hashes: their low bits are uniform
            if self.head[slot] < 0:
                self.head[slot] = <int32_t>at
            else:
                self.chain[self.tail[slot]] = <int32_t>at
            self.tail[slot] = <int32_t>at
            self.size += 1

    def drain(self):
        """``(keys, ids)`` of every entry in insertion order, as numpy arrays; empties the buffer."""
        cdef Py_ssize_t i, n = self.size
        keys = np.empty(n, dtype=np.uint64)
        ids = np.empty(n, dtype=np.int32)
        cdef uint64_t[::1] k = keys
        cdef int32_t[::1] d = ids
        for i in range(n):
            k[i] = self.keys[i]
            d[i] = self.ids[i]
            self.head[self.keys[i] & self.slot_mask] = -1
        self.size = 0
        return keys, ids

    cdef Py_ssize_t find(self, uint64_t key, ByteBuf *sink, Py_ssize_t room) except -1:
        """Append the first ``room`` ids under ``key`` to ``sink``; returns how many."""
        cdef int32_t at = self.head[key & self.slot_mask]
        cdef Py_ssize_t taken = 0
        while at >= 0 and taken < room:
            if self.keys[at] == key:
                sink_push(sink, self.ids[at])
                taken += 1
            at = self.chain[at]
        return taken


cdef inline bint _may_hold(uint64_t slot, uint64_t key) noexcept nogil:
    """Whether a directory slot's summary (its high 32 bits) holds ``key``'s bit."""
    return (slot >> (32 + (key & 31))) & 1


cdef class Run:
    """One sorted run's arrays, for :func:`lookup` (the arrays are kept alive here)."""

    def __init__(self, ids, keys=None, directory=None, tags=None, int shift=0):
        cdef const int32_t[::1] id_view = ids
        cdef const uint64_t[::1] key_view
        cdef const uint64_t[::1] directory_view
        cdef const uint32_t[::1] tag_view
        self._arrays = (ids, keys, directory, tags)
        self.n = id_view.shape[0]
        self.ids = &id_view[0] if self.n else NULL
        self.keys = NULL
        self.slots = NULL
        self.tags = NULL
        self.shift = <uint64_t>shift
        self.directory = directory is not None
        if self.directory:
            directory_view = directory
            tag_view = tags
            if tag_view.shape[0] < self.n or directory_view.shape[0] < 2:
                raise ValueError("a directory needs a tag per entry and at least one bucket")
            self.slots = &directory_view[0]
            self.tags = &tag_view[0] if self.n else NULL
            self.buckets = directory_view.shape[0] - 1
        elif self.n:
            key_view = keys
            if key_view.shape[0] < self.n:
                raise ValueError("a run needs a key per entry")
            self.keys = &key_view[0]

    def __len__(self):
        return self.n

    cdef void prefetch_slot(self, uint64_t key) noexcept nogil:
        """Ask the cache for ``key``'s directory slot (directory runs only)."""
        cdef uint64_t bucket = key >> self.shift
        if self.directory and bucket < <uint64_t>self.buckets:
            ND_PREFETCH(&self.slots[bucket])

    cdef void prefetch_bucket(self, uint64_t key) noexcept nogil:
        """Ask the cache for the start of ``key``'s bucket, tags and ids, if its summary may
        hold the key (its slot is read)."""
        cdef uint64_t bucket = key >> self.shift
        cdef uint64_t slot, start
        if self.directory and bucket < <uint64_t>self.buckets:
            slot = self.slots[bucket]
            start = slot & 0xFFFFFFFFULL
            if _may_hold(slot, key) and start < <uint64_t>self.n:
                ND_PREFETCH(&self.tags[start])
                ND_PREFETCH(&self.ids[start])

    cdef Py_ssize_t find(self, uint64_t key, ByteBuf *sink, Py_ssize_t room) except -1:
        """Append the first ``room`` ids under ``key`` to ``sink``; returns how many."""
        cdef uint64_t bucket, slot
        if self.n == 0 or room <= 0:
            return 0
        if not self.directory:
            return _take_equal(self.keys, 0, self.n, key, self.ids, sink, room)
        bucket = key >> self.shift
        if bucket >= <uint64_t>self.buckets:
            return 0
        slot = self.slots[bucket]
        if not _may_hold(slot, key):
            return 0
        return _take_equal(
            self.tags, slot & 0xFFFFFFFFULL, self.slots[bucket + 1] & 0xFFFFFFFFULL, <uint32_t>key, self.ids, sink, room
        )


cdef Py_ssize_t _take_equal(
    const sorted_key *values,
    Py_ssize_t low,
    Py_ssize_t end,
    sorted_key value,
    const int32_t *ids,
    ByteBuf *sink,
    Py_ssize_t room,
) except -1:
    """Append to ``sink`` the ids of the first ``room`` entries equal to ``value`` in the sorted
    ``values[low:end]`` (found by binary search); returns how many."""
    cdef Py_ssize_t mid, high = end, taken = 0
    while low < high:
        mid = (low + high) >> 1
        if values[mid] < value:
            low = mid + 1
        else:
            high = mid
    while low < end and values[low] == value and taken < room:
        sink_push(sink, ids[low])
        low += 1
        taken += 1
    return taken


cdef int sink_push(ByteBuf *sink, int32_t value) except -1:
    if bytebuf_reserve(sink, sizeof(int32_t)) < 0:
        raise MemoryError()
    memcpy(sink.data + sink.len, &value, sizeof(int32_t))
    sink.len += sizeof(int32_t)
    return 0


def lookup(list runs, EntryBuffer buffer, const uint64_t[::1] keys, int64_t cap):
    """The ids stored under any of ``keys``, at most ``cap`` per key: the first ones added.

    ``runs`` are the sorted runs from the newest to the oldest (they are searched oldest first),
    then ``buffer``. Ids come grouped by run, then by key in the order of ``keys``; an id under
    several keys comes once per key. Returns an ``int32`` array.
    """
    cdef Py_ssize_t i, r, n = keys.shape[0]
    cdef ByteBuf sink
    cdef int64_t *room
    cdef Run run
    cdef int32_t[::1] out_view
    memset(&sink, 0, sizeof(ByteBuf))
    if n == 0:
        return np.empty(0, dtype=np.int32)
    room = <int64_t *>malloc(n * sizeof(int64_t))
    if room == NULL:
        raise MemoryError()
    try:
        for i in range(n):
            room[i] = cap
        # In a large index every key's directory slot and bucket is a cache (and TLB) miss; asked
        # for all at once, in two rounds (slots, then the buckets they point to), the misses
        # overlap instead of coming one after the other in the search below.
        for r in range(len(runs)):
            run = <Run>runs[r]
            if run.directory:
                for i in range(n):
                    run.prefetch_slot(keys[i])
        for r in range(len(runs)):
            run = <Run>runs[r]
            if run.directory:
                for i in range(n):
                    run.prefetch_bucket(keys[i])
        for r in range(len(runs) - 1, -1, -1):
            run = <Run>runs[r]
            if run.n == 0:
                continue
            for i in range(n):
                if room[i] > 0:
                    room[i] -= run.find(keys[i], &sink, room[i])
        if buffer.size:
            for i in range(n):
                if room[i] > 0:
                    room[i] -= buffer.find(keys[i], &sink, room[i])
        out = np.empty(sink.len // sizeof(int32_t), dtype=np.int32)
        if sink.len:
            out_view = out
            memcpy(&out_view[0], sink.data, sink.len)
        return out
    finally:
        free(room)
        free(sink.data)
