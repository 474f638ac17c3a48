# cython: language_level=3
"""Inline helpers shared by the native modules: 64-bit mixing, the seeded byte hash, buffers,
the CPU clock of the calling thread.

Every hash here is a pure function of its input bytes and the seed, with fixed 64-bit
arithmetic, so values are the same on every machine and in every process.
"""

from libc.stdint cimport uint8_t, uint16_t, uint32_t, uint64_t, int32_t
from libc.stdlib cimport malloc, realloc, free
from libc.string cimport memcpy, memset
from posix.time cimport CLOCK_THREAD_CPUTIME_ID, clock_gettime, timespec

cdef extern from *:
    """
    #include <stdint.h>
    #include <string.h>
    static inline uint64_t nd_load64(const unsigned char *p) {
        uint64_t v; memcpy(&v, p, 8);
    #if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
        v = __builtin_bswap64(v);
    #endif
        return v;
    }
    static inline uint64_t nd_rotl64(uint64_t x, int r) { return (x << r) | (x >> (64 - r)); }
    """
    uint64_t nd_load64(const unsigned char *p) nogil
    uint64_t nd_rotl64(uint64_t x, int r) nogil

cdef inline uint64_t mix64(uint64_t z) noexcept nogil:
    """SplitMix64 finaliser: a bijection of uint64 with full avalanche."""
    z ^= z >> 30
    z *= 0xBF58476D1CE4E5B9ULL
    z ^= z >> 27
    z *= 0x94D049BB133111EBULL
    z ^= z >> 31
    return z


cdef inline uint64_t hash_bytes(const unsigned char *p, size_t n, uint64_t seed) noexcept nogil:
    """Seeded 64-bit hash of ``n`` bytes (little-endian words, multiply-rotate, mix64 at the end).

    ``h0 = mix64(seed ^ n * G)``; every 8-byte word ``w`` (the last one zero-padded) updates
    ``h = rotl(h ^ rotl(w * C1, 31) * C2, 27) * 5 + K``; the result is ``mix64(h ^ n)``.
    """
    cdef uint64_t h = mix64(seed ^ (<uint64_t>n * 0x9E3779B97F4A7C15ULL))
    cdef uint64_t w
    cdef unsigned char tail[8]
    cdef size_t i = 0
    while i + 8 <= n:
        w = nd_load64(p + i)
        w *= 0x87C37B91114253D5ULL
        w = nd_rotl64(w, 31)
        w *= 0x4CF5AD432745937FULL
        h ^= w
        h = nd_rotl64(h, 27) * 5 + 0x52DCE729ULL
        i += 8
    if i < n:
        memset(tail, 0, 8)
        memcpy(tail, p + i, n - i)
        w = nd_load64(tail)
        w *= 0x87C37B91114253D5ULL
        w = nd_rotl64(w, 31)
        w *= 0x4CF5AD432745937FULL
        h ^= w
        h = nd_rotl64(h, 27) * 5 + 0x52DCE729ULL
    return mix64(h ^ <uint64_t>n)


# -- growable buffers (malloc'd; the owner frees) ----------------------------------------------

cdef struct ByteBuf:
    unsigned char *data
    size_t len
    size_t cap

cdef struct U64Buf:
    uint64_t *data
    size_t len
    size_t cap


cdef inline int bytebuf_reserve(ByteBuf *b, size_t extra) noexcept nogil:
    """Room for ``extra`` more bytes; -1 when memory is exhausted."""
    cdef size_t need = b.len + extra
    cdef size_t cap
    cdef unsigned char *data
    if need <= b.cap:
        return 0
    cap = b.cap * 2 if b.cap else 4096
    while cap < need:
        cap *= 2
    data = <unsigned char *>realloc(b.data, cap)
    if data == NULL:
        return -1
    b.data = data
    b.cap = cap
    return 0


cdef inline int bytebuf_append(ByteBuf *b, const unsigned char *p, size_t n) noexcept nogil:
    if bytebuf_reserve(b, n) < 0:
        return -1
    memcpy(b.data + b.len, p, n)
    b.len += n
    return 0


cdef inline int bytebuf_push(ByteBuf *b, unsigned char c) noexcept nogil:
    if b.len >= b.cap and bytebuf_reserve(b, 1) < 0:
        return -1
    b.data[b.len] = c
    b.len += 1
    return 0


cdef inline int u64buf_push(U64Buf *b, uint64_t v) noexcept nogil:
    cdef size_t cap
    cdef uint64_t *data
    if b.len >= b.cap:
        cap = b.cap * 2 if b.cap else 1024
        data = <uint64_t *>realloc(b.data, cap * sizeof(uint64_t))
        if data == NULL:
            return -1
        b.data = data
        b.cap = cap
    b.data[b.len] = v
    b.len += 1
    return 0


cdef inline double cpu_now() noexcept nogil:
    """CPU seconds used by the calling thread (``time.thread_time()``): unlike a wall clock,
    it does not run while other processes hold the cores."""
    cdef timespec ts
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts)
    return ts.tv_sec + ts.tv_nsec * 1e-9
