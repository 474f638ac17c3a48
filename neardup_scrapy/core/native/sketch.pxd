# cython: language_level=3
from libc.stdint cimport uint16_t, uint32_t, uint64_t

from neardup_scrapy.core.native._common cimport ByteBuf, U64Buf


cdef class Sketcher:
    cdef readonly int num_perm
    cdef readonly int shingle_size
    cdef readonly int bands
    cdef readonly int rows
    cdef uint64_t seed
    cdef int bin_shift              # 64 - log2(num_perm) when num_perm is a power of two, else 0
    cdef uint64_t minhash_salt
    cdef uint64_t probe_seed
    cdef uint64_t *band_mult        # rows odd multipliers
    cdef uint64_t *simhash_masks
    cdef int n_masks
    cdef uint64_t digest_seed_a
    cdef uint64_t digest_seed_b
    cdef U64Buf shingles
    cdef uint32_t *signature
    cdef uint32_t *simhash_counts   # per-bit totals of the SimHash (64 used)

    cdef int sketch(self, const uint64_t *tokens, size_t n, uint64_t host_salt, bint salted,
                    unsigned char *digest, uint64_t *simhash, uint64_t *keys) except -1 nogil
    cdef int _shingle(self, const uint64_t *tokens, size_t n) except -1 nogil
    cdef void _minhash(self) noexcept nogil
    cdef uint64_t _simhash(self) noexcept nogil
    cdef int _bin(self, uint64_t x) noexcept nogil
    cdef int _load(self, bytes shingles) except -1


cdef int build_profile(const uint64_t *tokens, size_t n, const uint64_t *heading, size_t nh,
                       const uint64_t *title, size_t nt, ByteBuf *out) except -1 nogil
