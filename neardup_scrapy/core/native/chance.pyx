# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True, initializedcheck=False
"""Index hits far from a page by both sketches, found in one pass (:mod:`..chance`).

A hit is *far* when its SimHash differs from the page's in more than ``max_distance`` bits and
none of its MinHash bands equals the page's in stored form. Done with numpy, this is a handful of
small array operations per lookup (about 40 us for one hit on a 2-core VM), and a large index
meets a few such hits in every lookup; here it is one loop over the hits' rows.
"""

from libc.stdint cimport uint8_t, uint64_t
from libc.string cimport memcmp

cdef extern from *:
    """
    #include <stdint.h>
    static inline int nd_popcount64(uint64_t x) {
    #if defined(__GNUC__) || defined(__clang__)
        return __builtin_popcountll(x);
    #else
        x = x - ((x >> 1) & 0x5555555555555555ULL);
        x = (x & 0x3333333333333333ULL) + ((x >> 2) & 0x3333333333333333ULL);
        x = (x + (x >> 4)) & 0x0F0F0F0F0F0F0F0FULL;
        return (int)((x * 0x0101010101010101ULL) >> 56);
    #endif
    }
    """
    int nd_popcount64(uint64_t x) nogil


def far_rows(
    uint64_t simhash,
    const uint8_t[::1] stored,
    const uint64_t[::1] simhashes,
    const uint8_t[:, ::1] signatures,
    int bands,
    int rows,
    int max_distance,
):
    """Indices of the rows that are far from the page (module docstring), in row order.

    ``stored`` is the page's signature in stored form; ``signatures`` the rows' (one per row of
    ``simhashes``); ``bands = 0`` skips the band test (no band keys).
    """
    cdef Py_ssize_t n = simhashes.shape[0]
    cdef Py_ssize_t i
    cdef int band
    cdef bint shared
    if signatures.shape[0] != n:
        raise ValueError("one signature per simhash")
    if bands and (signatures.shape[1] < bands * rows or stored.shape[0] < bands * rows):
        raise ValueError("signatures are narrower than bands * rows")
    out = []
    for i in range(n):
        if nd_popcount64(simhashes[i] ^ simhash) <= max_distance:
            continue
        shared = False
        for band in range(bands):
            if memcmp(&signatures[i, band * rows], &stored[band * rows], rows) == 0:
                shared = True
                break
        if not shared:
            out.append(i)
    return out
