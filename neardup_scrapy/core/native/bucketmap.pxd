# cython: language_level=3
from libc.stdint cimport int32_t, uint32_t, uint64_t

from neardup_scrapy.core.native._common cimport ByteBuf


cdef int sink_push(ByteBuf *sink, int32_t value) except -1


cdef class EntryBuffer:
    cdef uint64_t *keys
    cdef int32_t *ids
    cdef int32_t *chain     # next entry of the same slot (-1: last)
    cdef int32_t *head      # first entry of each slot (-1: empty)
    cdef int32_t *tail      # last entry of each slot (valid while head >= 0)
    cdef uint64_t slot_mask
    cdef readonly Py_ssize_t capacity
    cdef readonly Py_ssize_t size

    cdef Py_ssize_t find(self, uint64_t key, ByteBuf *sink, Py_ssize_t room) except -1


cdef class Run:
    cdef object _arrays
    cdef const int32_t *ids
    cdef const uint64_t *keys       # small runs: the sorted 48-bit keys
    cdef const uint64_t *slots      # directory runs: bucket b spans [start(b), start(b + 1)), start in the
                                    # low 32 bits of slots[b], its keys' summary (bits key % 32) above
    cdef const uint32_t *tags       # directory runs: the keys' low 32 bits
    cdef uint64_t shift
    cdef Py_ssize_t buckets
    cdef readonly Py_ssize_t n
    cdef readonly bint directory

    cdef void prefetch_slot(self, uint64_t key) noexcept nogil
    cdef void prefetch_bucket(self, uint64_t key) noexcept nogil
    cdef Py_ssize_t find(self, uint64_t key, ByteBuf *sink, Py_ssize_t room) except -1
