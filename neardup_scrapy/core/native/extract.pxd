# cython: language_level=3
cimport cython
from libc.stdint cimport int32_t, int64_t, uint8_t, uint16_t, uint32_t, uint64_t

from lxml.includes cimport tree

from neardup_scrapy.core.native._common cimport ByteBuf, U64Buf

# Outcome of Extractor.run
cdef enum:
    EXTRACT_OK = 0
    EXTRACT_EMPTY = 1
    EXTRACT_TIMEOUT = 2
    EXTRACT_NOMEM = 3
    EXTRACT_FALLBACK = 4  # run_html: the page needs the tree walk (see Extractor.run_html)
    EXTRACT_OVERWORK = 5  # the page's work passed its budget (Extractor.max_work)

# Work units (the page's budget, Extractor.max_work): a byte of visible text read, copied or
# folded costs 1, a visible element numbered by the walk WORK_ELEMENT, a visit of an element by
# a decision after the walk 1, a token hashed and sketched WORK_TOKEN. Counted, not timed: the
# same page costs the same work on any machine under any load. One unit is about the CPU time
# of handling one byte of text (a few nanoseconds).
cdef enum:
    # libxml2's trees hold elements at most this deep (huge_tree): the parser stops at an element
    # it would nest deeper and drops the rest of the document. The one depth of the reading
    # policy (neardup_scrapy.core.reading): the walk of the parser's events gives way to the
    # tree here, and a tree this deep is parsed again flattened.
    MAX_DEPTH = 2048

cdef enum:
    WORK_ELEMENT = 32
    WORK_TOKEN = 4

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


cdef enum:
    MAX_SERIES = 8        # <link rel=next/prev> hrefs kept per page
    SERIES_SEED = 0x5E7   # seed of their hashes
    MAX_WORDS = 32        # entries of a word list (Words)
    MEMO_SLOTS = 1 << 14  # class/id strings remembered by an extractor (by shape)
    WORD_SLOTS = 1 << 13  # single class words remembered by an extractor: class and id strings
                          # are often unique (id="installing-packages") while their words recur


cdef struct Words:
    # a list of words (module constants) readable without the GIL
    int n
    const char *items[MAX_WORDS]
    size_t lens[MAX_WORDS]


cdef struct ClassMemo:
    # what the class/id strings and words met so far are (hash -> class); one per extractor
    uint64_t keys[MEMO_SLOTS]
    uint8_t vals[MEMO_SLOTS]
    uint32_t used
    uint64_t word_keys[WORD_SLOTS]
    uint8_t word_vals[WORD_SLOTS]
    uint32_t word_used


cdef struct WordTable:
    # a set of word hashes (open addressing); a slot is in use when its stamp is the table's
    uint64_t *keys
    uint32_t *stamps
    size_t cap           # a power of two
    uint32_t stamp


cdef struct ElementAttrs:
    # what an element's attributes say, read by the walk before the element is numbered
    const unsigned char *cls
    const unsigned char *ident
    const unsigned char *href
    size_t ncls
    size_t nid
    size_t nhref
    int rel
    bint hidden
    bint has_href
    bint role_main
    bint role_chrome


@cython.final
cdef class Extractor:
    cdef Elem *elems
    cdef ClassMemo *memo
    cdef int32_t n_elems
    cdef int32_t cap_elems
    cdef ByteBuf buf          # the walked text, block boundaries as spaces
    cdef ByteBuf out          # the main text
    cdef ByteBuf heading      # the page's heading (first h1, else first title-classed element)
    cdef ByteBuf title        # the <title>
    cdef ByteBuf canonical    # <link rel=canonical href>
    cdef uint64_t series[MAX_SERIES]  # hashes of the hrefs of <link rel=next/prev>
    cdef int n_series
    cdef int32_t anchor
    cdef list anchors         # the title headings (each also flagged F_ANCHOR)
    cdef int32_t *sub_anchor  # per element: most text of a title heading in its subtree (-1: none)
    cdef int64_t *cell_mass   # per table part: most mass of a cell it lays out (-1: none)
    cdef int32_t cap_aux
    cdef WordTable title_words   # the words of <title>
    cdef WordTable heading_words # the words of one heading candidate
    cdef U64Buf word_hashes      # the words of one text, in order
    cdef int32_t frame  # a framing page's label of the document it holds (-1: none)
    cdef int32_t container
    cdef uint32_t *drops
    cdef int32_t cap_drops
    # the walk driven by parser events (run_html)
    cdef void *parser
    cdef int ev_documents     # documents read by this parser context
    cdef int32_t ev_cur       # the open element (-1: none)
    cdef int ev_depth         # elements open in the document
    cdef int ev_skip          # elements open inside a hidden one (0: visible)
    cdef int ev_region        # which child of <html> the events are in (REGION_*)
    cdef bint ev_body         # the <body> has opened
    cdef int ev_roots         # root elements opened (libxml2 opens another after </html>)
    cdef int ev_status        # EXTRACT_OK until a deadline, a memory failure or a fallback
    cdef bint ev_title        # collecting the <title>'s text
    cdef long ev_steps
    # the page's budget: work units counted so far and the most allowed (0: no limit), and a
    # deadline on the CPU clock of the calling thread (0: none)
    cdef long long work
    cdef long long max_work
    cdef double cpu_deadline

    cdef int run(self, tree.xmlNode *root, long max_chars) except -1
    cdef int run_html(self, const unsigned char *data, size_t n, long max_chars) except -1
    cdef int budget(self) noexcept nogil
