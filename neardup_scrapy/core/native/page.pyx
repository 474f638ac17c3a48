# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True, initializedcheck=False
"""One compiled pass per page: HTML (or a parsed tree, or text) -> main text -> token hashes -> sketches.

:class:`NativeAnalyzer` chains :class:`~.extract.Extractor`, :class:`~.tokens.Tokenizer` and
:class:`~.sketch.Sketcher` over reused buffers; the only Python objects it makes per page are
the bytes of its result (:class:`PageSketch`). The page's budget bounds the whole pass: its work
counted in units (see ``WORK_ELEMENT`` in ``extract.pxd``), and the CPU time of the thread.
"""

from cpython.bytes cimport PyBytes_AS_STRING, PyBytes_FromStringAndSize, PyBytes_GET_SIZE
from libc.stdint cimport uint64_t
from libc.stdlib cimport free
from libc.string cimport memset

cimport lxml.includes.etreepublic as cetree

from neardup_scrapy.core.native._common cimport ByteBuf, U64Buf
from neardup_scrapy.core.native.extract cimport (
    EXTRACT_EMPTY,
    EXTRACT_FALLBACK,
    EXTRACT_OVERWORK,
    EXTRACT_TIMEOUT,
    WORK_TOKEN,
    Extractor,
)
from neardup_scrapy.core.native.sketch cimport Sketcher, build_profile
from neardup_scrapy.core.native.tokens cimport Tokenizer

cetree.import_lxml__etree()


#: A main text of fewer tokens than this may be a page not read (see ``_tokenize_found``): the
#: same bound as a text too short to identify a document (``verify.IDENTITY_TOKENS``).
cdef int UNREAD_TOKENS = 50


cdef long _visible_chars(const unsigned char *s, size_t n) noexcept nogil:
    """Code points of UTF-8 text that are not ASCII whitespace."""
    cdef size_t i
    cdef long count = 0
    for i in range(n):
        if (s[i] & 0xC0) != 0x80 and s[i] != 32 and s[i] != 9 and s[i] != 10 and s[i] != 13:
            count += 1
    return count


cdef class PageSketch:
    """What the compiled pass found on one page.

    Attributes:
        status: ``"ok"``, ``"no text"`` (nothing visible, or no tokens), ``"too much work"``
            (past the work budget) or ``"timeout"`` (past the CPU time budget).
        work: work units the pass counted (see ``WORK_ELEMENT`` in ``extract.pxd``).
        text: the main text, UTF-8, whitespace folded.
        tokens: number of tokens.
        digest: 16-byte exact-duplicate digest.
        signature: the MinHash, ``num_perm`` little-endian uint32.
        simhash: the 64-bit SimHash.
        keys: the bucket keys, little-endian uint64 (digest, bands, SimHash tables).
        profile: the verification profile (edit sketch and heading words).
        canonical: the page's ``<link rel=canonical>`` href, ``""`` when none.
        heading: the text of the page's heading as the extractor found it (UTF-8), ``b""`` when none.
        title: the text of its ``<title>`` (UTF-8), ``b""`` when none.
        prose_chars: visible characters of the page outside links (whitespace excluded).
        main_chars: visible characters of the main text the extractor chose (whitespace excluded).
        read_whole: the page was read whole (its main text was not found; see
            ``NativeAnalyzer._tokenize_found``): ``text`` is all its visible text.
    """

    cdef readonly str status
    cdef readonly long long work
    cdef readonly bytes text
    cdef readonly long tokens
    cdef readonly bytes digest
    cdef readonly bytes signature
    cdef readonly unsigned long long simhash
    cdef readonly bytes keys
    cdef readonly bytes profile
    cdef readonly str canonical
    cdef readonly bytes heading
    cdef readonly bytes title
    cdef readonly long prose_chars
    cdef readonly long main_chars
    cdef readonly bint read_whole


cdef class NativeAnalyzer:
    """The compiled per-page pass for one set of parameters (not thread-safe: one per thread).

    Args:
        seed, num_perm, shingle_size, bands, rows, simhash_masks: as :class:`~.sketch.Sketcher`.
        mask_digits, mask_dates, char_mode: as :class:`~.tokens.Tokenizer`.
        max_chars: the main text is cut at this many characters.
    """

    cdef Extractor extractor
    cdef Tokenizer tokenizer
    cdef Sketcher sketcher
    cdef long max_chars
    cdef U64Buf toks
    cdef U64Buf heading
    cdef U64Buf title
    cdef ByteBuf profile
    cdef long prose_chars
    cdef long main_chars
    cdef bint read_whole

    def __cinit__(self, uint64_t seed, int num_perm, int shingle_size, int bands, int rows, simhash_masks,
                  bint mask_digits=False, bint mask_dates=True, bint char_mode=False, long max_chars=500_000):
        self.extractor = Extractor()
        self.tokenizer = Tokenizer(seed, mask_digits, mask_dates, char_mode)
        self.sketcher = Sketcher(seed, num_perm, shingle_size, bands, rows, simhash_masks)
        self.max_chars = max_chars
        memset(&self.toks, 0, sizeof(U64Buf))
        memset(&self.heading, 0, sizeof(U64Buf))
        memset(&self.title, 0, sizeof(U64Buf))
        memset(&self.profile, 0, sizeof(ByteBuf))

    def __dealloc__(self):
        free(self.toks.data)
        free(self.heading.data)
        free(self.title.data)
        free(self.profile.data)

    @property
    def key_count(self):
        return self.sketcher.key_count

    cdef PageSketch _finish(self, str status, bytes canonical_src, uint64_t salt, bint salted):
        cdef PageSketch page = PageSketch()
        cdef unsigned char digest[16]
        cdef uint64_t simhash
        cdef int nk = self.sketcher.key_count
        cdef bytes keys
        cdef uint64_t *keys_out
        page.status = status
        page.work = self.extractor.work
        page.canonical = canonical_src.decode("utf-8", "replace").strip() if canonical_src else ""
        page.tokens = <long>self.toks.len
        page.text = page.heading = page.title = b""
        page.digest = page.signature = page.keys = page.profile = b""
        page.simhash = 0
        if status != "ok":
            return page
        if self.toks.len == 0:
            page.status = "no text"
            return page
        keys = PyBytes_FromStringAndSize(NULL, nk * 8)
        keys_out = <uint64_t *>PyBytes_AS_STRING(keys)
        self.profile.len = 0
        # C arrays only: another thread may run Python meanwhile
        with nogil:
            self.sketcher.sketch(self.toks.data, self.toks.len, salt, salted, digest, &simhash, keys_out)
            build_profile(self.toks.data, self.toks.len, self.heading.data, self.heading.len,
                          self.title.data, self.title.len, &self.profile)
        page.digest = PyBytes_FromStringAndSize(<char *>digest, 16)
        page.simhash = simhash
        page.keys = keys
        page.signature = PyBytes_FromStringAndSize(<char *>self.sketcher.signature, self.sketcher.num_perm * 4)
        page.profile = PyBytes_FromStringAndSize(<char *>self.profile.data, self.profile.len)
        return page

    def analyze_tree(self, element, host_salt=None, double timeout=0.0, long long max_work=0):
        """Analyse a parsed page (an lxml element, e.g. a tree's root; never modified).

        ``host_salt``: a 64-bit salt for the bucket keys (``scope="host"``), or ``None``.
        ``timeout``: CPU seconds of this thread the pass may take (0: no limit); past it the
        status is ``"timeout"``. ``max_work``: work units the pass may count (0: no limit);
        past them the status is ``"too much work"``.
        """
        cdef cetree._Element el = element
        self.extractor.set_budget(timeout, max_work)
        self.toks.len = self.heading.len = self.title.len = 0
        return self._analyze(self.extractor.run(el._c_node, self.max_chars), host_salt)

    def analyze_html(self, bytes html, host_salt=None, double timeout=0.0, long long max_work=0):
        """Analyse an HTML document (UTF-8 bytes) in one pass over the parser's events, without
        building its tree: the same result as :meth:`analyze_tree` on ``lxml.html``'s parse of
        it (the same work counted). ``None`` when the document needs the tree (see
        ``Extractor.run_html``). The parse and the walk run without the GIL."""
        cdef int status
        self.extractor.set_budget(timeout, max_work)
        self.toks.len = self.heading.len = self.title.len = 0
        status = self.extractor.run_html(
            <const unsigned char *>PyBytes_AS_STRING(html), PyBytes_GET_SIZE(html), self.max_chars
        )
        if status == EXTRACT_FALLBACK:
            return None
        return self._analyze(status, host_salt)

    cdef int _tokenize_found(self) except -1 nogil:
        """The token hashes of the extractor's main text, heading and title (C arrays only:
        another thread may run Python meanwhile).

        A page whose main text is a few words (under ``UNREAD_TOKENS``) holding under a tenth of
        the page's prose (its visible text outside links) has not been read: the extractor took
        what the page is about for chrome (a story's comments, a forum's search results, in
        elements named like chrome), and the few words left, a heading that such pages share,
        say nothing of it. Such a page is read whole instead (``read_whole``): all its visible
        text, in document order."""
        self.tokenizer.tokenize(self.extractor.out.data, self.extractor.out.len, &self.toks)
        self.main_chars = _visible_chars(<const unsigned char *>self.extractor.out.data, self.extractor.out.len)
        self.prose_chars = (
            self.extractor.elems[0].text - self.extractor.elems[0].link if self.extractor.n_elems else 0
        )
        self.read_whole = self.toks.len < UNREAD_TOKENS and self.main_chars * 10 < self.prose_chars
        if self.read_whole:
            self.toks.len = 0
            self.tokenizer.tokenize(
                self.extractor.buf.data,
                <size_t>self.max_chars if self.extractor.buf.len > <size_t>self.max_chars else self.extractor.buf.len,
                &self.toks,
            )
        if self.extractor.heading.len:
            self.tokenizer.tokenize(self.extractor.heading.data, self.extractor.heading.len, &self.heading)
            self.tokenizer.join_names(&self.heading)
        if self.extractor.title.len:
            self.tokenizer.tokenize(self.extractor.title.data, self.extractor.title.len, &self.title)
            self.tokenizer.join_names(&self.title)
        return 0

    cdef PageSketch _analyze(self, int status, host_salt):
        """Tokens and sketches of what the extractor found (``status``: its outcome); the
        tokens count in the page's work (the bytes read, and each token hashed into the
        sketches), within the extractor's budget."""
        cdef Extractor ex = self.extractor
        cdef PageSketch page
        if status == EXTRACT_TIMEOUT:
            return self._finish("timeout", None, 0, False)
        if status == EXTRACT_OVERWORK:
            return self._finish("too much work", None, 0, False)
        if status == EXTRACT_EMPTY:
            return self._finish("no text", None, 0, False)
        with nogil:
            self._tokenize_found()
            ex.work += <long long>(ex.out.len + ex.heading.len + ex.title.len)
            ex.work += <long long>(self.toks.len + self.heading.len + self.title.len) * WORK_TOKEN
            status = ex.budget()
        if status == EXTRACT_TIMEOUT:
            return self._finish("timeout", None, 0, False)
        if status == EXTRACT_OVERWORK:
            return self._finish("too much work", None, 0, False)
        page = self._finish(
            "ok",
            PyBytes_FromStringAndSize(<char *>ex.canonical.data, ex.canonical.len) if ex.canonical.len else None,
            host_salt if host_salt is not None else 0,
            host_salt is not None,
        )
        if self.read_whole:
            page.text = b" ".join(PyBytes_FromStringAndSize(<char *>ex.buf.data, ex.buf.len).split())
        else:
            page.text = PyBytes_FromStringAndSize(<char *>ex.out.data, ex.out.len)
        page.prose_chars = self.prose_chars
        page.main_chars = self.main_chars
        page.read_whole = self.read_whole
        page.heading = PyBytes_FromStringAndSize(<char *>ex.heading.data, ex.heading.len)
        page.title = PyBytes_FromStringAndSize(<char *>ex.title.data, ex.title.len)
        return page

    def analyze_text(self, str text, host_salt=None):
        """Analyse plain text (no extraction; no heading)."""
        cdef bytes data = text[: self.max_chars].encode("utf-8", "surrogatepass")
        cdef PageSketch page
        self.toks.len = self.heading.len = self.title.len = 0
        self.tokenizer.tokenize(<const unsigned char *>PyBytes_AS_STRING(data), PyBytes_GET_SIZE(data), &self.toks)
        page = self._finish("ok", None, host_salt if host_salt is not None else 0, host_salt is not None)
        page.text = data
        page.work = PyBytes_GET_SIZE(data) + <long long>self.toks.len * WORK_TOKEN
        return page
