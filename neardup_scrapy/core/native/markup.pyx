# cython: language_level=3, boundscheck=False, wraparound=False
"""Small compiled helpers outside extraction: a linear scan for tags long enough to hold many
attributes (the attribute cap's cheap first test, :mod:`neardup_scrapy.core.reading`), and the
CPU clock of the calling thread that the extractor's deadline reads."""

from cpython.unicode cimport PyUnicode_DATA, PyUnicode_GET_LENGTH, PyUnicode_KIND
from libc.stdint cimport uint8_t, uint16_t, uint32_t

from neardup_scrapy.core.native._common cimport cpu_now


def has_long_tag(str text, Py_ssize_t min_chars):
    """Whether ``text`` holds a start tag (``<`` and an ASCII letter) followed by at least
    ``min_chars`` characters before the next ``<`` or ``>``: the only tags that can hold that
    many attributes. One linear scan, a cheap test before a regular expression does the rest
    (without the GIL: the string cannot change)."""
    cdef Py_ssize_t n = PyUnicode_GET_LENGTH(text)
    cdef int kind = PyUnicode_KIND(text)
    cdef void *data = PyUnicode_DATA(text)
    cdef bint found
    with nogil:
        if kind == 1:
            found = _long_tag_1(<const uint8_t *>data, n, min_chars)
        elif kind == 2:
            found = _long_tag_2(<const uint16_t *>data, n, min_chars)
        else:
            found = _long_tag_4(<const uint32_t *>data, n, min_chars)
    return found


ctypedef fused _Unit:
    uint8_t
    uint16_t
    uint32_t


cdef inline bint _long_tag(const _Unit *p, Py_ssize_t n, Py_ssize_t min_chars) noexcept nogil:
    cdef Py_ssize_t i = 0, j
    cdef uint32_t c
    while i + 1 < n:
        if p[i] == c'<':
            c = p[i + 1]
            if (c | 0x20) >= c'a' and (c | 0x20) <= c'z':  # an ASCII letter, either case
                j = i + 2
                while j < n and p[j] != c'<' and p[j] != c'>':
                    j += 1
                if j - (i + 2) >= min_chars:
                    return True
                i = j
                continue
        i += 1
    return False


cdef bint _long_tag_1(const uint8_t *p, Py_ssize_t n, Py_ssize_t m) noexcept nogil:
    return _long_tag(p, n, m)


cdef bint _long_tag_2(const uint16_t *p, Py_ssize_t n, Py_ssize_t m) noexcept nogil:
    return _long_tag(p, n, m)


cdef bint _long_tag_4(const uint32_t *p, Py_ssize_t n, Py_ssize_t m) noexcept nogil:
    return _long_tag(p, n, m)


def thread_time():
    """The clock of the extractor's CPU deadline (CPU seconds of this thread, as
    ``time.thread_time()``)."""
    return cpu_now()
