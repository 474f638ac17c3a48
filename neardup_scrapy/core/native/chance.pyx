# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True, initializedcheck=False
"""Index hits far from a page by both sketches, found in one pass (:mod:`..chance`).

A hit is *far* when its SimHash differs from the page's in more than ``max_distance`` bits and
none of its MinHash bands equals the page's in stored form. Done with numpy, this is a handful of
small array operations per lookup (about 40 us for one hit on a 2-core VM), and a large index
meets a few such hits in every lookup; here it is one loop over the hits' rows, read where they
lie: in arrays (:func:`far_rows`) or in the chunks of the memory store's columns
(:func:`drop_far_rows_in_chunks`, which also reads the urls of the far
rows in place).
"""

from cpython.list cimport PyList_GET_ITEM, PyList_GET_SIZE
from libc.stdint cimport int64_t, uint8_t, uint64_t
from libc.string cimport memcmp

import numpy as np

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


cdef inline bint _far(
    uint64_t simhash,
    const uint8_t *stored,
    uint64_t other_simhash,
    const uint8_t *other_stored,
    int bands,
    int rows,
    int max_distance,
) noexcept nogil:
    cdef int band
    if nd_popcount64(other_simhash ^ simhash) <= max_distance:
        return False
    for band in range(bands):
        if memcmp(other_stored + band * rows, stored + band * rows, rows) == 0:
            return False
    return True


cdef int _check_widths(Py_ssize_t stored_width, Py_ssize_t width, int bands, int rows) except -1:
    if bands and (width < bands * rows or stored_width < bands * rows):
        raise ValueError("signatures are narrower than bands * rows")
    return 0


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
    if signatures.shape[0] != n:
        raise ValueError("one signature per simhash")
    _check_widths(stored.shape[0], signatures.shape[1], bands, rows)
    out = []
    for i in range(n):
        if _far(simhash, &stored[0], simhashes[i], &signatures[i, 0], bands, rows, max_distance):
            out.append(i)
    return out


cdef int64_t _end_of(list end_chunks, int64_t row, int chunk_bits) except -2:
    """Where row ``row``'s bytes end in a bytes column's blob (its ``int64`` ends in chunks)."""
    cdef Py_ssize_t chunk = <Py_ssize_t>(row >> chunk_bits)
    cdef int64_t offset = row & ((<int64_t>1 << chunk_bits) - 1)
    cdef const int64_t[::1] ends
    if row < 0 or chunk >= PyList_GET_SIZE(end_chunks):
        raise IndexError(f"row {row} is not in the url column")
    ends = <object>PyList_GET_ITEM(end_chunks, chunk)
    if offset >= ends.shape[0]:
        raise IndexError(f"row {row} is not in the url column")
    return ends[offset]


def drop_far_rows_in_chunks(
    const int64_t[::1] ids,
    list simhash_chunks,
    list signature_chunks,
    int chunk_bits,
    uint64_t simhash,
    const uint8_t[::1] stored,
    int bands,
    int rows,
    int max_distance,
    list url_end_chunks,
    const unsigned char[::1] url_blob,
    bytes url_prefix,
):
    """The rows ``ids`` less the far ones (module docstring), read in columns kept in chunks of
    ``2**chunk_bits`` rows (``simhash_chunks``: ``uint64``; ``signature_chunks``: ``uint8``, one
    signature per row).

    With ``url_end_chunks`` (the chunks of a bytes column's end offsets into ``url_blob``), a far
    row whose url starts with ``url_prefix`` is kept too, as possibly found by the page's
    address: it is returned again in the second list, for the caller's exact test. Returns
    ``(kept ids as int64, those possibly found by address)``, in the order of ``ids``.
    """
    cdef Py_ssize_t i, chunk, k = 0, n = ids.shape[0]
    cdef Py_ssize_t prefix_length = len(url_prefix)
    cdef const unsigned char *prefix = url_prefix
    cdef int64_t row, start, end, mask = (<int64_t>1 << chunk_bits) - 1
    cdef const uint64_t[::1] fingerprints
    cdef const uint8_t[:, ::1] signatures
    kept = np.empty(n, dtype=np.int64)
    cdef int64_t[::1] out = kept
    maybe = []
    for i in range(n):
        row = ids[i]
        chunk = <Py_ssize_t>(row >> chunk_bits)
        if row < 0 or chunk >= PyList_GET_SIZE(simhash_chunks) or chunk >= PyList_GET_SIZE(signature_chunks):
            raise IndexError(f"row {row} is not in the columns")
        fingerprints = <object>PyList_GET_ITEM(simhash_chunks, chunk)
        signatures = <object>PyList_GET_ITEM(signature_chunks, chunk)
        _check_widths(stored.shape[0], signatures.shape[1], bands, rows)
        if (row & mask) >= fingerprints.shape[0] or (row & mask) >= signatures.shape[0]:
            raise IndexError(f"row {row} is not in the columns")
        if _far(
            simhash, &stored[0], fingerprints[row & mask], &signatures[row & mask, 0], bands, rows, max_distance
        ):
            if url_end_chunks is None:
                continue
            start = _end_of(url_end_chunks, row - 1, chunk_bits) if row else 0
            end = _end_of(url_end_chunks, row, chunk_bits)
            if start < 0 or end > url_blob.shape[0] or end - start < prefix_length:
                continue
            if prefix_length and memcmp(&url_blob[start], prefix, prefix_length) != 0:
                continue
            maybe.append(row)
        out[k] = row
        k += 1
    return kept[:k], maybe
