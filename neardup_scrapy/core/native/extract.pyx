# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True, initializedcheck=False
"""Main-content extraction in one walk over an HTML document's elements.

The walk numbers the visible elements in document order and records, per element, its parent,
the end of its subtree, its span in one text buffer, and bottom-up counts: visible characters,
characters inside links, characters outside chrome, the largest content-marked element below it
and its ``<article>`` descendants. It goes over a parsed (libxml2) tree (:meth:`Extractor.run`)
or follows libxml2's HTML parser as it reads the document (:meth:`Extractor.run_html`: the
parser's element and text events, the very ones lxml builds its trees from, so no tree is
built). Everything after the walk is arithmetic over these arrays:

1. **Container.** A ``<main>`` (or ``role="main"``) holding at least a fifth of the page's text
   is the main content (HTML: "the dominant contents of the body"), also where a parser
   recovering unclosed tags left it inside a header or aside. Else a single dominant,
   non-nested ``<article>`` that is not itself a list of articles. Else a descent from
   ``<body>`` (from the ``<main>`` when it holds half the page's *mass* though not a fifth of
   its characters: a short page in a long template): move into the child holding at least 70%
   of the node's *mass* (text outside chrome, link text weighted 1/5), never into a content
   block (paragraph, list, heading, data table: a table that holds the page's title heading
   lays the page out and is descended), nor away from a heading among the node's children
   (a document of headed sections stays whole), nor away from text written straight into the
   node (its own prose: the children beside it are parts of the document); when the page has
   a *title heading* (the heading that matches ``<title>``; else its one ``<h1>`` outside
   chrome, a headline written apart from the page's title), only into the branch holding it
   and more than it, so a page's heading stays with its text. A page that frames a copied
   document (an archive, a wiki) labels it with an ``<h1>`` holding the document's heading and
   more ("Site: Document"): the later heading is the title heading, and the label weighs
   nothing.
2. **Render.** The container's text without hidden and dropped elements (scripts, forms...),
   chrome (navigation, sharing, ads, comments... by tag, ARIA role or class/id words), link
   lists, one-line blocks of mostly links (breadcrumbs, category lines) and the labels of blocks
   a script fills (ad slots, widgets), each removed only while
   it holds less than half of the container's text: a mislabelled wrapper cannot empty the
   page, and an index page keeps its links. Chrome by tag or role (``<nav>``, ``<aside>``...)
   is the stronger signal: it goes while under two thirds of the container, and at any share
   when it is mostly links. Inside the container a layout word names a part of the document
   (a note, a header), chrome only when its block is mostly links: the container is the
   content whatever template holds it.
3. **Heading.** A container without an ``<h1>`` of its own gets the page's first ``<h1>``
   outside chrome prepended; a page without ``<h1>`` gets its ``<title>`` (the first one
   outside ``<svg>``, also where a parser moved it into ``<body>``).

Chrome words come in two strengths, each a general convention of page markup: *strong* words
(share, comment, related, sponsor, cookie, newsletter, dialog...) mark chrome wherever they are;
*layout* words (nav, sidebar, header, footer, toc, banner...) name page regions, so they mark
chrome outside sectioning content (``main``/``article``/``section``) for the container choice,
but document parts inside it and inside the chosen container (a DocBook "sidebar" note, an
article's "header" with its title); on a heading a layout word says what the heading is. A
chrome *name* on an element whose largest content-marked descendant (``main``, ``article``, a
"content" class) holds half its text is a layout wrapper, not chrome; a chrome *tag or role*
is what the element is, whatever its parts are named. A ``<header>`` outside sections is
chrome by position, but the ``<h1>`` in it still names the page (heading and title heading).
A link is navigation by its relation, like strong chrome: ``rel`` next, prev, up, contents...
(a pager, a link up to the table of contents), or the address a ``<link rel=next/prev>`` of
the head names.

Every count and decision is linear in the size of the tree (a step that would compare elements
pairwise is capped by a constant: see ``MAX_FRAMED``), and the page's budget is checked as
the walk goes and between the decisions: its *work*, counted in units (see ``WORK_ELEMENT`` in
the ``.pxd``), the same on any machine under any load, and, as a safety net, the CPU time of the
calling thread. So no page can hold a check (and the pages behind it) for long, and whether a
page is over its budget depends on the page, not on how busy the machine is.

The module is one extension split by concern into the files it includes (``_extract/``): tag
kinds and flags (``tags.pxi``), class/id words (``classes.pxi``), attributes (``attrs.pxi``),
text utilities (``text.pxi``), the walk (``walk.pxi``), the container decision
(``decide.pxi``), rendering (``render.pxi``) and the walk driven by the parser's events
(``events.pxi``); the types are declared in ``extract.pxd``. Two drivers feed one walk: the
tree walk (:meth:`Extractor.run`: a tree exists already, e.g. the one Scrapy builds for the
spider) and the parser's events (:meth:`Extractor.run_html`: only bytes exist, and building a
tree to walk it once would cost more than the walk); both number elements with the same
``_open``/``_add_text``/``_close``. An allocation failure anywhere makes its step return
``EXTRACT_NOMEM`` (or -1 to its caller) and raises :class:`MemoryError` at the pass's one exit.
"""

# cimports used only by the included files (native/_extract/*.pxi) are marked no-cython-lint:
# the linter reads one file and cannot see them used
from cpython.bytes cimport PyBytes_AS_STRING, PyBytes_FromStringAndSize, PyBytes_GET_SIZE  # no-cython-lint
from cpython.tuple cimport PyTuple_GET_ITEM, PyTuple_GET_SIZE
from cpython.unicode cimport PyUnicode_DATA, PyUnicode_GET_LENGTH, PyUnicode_KIND  # no-cython-lint
from libc.stdint cimport int32_t, int64_t, uint8_t, uint16_t, uint32_t, uint64_t
from libc.stdlib cimport calloc, free, malloc, realloc  # no-cython-lint
from libc.string cimport memcmp, memcpy, memset, strlen  # no-cython-lint
from posix.dlfcn cimport RTLD_NOW, dlopen, dlsym

from lxml.includes cimport tree
from lxml.includes.tree cimport const_xmlChar
cimport lxml.includes.etreepublic as cetree

from neardup_scrapy.core.native._libxml2 cimport (
    HTML_PARSE_COMPACT,
    HTML_PARSE_NONET,
    HTML_PARSE_RECOVER,
    XML_ERR_RESOURCE_LIMIT,
    XML_PARSE_HUGE,
    XML_SAX2_MAGIC,
    _BlankFn,
    _CDataFn,
    _CtxtFn,
    _EndFn,
    _ErrorFn,
    _FreeDocFn,
    _LastErrorFn,
    _NewCtxtFn,
    _ParserCtxt,
    _ReadMemoryFn,
    _SAXHandler,
    _StartFn,
    _TextFn,
    _XmlError,
)
from neardup_scrapy.core.native._common cimport (
    ByteBuf,
    U64Buf,
    bytebuf_append,
    bytebuf_push,
    bytebuf_reserve,
    cpu_now,
    hash_bytes,
    mix64,
    nd_load64,
    u64buf_push,
)

cetree.import_lxml__etree()

include "_extract/tags.pxi"
include "_extract/classes.pxi"
include "_extract/attrs.pxi"
include "_extract/text.pxi"
include "_extract/walk.pxi"
include "_extract/decide.pxi"
include "_extract/render.pxi"
include "_extract/events.pxi"


cdef inline int _outcome(int status) except -1:
    """The one exit of a page's pass: an allocation failure anywhere in it (every step returns
    ``EXTRACT_NOMEM``, or -1 to its caller, and stops) raises :class:`MemoryError` here; the
    other outcomes are returned."""
    if status == EXTRACT_NOMEM:
        raise MemoryError("neardup: out of memory extracting a page")
    return status


cdef class Extractor:
    """Reusable buffers and the extraction of one page at a time (see the module docstring).

    Not thread-safe: one extractor per thread.
    """

    def __cinit__(self):
        self.memo = <ClassMemo *>calloc(1, sizeof(ClassMemo))
        if self.memo == NULL:
            raise MemoryError()
        self.elems = NULL
        self.n_elems = 0
        self.cap_elems = 0
        self.drops = NULL
        self.cap_drops = 0
        self.sub_anchor = NULL
        self.cell_mass = NULL
        self.cap_aux = 0
        memset(&self.title_words, 0, sizeof(WordTable))
        memset(&self.heading_words, 0, sizeof(WordTable))
        memset(&self.word_hashes, 0, sizeof(U64Buf))
        self.work = self.max_work = 0
        self.cpu_deadline = 0.0
        self.parser = NULL
        self.ev_documents = 0
        memset(&self.buf, 0, sizeof(ByteBuf))
        memset(&self.out, 0, sizeof(ByteBuf))
        memset(&self.heading, 0, sizeof(ByteBuf))
        memset(&self.title, 0, sizeof(ByteBuf))
        memset(&self.canonical, 0, sizeof(ByteBuf))

    def __dealloc__(self):
        if self.parser != NULL:
            _html_free_ctxt(<_ParserCtxt *>self.parser)
        free(self.memo)
        free(self.elems)
        free(self.drops)
        free(self.sub_anchor)
        free(self.cell_mass)
        free(self.title_words.keys)
        free(self.title_words.stamps)
        free(self.heading_words.keys)
        free(self.heading_words.stamps)
        free(self.word_hashes.data)
        free(self.buf.data)
        free(self.out.data)
        free(self.heading.data)
        free(self.title.data)
        free(self.canonical.data)

    cdef int budget(self) noexcept nogil:
        """``EXTRACT_OK`` while the page is within its budget, else why not: ``EXTRACT_OVERWORK``
        (its work counted so far is past ``max_work``) or ``EXTRACT_TIMEOUT`` (the calling
        thread's CPU clock is past ``cpu_deadline``)."""
        if self.max_work > 0 and self.work > self.max_work:
            return EXTRACT_OVERWORK
        if self.cpu_deadline > 0 and cpu_now() > self.cpu_deadline:
            return EXTRACT_TIMEOUT
        return EXTRACT_OK

    cdef int run(self, tree.xmlNode *root, long max_chars) except -1:
        """Extract the main text of the tree at ``root`` into ``self.out`` (UTF-8, whitespace
        folded, at most ``max_chars`` characters), with ``self.heading``, ``self.title`` and
        ``self.canonical``, within the budget set in ``max_work`` and ``cpu_deadline``. Returns
        an ``EXTRACT_*`` outcome.

        The walk over the tree, most of the pass, runs without the GIL: another thread may run
        Python meanwhile (the tree must not change until this returns)."""
        cdef int status
        _reset(self)
        with nogil:
            status = _walk_tree(self, root)
            if status == EXTRACT_OK:
                status = _walk_budget(self)
        if status == EXTRACT_OK:
            status = _decide(self, max_chars)
        return _outcome(status)

    cdef int run_html(self, const unsigned char *data, size_t n, long max_chars) except -1:
        """:meth:`run` on an HTML document (UTF-8 bytes) without building its tree.

        libxml2's HTML parser, the one lxml builds its trees with, reports the elements and text
        it would put in the tree as events; the walk follows them as they come, so the document
        is read once and no tree is allocated and freed. The events are those that build lxml's
        tree (same parser, same options), so the result is :meth:`run`'s on ``lxml.html``'s
        parse. Returns ``EXTRACT_FALLBACK`` where the tree walk is needed instead: libxml2 not
        reachable through lxml, a document whose first ``<html>`` has no ``<body>``, a document
        nested nearly as deep as lxml's trees may be (the caller flattens it and parses a tree).
        The parse runs without the GIL: the event handlers touch only this extractor's C state
        (they receive it as a borrowed pointer, never a new reference).
        """
        return _outcome(_run_html(self, data, n, max_chars))

    # -- Python access (tests, diagnostics) ------------------------------------------------------
    def explain(self):
        """How the last :meth:`extract` chose, for diagnostics: the title heading, the container
        and the path from ``<body>`` to it, each as ``(kind bits, flag bits, visible characters,
        mass, text prefix)``."""
        cdef int32_t i = self.container
        path = []
        while i >= 0:
            path.append(self._describe(i))
            i = self.elems[i].parent
        return {"anchor": self._describe(self.anchor), "container": self._describe(self.container), "path": path[::-1]}

    def _describe(self, int32_t i):
        if i < 0 or i >= self.n_elems:
            return None
        cdef Elem *e = &self.elems[i]
        prefix = self.buf.data[e.tstart : min(e.tend, e.tstart + 80)].decode("utf-8", "replace")
        return (e.kind, e.flags, e.text, _mass(e), " ".join(prefix.split()))

    def extract(self, element, long max_chars=500_000, double timeout=0.0, long long max_work=0):
        """Extract from an lxml element (a tree's root): ``(status, text, heading, title, canonical)``.

        ``status`` is ``"ok"``, ``"empty"``, ``"too much work"`` (past ``max_work`` work units,
        0: no limit) or ``"timeout"`` (past ``timeout`` CPU seconds of this thread, 0: no
        limit); the strings are decoded UTF-8. :attr:`work` tells the work counted.
        """
        cdef cetree._Element el = element
        self.set_budget(timeout, max_work)
        return self._result(self.run(el._c_node, max_chars))

    def extract_html(self, bytes html, long max_chars=500_000, double timeout=0.0, long long max_work=0):
        """:meth:`extract` from an HTML document (UTF-8 bytes) without building its tree; the
        status ``"fallback"`` means the document needs :meth:`extract` on its parsed tree."""
        self.set_budget(timeout, max_work)
        return self._result(
            self.run_html(<const unsigned char *>PyBytes_AS_STRING(html), PyBytes_GET_SIZE(html), max_chars)
        )

    def set_budget(self, double timeout, long long max_work):
        """The budget of the next pages: at most ``max_work`` work units (0: no limit) and
        ``timeout`` CPU seconds of the calling thread from now (0: no limit)."""
        self.max_work = max_work if max_work > 0 else 0
        self.cpu_deadline = cpu_now() + timeout if timeout > 0 else 0.0

    @property
    def last_work(self):
        """Work units counted by the last page (so far, when it stopped past its budget)."""
        return self.work

    def _result(self, int status):
        names = {
            EXTRACT_OK: "ok", EXTRACT_EMPTY: "empty", EXTRACT_TIMEOUT: "timeout",
            EXTRACT_FALLBACK: "fallback", EXTRACT_OVERWORK: "too much work",
        }
        if status == EXTRACT_FALLBACK:
            return (names[status], "", "", "", "")
        return (
            names[status],
            self.out.data[: self.out.len].decode("utf-8", "replace") if self.out.len else "",
            self.heading.data[: self.heading.len].decode("utf-8", "replace") if self.heading.len else "",
            _fold(self.title.data[: self.title.len].decode("utf-8", "replace")) if self.title.len else "",
            self.canonical.data[: self.canonical.len].decode("utf-8", "replace").strip() if self.canonical.len else "",
        )


#: libxml2's deepest tree (see ``MAX_DEPTH`` in the ``.pxd``), for the reading policy.
MAX_TREE_DEPTH = MAX_DEPTH
