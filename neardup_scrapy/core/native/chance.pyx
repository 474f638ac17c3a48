# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True, initializedcheck=False
"""Index hits far from a page by both sketches, found in one pass (:mod:`..chance`).

A hit is *far* when its SimHash differs from the page's in more than ``max_distance`` bits and
none of its MinHash bands equals the page's in stored form. Done with numpy, this is a handful of
small array operations per lookup (about 40 us for one hit on a 2-core VM), and a large index
meets a few such hits in every lookup; here it is one loop over the hits' rows, read where they
lie: in arrays (:func:`far_rows`) or in the chunks of the memory store's columns
(:func:`drop_far_rows_in_columns`, which also reads the urls of the far rows in place).
"""

from libc.stdint cimport int64_t, uint8_t, uint64_t, uintptr_t
from cpython.buffer cimport PyBUF_ANY_CONTIGUOUS, PyBUF_WRITABLE, PyBuffer_Release, PyObject_GetBuffer
from libc.stdlib cimport free, malloc
from libc.string cimport memcmp, memcpy

import numpy as np

_NO_ROWS = np.empty(0, dtype=np.int64)
_NO_ROWS.flags.writeable = False

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


cdef extern from *:
    """
    #if defined(__GNUC__) || defined(__clang__)
    #define nd_prefetch(p) __builtin_prefetch(p)
    #else
    #define nd_prefetch(p) ((void)0)
    #endif
    """
    void nd_prefetch(const void *p) nogil


cdef inline const char *_row_at(const uint64_t *addresses, int64_t row, int chunk_bits, Py_ssize_t width) noexcept nogil:
    """Row ``row`` of a column kept in chunks of ``2**chunk_bits`` rows of ``width`` bytes, the
    chunks' start addresses in ``addresses`` (the caller checked ``row``)."""
    cdef int64_t mask = (<int64_t>1 << chunk_bits) - 1
    return <const char *><uintptr_t>addresses[row >> chunk_bits] + (row & mask) * width


cdef Py_buffer *_hold(
    object obj, Py_buffer *views, int *held, Py_ssize_t itemsize, Py_ssize_t at_least, str what
) except NULL:
    """``obj``'s contiguous bytes (numpy array, bytes, bytearray) in the next free one of
    ``views``, counted in ``held`` (released, with the others, by :func:`_release_all`), checked
    to hold ``itemsize``-byte items, at least ``at_least`` of them. A raw buffer request: typed
    memoryview arguments cost about 2,000 instructions each to set up, more than the loop."""
    cdef Py_buffer *view = &views[held[0]]
    PyObject_GetBuffer(obj, view, PyBUF_ANY_CONTIGUOUS)
    cdef Py_ssize_t got_itemsize = view.itemsize, got_length = view.len
    if got_itemsize != itemsize or got_length // itemsize < at_least:
        PyBuffer_Release(view)
        raise ValueError(
            f"{what}: items of {got_itemsize} bytes, {got_length} in all; need {at_least} or more of {itemsize}"
        )
    held[0] += 1
    return view


cdef void _release_all(Py_buffer *views, int held) noexcept:
    while held:
        held -= 1
        PyBuffer_Release(&views[held])


def drop_far_rows_in_columns(
    object ids,
    int64_t n_rows,
    int chunk_bits,
    object simhash_addresses,
    object signature_addresses,
    Py_ssize_t signature_width,
    uint64_t simhash,
    object stored,
    int bands,
    int rows,
    int max_distance,
    object url_end_addresses,
    object url_blob,
    bytes url_prefix,
):
    """The rows ``ids`` (``int64``) less the far ones (module docstring), read where they lie in
    the memory store's columns: ``n_rows`` rows in chunks of ``2**chunk_bits``, each column given
    by its chunks' start addresses (``uint64``,
    :attr:`~neardup_scrapy.core.columns.Column.addresses`; SimHashes ``uint64``, signatures
    ``signature_width`` bytes in stored form, the page's own in ``stored``). Every row's SimHash
    and signature is prefetched before any is read, so the cache misses of a large index overlap.

    With ``url_end_addresses`` (the chunks of the url column's ``int64`` end offsets into
    ``url_blob``), a far row whose url starts with ``url_prefix`` is kept too, as possibly found
    by the page's address: it is returned again in the second list, for the caller's exact test.
    Returns ``(kept ids as int64, those possibly found by address)``, in the order of ``ids``.
    """
    cdef Py_buffer views[6]
    cdef int held = 0
    cdef Py_buffer out_view
    cdef Py_buffer *ids_view
    cdef Py_buffer *stored_view
    cdef Py_buffer *blob_view
    cdef Py_ssize_t i, k = 0, n
    cdef Py_ssize_t prefix_length = len(url_prefix)
    cdef const unsigned char *prefix = url_prefix
    cdef const int64_t *rows_in
    cdef const uint64_t *simhash_at
    cdef const uint64_t *signature_at
    cdef const uint64_t *ends_at = NULL
    cdef const unsigned char *blob = NULL
    cdef const uint8_t *own
    cdef int64_t row, start, end, blob_length = 0
    cdef Py_ssize_t chunks = (n_rows + (<int64_t>1 << chunk_bits) - 1) >> chunk_bits
    cdef bint by_address = url_end_addresses is not None
    cdef int64_t *out = NULL
    try:
        ids_view = _hold(ids, views, &held, 8, 0, "ids")
        stored_view = _hold(stored, views, &held, 1, 0, "stored")
        _check_widths(stored_view.len, signature_width, bands, rows)
        simhash_at = <const uint64_t *>_hold(simhash_addresses, views, &held, 8, chunks, "simhash chunk addresses").buf
        signature_at = <const uint64_t *>_hold(
            signature_addresses, views, &held, 8, chunks, "signature chunk addresses"
        ).buf
        if by_address:
            ends_at = <const uint64_t *>_hold(url_end_addresses, views, &held, 8, chunks, "url chunk addresses").buf
            blob_view = _hold(url_blob, views, &held, 1, 0, "url blob")
            blob = <const unsigned char *>blob_view.buf
            blob_length = blob_view.len
        n = ids_view.len // 8
        rows_in = <const int64_t *>ids_view.buf
        own = <const uint8_t *>stored_view.buf
        for i in range(n):
            if rows_in[i] < 0 or rows_in[i] >= n_rows:
                raise IndexError(f"row {rows_in[i]} is not in the columns")
        for i in range(n):
            nd_prefetch(_row_at(simhash_at, rows_in[i], chunk_bits, 8))
            nd_prefetch(_row_at(signature_at, rows_in[i], chunk_bits, signature_width))
        out = <int64_t *>malloc(max(n, 1) * sizeof(int64_t))
        if out == NULL:
            raise MemoryError()
        maybe = []
        for i in range(n):
            row = rows_in[i]
            if _far(
                simhash,
                own,
                (<const uint64_t *>_row_at(simhash_at, row, chunk_bits, 8))[0],
                <const uint8_t *>_row_at(signature_at, row, chunk_bits, signature_width),
                bands,
                rows,
                max_distance,
            ):
                if not by_address:
                    continue
                start = (<const int64_t *>_row_at(ends_at, row - 1, chunk_bits, 8))[0] if row else 0
                end = (<const int64_t *>_row_at(ends_at, row, chunk_bits, 8))[0]
                if start < 0 or end > blob_length or end - start < prefix_length:
                    continue
                if prefix_length and memcmp(blob + start, prefix, prefix_length) != 0:
                    continue
                maybe.append(row)
            out[k] = row
            k += 1
        # all far, the usual case in a large index: no array to make
        kept = np.empty(k, dtype=np.int64) if k else _NO_ROWS
        if k:
            PyObject_GetBuffer(kept, &out_view, PyBUF_ANY_CONTIGUOUS | PyBUF_WRITABLE)
            memcpy(out_view.buf, out, k * sizeof(int64_t))
            PyBuffer_Release(&out_view)
        return kept, maybe
    finally:
        free(out)
        _release_all(views, held)
