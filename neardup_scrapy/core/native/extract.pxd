# cython: language_level=3
from libc.stdint cimport int32_t, uint16_t, uint32_t, uint64_t

from lxml.includes cimport tree

from neardup_scrapy.core.native._common cimport ByteBuf

# Outcome of Extractor.run
cdef enum:
    EXTRACT_OK = 0
    EXTRACT_EMPTY = 1
    EXTRACT_TIMEOUT = 2
    EXTRACT_NOMEM = 3

cdef struct Elem:
    int32_t parent      # index of the parent element (-1 for the walk's root)
    int32_t end         # one past the last descendant (elements are numbered in document order)
    uint32_t tstart     # the element's text in the text buffer: [tstart, tend)
    uint32_t tend
    int32_t text        # visible characters (code points, whitespace excluded) in the subtree
    int32_t link        # of them, inside <a href>
    int32_t content     # visible characters outside chrome descendants
    int32_t clink       # of them, inside <a href>
    int32_t marked      # text of the largest content-marked element at or below this one
    int32_t art_text    # text of the outermost <article> descendants
    uint16_t art_n      # how many outermost <article> descendants
    uint16_t kind       # tag kind bits
    uint32_t flags      # classification bits


cdef class Extractor:
    cdef Elem *elems
    cdef int32_t n_elems
    cdef int32_t cap_elems
    cdef ByteBuf buf          # the walked text, block boundaries as spaces
    cdef ByteBuf out          # the main text
    cdef ByteBuf heading      # the page's heading (first h1, else first title-classed element)
    cdef ByteBuf title        # the <title>
    cdef ByteBuf canonical    # <link rel=canonical href>
    cdef uint64_t series[8]   # hashes of the hrefs of <link rel=next/prev>
    cdef int n_series
    cdef int32_t anchor
    cdef list anchors
    cdef int32_t frame  # a framing page's label of the document it holds (-1: none)
    cdef int32_t container
    cdef uint32_t *drops
    cdef int32_t cap_drops

    cdef int run(self, tree.xmlNode *root, long max_chars, double deadline) except -1
    cdef int32_t _new_elem(self) except -1
    cdef void _read_head(self, tree.xmlNode *head)
    cdef void _read_head_element(self, tree.xmlNode *node)
    cdef bint _in_series(self, const unsigned char *href, size_t n) noexcept
    cdef int _walk(self, tree.xmlNode *top, double deadline) except -1
    cdef void _close(self, int32_t i) noexcept
    cdef int32_t _find_anchors(self)
    cdef bint _holds_anchor(self, int32_t i) noexcept
    cdef bint _dominated(self, int32_t t) noexcept
    cdef bint _only_anchor(self, int32_t b) noexcept
    cdef int32_t _choose(self) noexcept
    cdef bint _in_table(self, int32_t j) noexcept
    cdef int _render(self, int32_t c, long max_chars) except -1
