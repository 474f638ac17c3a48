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
"""

from cpython.bytes cimport PyBytes_AS_STRING, PyBytes_FromStringAndSize, PyBytes_GET_SIZE
from cpython.tuple cimport PyTuple_GET_ITEM, PyTuple_GET_SIZE
from cpython.unicode cimport PyUnicode_DATA, PyUnicode_GET_LENGTH, PyUnicode_KIND
from libc.stdint cimport int32_t, int64_t, uint8_t, uint16_t, uint32_t, uint64_t
from libc.stdlib cimport calloc, free, malloc, realloc
from libc.string cimport memcmp, memcpy, memset, strlen
from posix.dlfcn cimport RTLD_NOW, dlopen, dlsym
from posix.time cimport CLOCK_THREAD_CPUTIME_ID, clock_gettime, timespec

from lxml.includes cimport tree
from lxml.includes.tree cimport const_xmlChar
cimport lxml.includes.etreepublic as cetree

from neardup_scrapy.core.native._common cimport (
    ByteBuf,
    U64Buf,
    bytebuf_append,
    bytebuf_push,
    bytebuf_reserve,
    hash_bytes,
    mix64,
    nd_load64,
    u64buf_push,
)

cetree.import_lxml__etree()

# -- tag kinds -----------------------------------------------------------------------------------
cdef enum:
    K_DROP = 1          # never visible text: code, media, controls, head
    K_SEMCHROME = 2     # chrome by HTML semantics: nav, aside, menu, dialog
    K_HF = 4            # header/footer: chrome of the page, parts of a section
    K_SECTIONING = 8    # main, article, section
    K_INLINE = 16       # phrasing content: glued to its neighbours
    K_BLOCKSTOP = 32    # content blocks the descent never enters
    K_TABLEPART = 64
    K_CELL = 128
    K_H1 = 256
    K_H23 = 512
    K_A = 1024
    K_MAIN = 2048
    K_ARTICLE = 4096
    K_HEAD = 8192
    K_TITLE = 16384
    K_BODY = 32768

# -- element flags -------------------------------------------------------------------------------
cdef enum:
    F_STRONG = 1        # chrome wherever it is
    F_LAYOUT = 2        # a page region: chrome outside sectioning content
    F_CONTENT = 4       # class/id names content (article, post, entry...)
    F_TITLED = 8        # class/id names a title
    F_SEM_MAIN = 16
    F_SEM_ARTICLE = 32
    F_IN_SECTION = 64   # has a sectioning ancestor
    F_EXCLUDED = 128    # chrome for the container choice
    F_OVERRIDE = 256    # chrome-named, but a content-marked descendant holds half its text
    F_ANC_EXCL = 512    # itself or an ancestor excluded
    F_IN_ARTICLE = 1024 # has an <article> ancestor
    F_LINK = 2048       # an <a href>
    F_ANC_STRONG = 4096 # itself or an ancestor strong chrome (not a layout region)
    F_SCRIPTED = 8192   # holds a <script> of its own (an ad slot or widget placeholder)
    F_PAGE_HF = 16384  # a <header> or <footer> outside sectioning content (chrome by position)
    F_SEMANTIC = 32768  # chrome by HTML semantics (nav, aside, menu, dialog or an ARIA chrome role)
    F_ANC_HARD = 65536  # itself or an ancestor excluded, page headers and footers aside
    F_IN_PAGE_HF = 131072  # itself or an ancestor a page header or footer
    F_ANCHOR = 262144   # a title heading (Extractor.anchors)

cdef enum:
    ALPHA_PCT = 70          # a child must hold this share of a node's mass for the descent
    ANCHOR_PCT = 25         # the branch holding the title heading needs this share
    LISTING_ANCHOR_PCT = 10 # ... beside a list of articles
    SEMANTIC_PCT = 20       # share of the page's text a <main>/<article> must hold
    MAIN_MASS_PCT = 50      # ... or share of the page's mass (text outside chrome) a <main> holds
    LINK_WEIGHT_DIV = 5     # link text weighs 1/5 in the mass
    DENSE_PCT = 80          # a block this much link text is a link list
    LAYOUT_DENSE_PCT = 50   # a layout-named block in the container this much link text is chrome
    MIN_LIST_CHARS = 20
    LINE_CHARS = 100        # a block shorter than this is one line of text
    OWN_TEXT_CHARS = 20     # text written straight into an element that makes it a container of prose
    HEADING_CHARS = 200     # a title-classed element longer than this is not a heading
    LINK_LINE_PCT = 50      # a one-line layout block this much link text is a navigation line
    # A title heading is a line, not a passage: an element with more visible characters than
    # this (or a longer span of text, whitespace included) is never one. The longest title
    # heading of the labelled sets has 141 characters.
    ANCHOR_CHARS = 400
    ANCHOR_BYTES = 16 * ANCHOR_CHARS
    # The headings' words are read at most this many times over the page's text (a heading in
    # a title-classed wrapper is read twice): candidates nested in one another (a chain of
    # 2,000 nested headings) would read the same text once per level. Past that allowance the
    # later candidates are not read, so the search stays linear in the page.
    ANCHOR_READS = 2
    # A framing page heads the copied document twice (module docstring): its label and the
    # document's heading come first among its title-matching <h1>s. The search for the pair
    # compares them pairwise, so it looks at the first MAX_FRAMED (a page of thousands of such
    # headings repeats its title as a pattern, not as a frame)
    MAX_FRAMED = 64
    DEADLINE_EVERY = 4096   # nodes between two looks at the budget

cdef uint16_t _TAG_KIND_SLOTS = 512
cdef uint64_t _tag_keys[512]
cdef uint16_t _tag_kinds[512]


cdef inline uint64_t _name_key(const unsigned char *name, size_t n) noexcept nogil:
    return hash_bytes(name, n, 0x7A6) | 1  # never 0 (0 marks an empty slot)


cdef void _add_tags(str names, uint16_t kind):
    cdef bytes b
    cdef uint64_t key
    cdef uint32_t slot
    for name in names.split():
        b = name.encode()
        key = _name_key(b, len(b))
        slot = key % _TAG_KIND_SLOTS
        while _tag_keys[slot] != 0 and _tag_keys[slot] != key:
            slot = (slot + 1) % _TAG_KIND_SLOTS
        _tag_keys[slot] = key
        _tag_kinds[slot] |= kind


memset(_tag_keys, 0, sizeof(_tag_keys))
memset(_tag_kinds, 0, sizeof(_tag_kinds))
_add_tags(
    "script style template svg math iframe object embed head title meta link canvas audio "
    "video map datalist frameset frame applet param source track select option textarea button input",
    K_DROP,
)
# A figure's caption describes the media beside the text (HTML: "a caption or legend for the
# rest of the figure"), not the text itself: chrome like navigation, removed while it is small.
_add_tags("nav aside menu dialog noscript figcaption", K_SEMCHROME)
_add_tags("header footer", K_HF)
_add_tags("main article section", K_SECTIONING)
_add_tags(
    "a abbr acronym b bdi bdo big blink cite code data del dfn em font i ins kbd label mark nobr q s "
    "samp small span strike strong sub sup time tt u var wbr",
    K_INLINE,
)
_add_tags(
    "p ul ol dl li dt dd pre blockquote h1 h2 h3 h4 h5 h6 figure figcaption code address", K_BLOCKSTOP
)
_add_tags("table thead tbody tfoot tr", K_TABLEPART)
_add_tags("td th", K_CELL)
_add_tags("h1", K_H1)
_add_tags("h2 h3", K_H23)
_add_tags("a", K_A)
_add_tags("main", K_MAIN)
_add_tags("article", K_ARTICLE)
_add_tags("head", K_HEAD)
_add_tags("title", K_TITLE)
_add_tags("body", K_BODY)


cdef inline uint16_t _tag_kind(const unsigned char *name) noexcept nogil:
    cdef size_t n = strlen(<const char *>name)
    cdef uint64_t key
    cdef uint32_t slot
    if n == 0 or n > 16:
        return 0
    key = _name_key(name, n)
    slot = key % _TAG_KIND_SLOTS
    while _tag_keys[slot] != 0:
        if _tag_keys[slot] == key:
            return _tag_kinds[slot]
        slot = (slot + 1) % _TAG_KIND_SLOTS
    return 0


# -- class/id words ------------------------------------------------------------------------------
# Each list states the convention it stands for; a word matches whole, a "part" anywhere in a word
# ("postcomments"). Class strings are split at non-letters and camelCase humps, lower-cased.
#: Strong chrome: sharing, ads and sponsors, consent, comments, related links, sign-in, site search,
#: pagination, screen-reader-only and CSS-hidden text, media captions and credits,
#: bylines and author boxes, modal dialogs.
cdef tuple _STRONG_WORDS = (
    b"ad", b"ads", b"share", b"rss", b"login", b"promo", b"promos", b"search",
    # overlays opened on demand, named as the <dialog> element and role are
    b"modal", b"dialog",
    b"sronly", b"offscreen", b"signin", b"signup", b"pager", b"breadcrumbs", b"breadcrumb", b"sr",
)
#: CSS frameworks' hiding utilities (.hidden, .is-hidden, .visually-hidden, .invisible): a class of
#: its own, the last of at most two words. A longer name uses the word for a part or a variant:
#: ``field--label-hidden`` is a field whose label is hidden, ``hidden-xs`` hides on phones only.
cdef tuple _HIDING_WORDS = (b"hidden", b"invisible")
cdef tuple _STRONG_PARTS = (
    b"breadcrumb", b"comment", b"sharing", b"social", b"related", b"recommend", b"advert",
    b"sponsor", b"cookie", b"consent", b"gdpr", b"newsletter", b"subscri", b"popup", b"toolbar",
    b"pagination", b"trackback",
    # third-party comment and recommendation widgets, embedded under their own names by whatever
    # site uses them (not any one site's markup)
    b"outbrain", b"taboola", b"disqus",
    # captions and credits of images and video describe media, not the text (wp-caption, photo-credit)
    b"caption", b"credit",
    # who wrote the text and when: bylines, datelines and author boxes are about the page, and a
    # copy of the text rarely carries them (post-author, authorInfo, article-byline)
    b"author", b"byline", b"dateline",
)
#: Layout regions of a page: navigation, side columns, page header and footer, tables of contents.
cdef tuple _LAYOUT_WORDS = (
    b"nav", b"navbar", b"menu", b"menus", b"submenu", b"foot", b"tags", b"toc", b"rail",
    b"masthead",
)
cdef tuple _LAYOUT_PARTS = (b"navigation", b"sidebar", b"sidenav", b"footer", b"header", b"banner", b"copyright")
#: Content containers.
cdef tuple _CONTENT_WORDS = (b"main", b"post", b"entry", b"story", b"body", b"text", b"article", b"content")
cdef tuple _CONTENT_PARTS = (
    b"article", b"content", b"story", b"entry", b"maintext", b"mainbody", b"posttext", b"postbody"
)
#: ARIA roles of page chrome.
cdef tuple _CHROME_ROLES = (
    b"navigation", b"banner", b"contentinfo", b"complementary", b"menu", b"menubar", b"search",
    b"dialog", b"alert", b"toolbar", b"tablist",
)

cdef enum:
    C_NONE = 0
    C_STRONG = 1
    C_LAYOUT = 2
    C_CONTENT = 3
    C_TITLED = 8  # bit, combined with the above

cdef Words _strong_words, _hiding_words, _strong_parts, _layout_words, _layout_parts
cdef Words _content_words, _content_parts, _chrome_roles, _series_rels, _navigation_rels


cdef void _fill_words(Words *out, tuple words) except *:
    """Point ``out`` at the bytes of ``words`` (module constants, alive as long as the module),
    so the walk reads the lists without the GIL."""
    cdef Py_ssize_t i
    if PyTuple_GET_SIZE(words) > MAX_WORDS:
        raise ValueError("word list too long")
    out.n = <int>PyTuple_GET_SIZE(words)
    for i in range(out.n):
        out.items[i] = PyBytes_AS_STRING(<object>PyTuple_GET_ITEM(words, i))
        out.lens[i] = <size_t>PyBytes_GET_SIZE(<object>PyTuple_GET_ITEM(words, i))


cdef inline bint _word_in(const unsigned char *w, size_t n, const Words *words) noexcept nogil:
    """Whether the word ``w[:n]`` is one of ``words``."""
    cdef int i
    for i in range(words.n):
        if words.lens[i] == n and memcmp(w, words.items[i], n) == 0:
            return True
    return False


cdef uint8_t _part_first[256]  # bytes that start some part (a cheap filter before the search)
memset(_part_first, 0, sizeof(_part_first))


cdef inline bint _part_in(const unsigned char *w, size_t n, const Words *parts) noexcept nogil:
    """Whether one of ``parts`` occurs inside the word ``w[:n]``."""
    cdef int i
    cdef size_t m, at
    cdef const char *part
    for at in range(n):
        if _part_first[w[at]]:
            break
    else:
        return False
    for i in range(parts.n):
        m = parts.lens[i]
        part = parts.items[i]
        if m > n:
            continue
        for at in range(n - m + 1):
            if w[at] == <unsigned char>part[0] and memcmp(w + at, part, m) == 0:
                return True
    return False


for _parts in (_STRONG_PARTS, _LAYOUT_PARTS, _CONTENT_PARTS):
    for _part in _parts:
        _part_first[_part[0]] = 1
_fill_words(&_strong_words, _STRONG_WORDS)
_fill_words(&_hiding_words, _HIDING_WORDS)
_fill_words(&_strong_parts, _STRONG_PARTS)
_fill_words(&_layout_words, _LAYOUT_WORDS)
_fill_words(&_layout_parts, _LAYOUT_PARTS)
_fill_words(&_content_words, _CONTENT_WORDS)
_fill_words(&_content_parts, _CONTENT_PARTS)
_fill_words(&_chrome_roles, _CHROME_ROLES)


cdef uint8_t _word_class(ClassMemo *memo, const unsigned char *w, size_t n, uint64_t h) noexcept nogil:
    """C_STRONG, C_LAYOUT, C_CONTENT or C_NONE for one lower-cased word (``h``: its hash)."""
    cdef uint64_t key = mix64(h ^ n) | 1
    cdef uint32_t slot = <uint32_t>(key & (WORD_SLOTS - 1))
    cdef uint8_t kind
    while memo.word_keys[slot] != 0:
        if memo.word_keys[slot] == key:
            return memo.word_vals[slot] - 1
        slot = (slot + 1) & (WORD_SLOTS - 1)
    if _word_in(w, n, &_strong_words) or _part_in(w, n, &_strong_parts):
        kind = C_STRONG
    elif _word_in(w, n, &_layout_words) or _part_in(w, n, &_layout_parts):
        kind = C_LAYOUT
    elif _word_in(w, n, &_content_words) or _part_in(w, n, &_content_parts):
        kind = C_CONTENT
    else:
        kind = C_NONE
    if memo.word_used > WORD_SLOTS * 3 // 4:
        memset(memo.word_keys, 0, sizeof(memo.word_keys))
        memo.word_used = 0
        slot = <uint32_t>(key & (WORD_SLOTS - 1))
    memo.word_keys[slot] = key
    memo.word_vals[slot] = kind + 1
    memo.word_used += 1
    return kind


cdef uint8_t _classify_words(ClassMemo *memo, const unsigned char *s, size_t n) noexcept nogil:
    """Classify a class/id string: C_STRONG, C_LAYOUT, C_CONTENT or C_NONE, plus C_TITLED.

    Words are runs of ASCII letters, split at camelCase humps and lower-cased; the strongest
    class any word has wins (strong chrome, then layout, then content). A hiding word counts
    only as its class name's last word of at most two (``_HIDING_WORDS``).
    """
    cdef unsigned char word[64]
    cdef size_t w = 0, i
    cdef unsigned char c, prev = 0
    cdef uint64_t h = 0xCBF29CE484222325ULL
    cdef uint8_t kind
    cdef bint letter, upper
    cdef bint strong = False, layout = False, content = False, titled = False
    cdef bint hiding_last = False
    cdef int words_in_name = 0
    for i in range(n + 1):
        c = s[i] if i < n else 0
        upper = c >= 65 and c <= 90
        letter = upper or (c >= 97 and c <= 122)
        if (not letter or (upper and prev >= 97 and prev <= 122)) and w:
            # a word ends at a non-letter or before a camelCase hump
            words_in_name += 1
            hiding_last = _word_in(word, w, &_hiding_words)
            kind = C_NONE if hiding_last else _word_class(memo, word, w, h)
            if kind == C_STRONG:
                strong = True
            elif kind == C_LAYOUT:
                layout = True
            elif kind == C_CONTENT:
                content = True
            if w == 5 and memcmp(word, b"title", 5) == 0:
                titled = True
            w = 0
            h = 0xCBF29CE484222325ULL
        if c == 0 or c == 32 or c == 9 or c == 10 or c == 13:
            # a class name ends: a hiding utility is a short name ending in the hiding word
            if hiding_last and words_in_name <= 2:
                strong = True
            hiding_last = False
            words_in_name = 0
        if letter and w < 64:
            word[w] = c + 32 if upper else c
            h = (h ^ word[w]) * 0x100000001B3ULL
            w += 1
        prev = c
    return (C_STRONG if strong else C_LAYOUT if layout else C_CONTENT if content else C_NONE) | (
        C_TITLED if titled else 0
    )


cdef inline uint64_t _shape_hash(const unsigned char *s, size_t n, uint64_t h) noexcept nogil:
    """Fold ``s`` into ``h``, every run of digits counting as one "0": ids that differ only in
    their numbers ("post-123", "post-456") share a memo entry, as they share a class."""
    cdef size_t i
    cdef bint digits = False
    cdef unsigned char c
    for i in range(n):
        c = s[i]
        if c >= 48 and c <= 57:
            if digits:
                continue
            digits = True
            c = 48
        else:
            digits = False
        h = (h ^ c) * 0x100000001B3ULL
    return h


cdef uint8_t _classify(ClassMemo *memo, const unsigned char *cls, size_t ncls, const unsigned char *ident,
                       size_t nid) noexcept nogil:
    """:func:`_classify_words` of ``class`` and ``id`` together, memoised by shape in ``memo``
    (the extractor's own: extractors in other threads never share it)."""
    cdef uint64_t key = mix64(_shape_hash(ident, nid, _shape_hash(cls, ncls, 0xCBF29CE484222325ULL) ^ 0x2F)) | 1
    cdef uint32_t slot = <uint32_t>(key & (MEMO_SLOTS - 1))
    cdef uint8_t kind, a, b
    while memo.keys[slot] != 0:
        if memo.keys[slot] == key:
            return memo.vals[slot]
        slot = (slot + 1) & (MEMO_SLOTS - 1)
    a = _classify_words(memo, cls, ncls)
    b = _classify_words(memo, ident, nid)
    kind = _strongest(a & 7, b & 7) | ((a | b) & C_TITLED)
    if memo.used > MEMO_SLOTS * 3 // 4:
        memset(memo.keys, 0, sizeof(memo.keys))
        memo.used = 0
        slot = <uint32_t>(key & (MEMO_SLOTS - 1))
    memo.keys[slot] = key
    memo.vals[slot] = kind
    memo.used += 1
    return kind


cdef inline uint8_t _strongest(uint8_t a, uint8_t b) noexcept nogil:
    if a == C_STRONG or b == C_STRONG:
        return C_STRONG
    if a == C_LAYOUT or b == C_LAYOUT:
        return C_LAYOUT
    if a == C_CONTENT or b == C_CONTENT:
        return C_CONTENT
    return C_NONE


cdef inline bint _eq(const unsigned char *a, const char *b) noexcept nogil:
    return strlen(<const char *>a) == strlen(b) and memcmp(a, b, strlen(b)) == 0


cdef inline bint _ieq(const unsigned char *a, size_t n, const char *b) noexcept nogil:
    """ASCII case-insensitive equality of ``a[:n]`` (surrounding spaces ignored) with ``b``."""
    cdef size_t m = strlen(b), i
    while n and (a[0] == 32 or a[0] == 9 or a[0] == 10 or a[0] == 13):
        a += 1
        n -= 1
    while n and (a[n - 1] == 32 or a[n - 1] == 9 or a[n - 1] == 10 or a[n - 1] == 13):
        n -= 1
    if n != m:
        return False
    for i in range(n):
        if (a[i] | 32) != (<unsigned char>b[i] | 32):
            return False
    return True


#: Link relations (``rel``; the IANA registry) that place the target beside or above the page in
#: a collection: a link with one of them is navigation, whatever its text. The first three
#: name the page's series; a ``<link>`` in the head declaring them names the body's pager links.
cdef tuple _SERIES_RELS = (b"next", b"prev", b"previous")
cdef tuple _NAVIGATION_RELS = (b"first", b"last", b"up", b"start", b"contents", b"index")
_fill_words(&_series_rels, _SERIES_RELS)
_fill_words(&_navigation_rels, _NAVIGATION_RELS)
cdef enum:
    REL_SERIES = 1
    REL_NAVIGATION = 2


cdef int _rel_navigation(const unsigned char *v, size_t n) noexcept nogil:
    """``REL_SERIES`` and/or ``REL_NAVIGATION`` for the tokens of a ``rel`` value, else 0."""
    cdef size_t start = 0, end
    cdef int out = 0
    while start < n:
        while start < n and _is_space(v[start]):
            start += 1
        end = start
        while end < n and not _is_space(v[end]):
            end += 1
        if end > start:
            if _is_one_of(v + start, end - start, &_series_rels):
                out |= REL_SERIES
            if _is_one_of(v + start, end - start, &_navigation_rels):
                out |= REL_NAVIGATION
        start = end
    return out


cdef bint _is_one_of(const unsigned char *v, size_t n, const Words *names) noexcept nogil:
    """Whether ``v[:n]`` equals one of ``names``, ASCII case ignored."""
    cdef int i
    for i in range(names.n):
        if _ieq(v, n, names.items[i]):
            return True
    return False


cdef bint _role_is_chrome(const unsigned char *v, size_t n) noexcept nogil:
    return _is_one_of(v, n, &_chrome_roles)


cdef bint _style_hides(const unsigned char *v, size_t n) noexcept nogil:
    """``display:none`` or ``visibility:hidden`` in an inline style (spaces and case ignored)."""
    cdef unsigned char squeezed[256]
    cdef size_t m = 0, i
    cdef unsigned char c
    for i in range(n):
        c = v[i]
        if c == 32 or c == 9 or c == 10 or c == 13:
            continue
        if m < 256:
            squeezed[m] = c | 32 if (c >= 65 and c <= 90) else c
            m += 1
    for i in range(m):
        if m - i >= 12 and memcmp(squeezed + i, b"display:none", 12) == 0:
            return True
        if m - i >= 17 and memcmp(squeezed + i, b"visibility:hidden", 17) == 0:
            return True
    return False


cdef inline const unsigned char *_attr_value(tree.xmlAttr *a, size_t *n) noexcept nogil:
    """The value of a single-text-node attribute (``""`` for none or for an unusual layout)."""
    cdef tree.xmlNode *child = a.children
    if child == NULL or child.type != tree.XML_TEXT_NODE or child.content == NULL:
        n[0] = 0
        return <const unsigned char *>b""
    n[0] = strlen(<const char *>child.content)
    return <const unsigned char *>child.content


# the attributes the walk reads
cdef enum:
    A_CLASS = 1
    A_ID = 2
    A_ROLE = 3
    A_HIDDEN = 4
    A_HREF = 5
    A_REL = 6
    A_STYLE = 7
    A_ARIA_HIDDEN = 8


cdef inline void _clear_attrs(ElementAttrs *at) noexcept nogil:
    at.cls = at.ident = at.href = <const unsigned char *>b""
    at.ncls = at.nid = at.nhref = 0
    at.rel = 0
    at.hidden = at.has_href = at.role_main = at.role_chrome = False


cdef inline int _attr_which(const unsigned char *name, uint16_t kind) noexcept nogil:
    """Which ``A_*`` attribute ``name`` is on an element of ``kind`` (0: one the walk ignores)."""
    cdef unsigned char c = name[0]
    if c == 99:
        return A_CLASS if _eq(name, "class") else 0
    if c == 105:
        return A_ID if _eq(name, "id") else 0
    if c == 114:
        if _eq(name, "role"):
            return A_ROLE
        return A_REL if kind & K_A and _eq(name, "rel") else 0
    if c == 104:
        if _eq(name, "hidden"):
            return A_HIDDEN
        return A_HREF if _eq(name, "href") else 0
    if c == 115:
        return A_STYLE if _eq(name, "style") else 0
    if c == 97:
        return A_ARIA_HIDDEN if _eq(name, "aria-hidden") else 0
    return 0


cdef void _read_attr(int which, const unsigned char *v, size_t n, ElementAttrs *at) noexcept nogil:
    """Record what the attribute ``which`` with value ``v[:n]`` says about its element."""
    if which == A_CLASS:
        at.cls, at.ncls = v, n
    elif which == A_ID:
        at.ident, at.nid = v, n
    elif which == A_ROLE:
        if _ieq(v, n, "main"):
            at.role_main = True
        elif _role_is_chrome(v, n):
            at.role_chrome = True
    elif which == A_HIDDEN:
        at.hidden = True
    elif which == A_HREF:
        at.has_href = True
        at.href, at.nhref = v, n
    elif which == A_REL:
        at.rel = _rel_navigation(v, n)
    elif which == A_STYLE:
        if _style_hides(v, n):
            at.hidden = True
    elif which == A_ARIA_HIDDEN:
        if _ieq(v, n, "true"):
            at.hidden = True


cdef inline int32_t _count_chars(const unsigned char *p, size_t n) noexcept nogil:
    """Visible characters of UTF-8 text: code points other than ASCII whitespace (9-13, 32).

    Eight bytes at a time (SWAR, bit 7 of each byte holding its answer): a byte counts when it
    starts a multi-byte character (bits 7 and 6 set) or is ASCII other than whitespace. ``x | H``
    keeps every per-byte subtraction from borrowing across bytes.
    """
    cdef int32_t count = 0
    cdef size_t i = 0
    cdef unsigned char c
    cdef uint64_t v, x, z, space, ws, lead
    cdef uint64_t L = 0x0101010101010101ULL, H = 0x8080808080808080ULL
    while i + 8 <= n:
        v = nd_load64(p + i)
        x = v & ~H
        z = x ^ (0x20 * L)
        space = ~((z + 0x7F * L) | z) & H                              # byte == 32
        ws = ((x | H) - 0x09 * L) & ~((x | H) - 0x0E * L) & H          # 9 <= byte <= 13
        lead = v & (v << 1) & H                                        # 11xxxxxx
        # one bit per byte at bit 7: shifted to bit 0, the multiply sums the bytes into the top one
        count += <int32_t>((((lead | (~v & H & ~(space | ws))) >> 7) * L) >> 56)
        i += 8
    while i < n:
        c = p[i]
        if (c & 0xC0) != 0x80 and c != 32 and c != 10 and c != 9 and c != 13 and c != 12 and c != 11:
            count += 1
        i += 1
    return count


def count_chars(bytes data):
    """:func:`_count_chars` of ``data`` (for tests)."""
    return _count_chars(<const unsigned char *>PyBytes_AS_STRING(data), PyBytes_GET_SIZE(data))


cdef inline double _cpu_now() noexcept nogil:
    """CPU seconds used by the calling thread (``time.thread_time()``): unlike a wall clock,
    it does not run while other processes hold the cores."""
    cdef timespec ts
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts)
    return ts.tv_sec + ts.tv_nsec * 1e-9


def thread_time():
    """The clock of the CPU deadline of :meth:`Extractor.extract` (CPU seconds of this thread,
    as ``time.thread_time()``)."""
    return _cpu_now()


cdef inline int64_t _mass(Elem *e) noexcept nogil:
    """Text outside chrome, link text weighted 1/LINK_WEIGHT_DIV (scaled by LINK_WEIGHT_DIV)."""
    return <int64_t>(e.content - e.clink) * LINK_WEIGHT_DIV + e.clink


cdef inline bint _listing(Elem *e) noexcept nogil:
    """Two or more <article> descendants holding half the text: a list of items, not one text."""
    return e.art_n >= 2 and <int64_t>e.art_text * 2 >= e.text


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

    # -- the walk --------------------------------------------------------------------------------
    cdef int32_t _new_elem(self) noexcept nogil:
        """A zeroed element at the end of the array; -1 when out of memory."""
        cdef Elem *grown
        cdef int32_t cap
        if self.n_elems >= self.cap_elems:
            cap = self.cap_elems * 2 if self.cap_elems else 4096
            grown = <Elem *>realloc(self.elems, cap * sizeof(Elem))
            if grown == NULL:
                return -1
            self.elems = grown
            self.cap_elems = cap
        memset(&self.elems[self.n_elems], 0, sizeof(Elem))
        self.n_elems += 1
        return self.n_elems - 1

    cdef void _read_head(self, tree.xmlNode *head) noexcept nogil:
        """The first <title> text and the canonical link of a <head>."""
        cdef tree.xmlNode *node = head.children
        while node != NULL:
            if node.type == tree.XML_ELEMENT_NODE and node.name != NULL:
                self._read_head_element(node)
            node = node.next

    cdef void _read_head_element(self, tree.xmlNode *node) noexcept nogil:
        """Keep a <title>'s text or a canonical <link>'s href, when none is kept yet, and the
        hrefs of ``<link rel=next/prev>``.

        Also called for these elements met in the body: an HTML parser moves the document's
        <title> and links into <body> when the head holds something it does not allow there,
        and they are still the document's (titles of inline SVG are never reached: the walk
        does not enter <svg>)."""
        cdef tree.xmlNode *child
        cdef tree.xmlAttr *a
        cdef const unsigned char *rel
        cdef const unsigned char *href
        cdef size_t nrel, nhref
        if _eq(node.name, "title") and self.title.len == 0:
            child = node.children
            while child != NULL:
                if child.type == tree.XML_TEXT_NODE and child.content != NULL:
                    bytebuf_append(&self.title, child.content, strlen(<const char *>child.content))
                child = child.next
        elif _eq(node.name, "link"):
            rel = href = NULL
            nrel = nhref = 0
            a = node.properties
            while a != NULL:
                if _eq(a.name, "rel"):
                    rel = _attr_value(a, &nrel)
                elif _eq(a.name, "href"):
                    href = _attr_value(a, &nhref)
                a = a.next
            self._read_link(rel, nrel, href, nhref)

    cdef void _read_link(self, const unsigned char *rel, size_t nrel, const unsigned char *href, size_t nhref) noexcept nogil:
        """Keep the href of a canonical ``<link>`` (the first one) and of ``<link rel=next/prev>``
        (``rel``/``href`` NULL: the attribute is absent)."""
        if rel == NULL or href == NULL:
            return
        if _ieq(rel, nrel, "canonical") and self.canonical.len == 0:
            bytebuf_append(&self.canonical, href, nhref)
        if _rel_navigation(rel, nrel) & REL_SERIES and self.n_series < 8:
            self.series[self.n_series] = hash_bytes(href, nhref, 0x5E7)
            self.n_series += 1

    cdef bint _in_series(self, const unsigned char *href, size_t n) noexcept nogil:
        """Whether ``href`` is the page's declared next or previous document."""
        cdef uint64_t h
        cdef int i
        if self.n_series == 0:
            return False
        h = hash_bytes(href, n, 0x5E7)
        for i in range(self.n_series):
            if self.series[i] == h:
                return True
        return False

    cdef int budget(self) noexcept nogil:
        """``EXTRACT_OK`` while the page is within its budget, else why not: ``EXTRACT_OVERWORK``
        (its work counted so far is past ``max_work``) or ``EXTRACT_TIMEOUT`` (the calling
        thread's CPU clock is past ``cpu_deadline``)."""
        if self.max_work > 0 and self.work > self.max_work:
            return EXTRACT_OVERWORK
        if self.cpu_deadline > 0 and _cpu_now() > self.cpu_deadline:
            return EXTRACT_TIMEOUT
        return EXTRACT_OK

    cdef int _walk_budget(self) noexcept nogil:
        """:meth:`budget` with the walk's work so far: its visible elements and the bytes of their
        text, the same whether the walk follows a tree or the parser's events (hidden elements,
        never entered by the one and skipped by the other, cost none)."""
        self.work = <long long>self.n_elems * WORK_ELEMENT + <long long>self.buf.len
        return self.budget()

    cdef int _walk(self, tree.xmlNode *top) except -1 nogil:
        """Number the visible elements under ``top`` and fill their counts (see :class:`Elem`).

        Iterative, in document order. Hidden and dropped elements are never entered, so the parent
        of every visited node is the open element ``cur``. Stops once past the budget.
        """
        cdef tree.xmlNode *node = top
        cdef tree.xmlAttr *a
        cdef int32_t cur = -1, idx
        cdef uint16_t kind
        cdef int which
        cdef ElementAttrs at
        cdef const unsigned char *v
        cdef size_t n
        cdef bint hidden
        cdef long steps = 0
        cdef int status
        while True:
            steps += 1
            if steps % DEADLINE_EVERY == 0:
                status = self._walk_budget()
                if status != EXTRACT_OK:
                    return status
            if node.type == tree.XML_ELEMENT_NODE and node.name != NULL:
                kind = _tag_kind(node.name)
                hidden = (kind & K_DROP) != 0
                if kind & K_TITLE or (hidden and node.name[0] == 108):  # <title>, <link>
                    self._read_head_element(node)
                elif hidden and cur >= 0 and node.name[0] == 115 and _eq(node.name, "script"):
                    self.elems[cur].flags |= F_SCRIPTED
                if not hidden:
                    _clear_attrs(&at)
                    a = node.properties
                    while a != NULL:
                        which = _attr_which(a.name, kind)
                        if which:
                            v = _attr_value(a, &n)
                            _read_attr(which, v, n, &at)
                        a = a.next
                    hidden = at.hidden
                if not hidden:
                    idx = self._open(cur, kind, &at)
                    if idx < 0:
                        return EXTRACT_NOMEM
                    cur = idx
                    if node.children != NULL:
                        node = node.children
                        continue
                    self._close(cur)  # a leaf element ends at once
                    cur = self.elems[cur].parent
            elif (node.type == tree.XML_TEXT_NODE or node.type == tree.XML_CDATA_SECTION_NODE) and cur >= 0:
                if node.content != NULL:
                    n = strlen(<const char *>node.content)
                    if n and self._add_text(cur, node.content, n) < 0:
                        return EXTRACT_NOMEM
            # the node is done: on to the next one in document order, closing finished elements
            if node == top:
                return EXTRACT_OK
            while node.next == NULL:
                node = node.parent
                self._close(cur)
                cur = self.elems[cur].parent
                if node == top or node == NULL:
                    return EXTRACT_OK
            node = node.next

    cdef int32_t _open(self, int32_t cur, uint16_t kind, ElementAttrs *at) noexcept nogil:
        """Number a visible element opening inside ``cur`` (-1: the walk's root) and set its
        flags; returns its index, -1 when out of memory."""
        cdef int32_t idx = self._new_elem()
        cdef Elem *e
        cdef Elem *p
        cdef uint32_t flags, inherited = 0
        cdef uint8_t klass
        if idx < 0:
            return -1
        e = &self.elems[idx]
        e.parent = cur
        e.kind = kind
        if cur >= 0:
            p = &self.elems[cur]
            inherited = p.flags & (F_IN_SECTION | F_IN_ARTICLE | F_LINK)
            if p.kind & K_SECTIONING or p.flags & F_SEM_MAIN:
                inherited |= F_IN_SECTION
            if p.kind & K_ARTICLE:
                inherited |= F_IN_ARTICLE
        flags = inherited
        if kind & K_SEMCHROME or at.role_chrome:
            flags |= F_STRONG | F_SEMANTIC
        elif kind & K_HF:
            if not (inherited & F_IN_SECTION):
                flags |= F_STRONG | F_PAGE_HF
        elif at.ncls or at.nid:
            klass = _classify(self.memo, at.cls, at.ncls, at.ident, at.nid)
            if klass & 7 == C_STRONG:
                flags |= F_STRONG
            elif klass & 7 == C_LAYOUT and not (kind & (K_H1 | K_H23)):
                # a layout word on a heading says what the heading is (a "page-header"
                # is the page's heading): the tag makes it content, not a page region
                flags |= F_LAYOUT
            elif klass & 7 == C_CONTENT:
                flags |= F_CONTENT
            if klass & C_TITLED:
                flags |= F_TITLED
        if kind & K_MAIN or at.role_main:
            flags |= F_SEM_MAIN
        if kind & K_ARTICLE:
            flags |= F_SEM_ARTICLE
        if kind & K_A and at.has_href:
            flags |= F_LINK
            if at.rel or self._in_series(at.href, at.nhref):
                # a pager or a link up to the contents: navigation by its relation
                # (its own rel, or the head's <link rel=next/prev> to the same href)
                flags |= F_STRONG
        e.flags = flags
        e.tstart = <uint32_t>self.buf.len
        if not (kind & K_INLINE) and bytebuf_push(&self.buf, 32) < 0:
            return -1
        return idx

    cdef int _add_text(self, int32_t cur, const unsigned char *s, size_t n) noexcept nogil:
        """Append text found inside the open element ``cur``; -1 when out of memory."""
        cdef int32_t chars
        cdef Elem *e
        if bytebuf_append(&self.buf, s, n) < 0:
            return -1
        chars = _count_chars(s, n)
        e = &self.elems[cur]
        e.text += chars
        e.content += chars
        if e.flags & F_LINK:
            e.link += chars
            e.clink += chars
        return 0

    cdef void _close(self, int32_t i) noexcept nogil:
        cdef Elem *e = &self.elems[i]
        cdef Elem *p
        cdef uint32_t flags = e.flags
        if not (e.kind & K_INLINE):
            bytebuf_push(&self.buf, 32)
        e.tend = <uint32_t>self.buf.len
        e.end = self.n_elems
        if flags & (F_SEM_MAIN | F_SEM_ARTICLE | F_CONTENT) and e.text > e.marked:
            e.marked = e.text
        if flags & (F_STRONG | F_LAYOUT) and not (flags & F_SEMANTIC) and e.text > 0 and <int64_t>e.marked * 2 >= e.text:
            # a class name can be a wrapper's; an element's tag or role says what it is
            flags |= F_OVERRIDE
        if (flags & F_STRONG or (flags & F_LAYOUT and not (flags & F_IN_SECTION))) and not (flags & F_OVERRIDE):
            flags |= F_EXCLUDED
        e.flags = flags
        if e.parent < 0:
            return
        p = &self.elems[e.parent]
        p.text += e.text
        p.link += e.link
        if e.marked > p.marked:
            p.marked = e.marked
        if not (flags & F_EXCLUDED):
            p.content += e.content
            p.clink += e.clink
        if flags & F_SEM_ARTICLE:
            p.art_n += 1
            p.art_text += e.text
        else:
            p.art_n += e.art_n
            p.art_text += e.art_text

    # -- decisions over the arrays -----------------------------------------------------------------
    cdef int32_t _find_anchors(self) except -2:
        """The page's title headings: the headings outside chrome that best match <title> (at
        least 60% of their words are words of the title). An ``<h1>`` is the document's heading
        by HTML semantics, so it ranks before ``<h2>``/``<h3>``, which rank before title-classed
        elements; then most words in common. Every heading of the best rank is kept (a page may
        repeat its title, e.g. in a bar for small screens) in ``self.anchors``; returns the first.
        A framing page's label (module docstring) gives way to the document's heading and is
        kept in ``self.frame``.

        Linear in the page: a heading is a line, so an element longer than ``ANCHOR_CHARS`` is
        not read as one, the candidates' text is read at most ``ANCHOR_READS`` times over the
        page's text however they nest, and their words are counted against the title's in C
        tables, no Python object per word."""
        cdef int32_t i
        cdef Elem *e
        cdef size_t k, distinct, hit
        cdef uint64_t h
        cdef tuple rank, best_rank = (0, 0)
        cdef list framed = []
        cdef set words, inner_words
        cdef set anchor_set
        cdef Py_ssize_t a, b
        cdef int32_t outer, inner, only
        cdef size_t allowance = ANCHOR_READS * self.buf.len + ANCHOR_BYTES
        self.anchors = []
        self.frame = -1
        self.work += self.title.len
        self.word_hashes.len = 0
        if _word_hashes(self.title.data, self.title.len, &self.word_hashes) < 0:
            raise MemoryError()
        if self.word_hashes.len == 0:
            return -1
        if (
            _wt_reserve(&self.title_words, self.word_hashes.len) < 0
            or _wt_reserve(&self.heading_words, ANCHOR_BYTES // 2 + 1) < 0
        ):
            raise MemoryError()
        _wt_clear(&self.title_words)
        for k in range(self.word_hashes.len):
            _wt_add(&self.title_words, self.word_hashes.data[k])
        self.work += self.n_elems
        for i in range(self.n_elems):
            e = &self.elems[i]
            # a <header> outside sections is chrome by position, but the heading it holds may
            # name the page (a copied article's header outside its <article>)
            if not (e.kind & (K_H1 | K_H23) or e.flags & F_TITLED) or e.flags & F_ANC_HARD:
                continue
            if e.flags & F_IN_PAGE_HF and not (e.kind & K_H1):
                continue  # a page header's menus and kickers are not the page's heading
            if e.text > ANCHOR_CHARS or e.tend - e.tstart > ANCHOR_BYTES:
                continue  # a passage, not a heading
            if e.tend - e.tstart > allowance:
                break  # the headings' text read ANCHOR_READS times over
            allowance -= e.tend - e.tstart
            self.work += e.tend - e.tstart
            self.word_hashes.len = 0
            if _word_hashes(self.buf.data + e.tstart, e.tend - e.tstart, &self.word_hashes) < 0:
                raise MemoryError()
            # distinct words first in the buffer, then how many of them the title has
            _wt_clear(&self.heading_words)
            distinct = hit = 0
            for k in range(self.word_hashes.len):
                h = self.word_hashes.data[k]
                if _wt_add(&self.heading_words, h):
                    self.word_hashes.data[distinct] = h
                    distinct += 1
                    hit += _wt_has(&self.title_words, h)
            if not distinct or hit * 5 < 3 * distinct:
                continue
            if e.kind & K_H1 and len(framed) < MAX_FRAMED:
                framed.append((i, {self.word_hashes.data[k] for k in range(distinct)}))
            rank = (3 if e.kind & K_H1 else 2 if e.kind & K_H23 else 1, hit)
            if rank > best_rank:
                best_rank = rank
                self.anchors = [i]
            elif rank == best_rank:
                self.anchors.append(i)
        # A page that frames a copied document (an archive, a wiki, an aggregator) heads it
        # twice: its own <h1> is the document's heading with the frame's words added ("Site:
        # Document"), and the document keeps its heading below. The later heading, whose words
        # the earlier one holds and more, is the document's: its branch is the content. (The
        # pair is looked for among the first MAX_FRAMED title-matching <h1>s: the comparison
        # is pairwise.)
        anchor_set = set(self.anchors)
        self.work += len(framed) * len(framed)
        for a in range(len(framed)):
            outer, words = framed[a]
            if outer not in anchor_set:
                continue
            for b in range(a + 1, len(framed)):
                inner, inner_words = framed[b]
                if inner >= self.elems[outer].end and inner_words < words:
                    self.anchors = [inner]
                    self.frame = outer
                    return inner
        if not self.anchors:
            # No heading matches <title> (a headline written apart from the page's SEO title):
            # a page's one <h1> outside chrome is still its document's heading (HTML semantics)
            only = -1
            for i in range(self.n_elems):
                e = &self.elems[i]
                if e.kind & K_H1 and not (e.flags & (F_ANC_HARD | F_IN_PAGE_HF)) and e.tend > e.tstart:
                    if only >= 0:
                        return -1
                    only = i
            if only >= 0:
                self.anchors = [only]
        return self.anchors[0] if self.anchors else -1

    cdef int _mark_anchors(self) except -1:
        """Flag the title headings (``F_ANCHOR``) and fill, bottom-up in one pass, what the
        decisions ask of a subtree: the most text of a title heading in it (``sub_anchor``) and,
        for a table part, the most mass of a cell it lays out (``cell_mass``: cells reached through
        table parts only, not inside other cells). Each question is then answered in constant
        time, however many headings or cells the page has."""
        cdef int32_t i, p, n = self.n_elems, cap
        cdef Elem *elems = self.elems
        cdef int32_t *grown_anchor
        cdef int64_t *grown_mass
        cdef int64_t m
        if n > self.cap_aux:
            cap = self.cap_elems
            grown_anchor = <int32_t *>realloc(self.sub_anchor, cap * sizeof(int32_t))
            if grown_anchor == NULL:
                raise MemoryError()
            self.sub_anchor = grown_anchor
            grown_mass = <int64_t *>realloc(self.cell_mass, cap * sizeof(int64_t))
            if grown_mass == NULL:
                raise MemoryError()
            self.cell_mass = grown_mass
            self.cap_aux = cap
        for i in self.anchors:
            elems[i].flags |= F_ANCHOR
        for i in range(n):
            self.sub_anchor[i] = elems[i].text if elems[i].flags & F_ANCHOR else -1
            self.cell_mass[i] = -1
        # children come after their parent: in reverse order each subtree is done before its parent
        for i in range(n - 1, -1, -1):
            p = elems[i].parent
            if p < 0:
                continue
            if self.sub_anchor[i] > self.sub_anchor[p]:
                self.sub_anchor[p] = self.sub_anchor[i]
            if elems[p].kind & K_TABLEPART:
                if elems[i].kind & K_CELL:
                    m = _mass(&elems[i])
                elif elems[i].kind & K_TABLEPART:
                    m = self.cell_mass[i]
                else:
                    m = -1
                if m > self.cell_mass[p]:
                    self.cell_mass[p] = m
        self.work += 2 * <long long>n
        return 0

    cdef bint _holds_anchor(self, int32_t i) noexcept:
        return self.sub_anchor[i] >= 0

    cdef bint _dominated(self, int32_t t) noexcept:
        """Whether a cell of table part ``t`` holds ALPHA of its mass (a layout table)."""
        return self.cell_mass[t] >= 0 and self.cell_mass[t] * 100 >= ALPHA_PCT * _mass(&self.elems[t])

    cdef bint _only_anchor(self, int32_t b) noexcept:
        """Whether branch ``b`` holds a title heading and little else (under MIN_LIST_CHARS).

        Every heading that ties as the title heading counts (a page often repeats its title in
        a top bar and above its text): the branch of any of them alone is not the content.
        """
        return self.sub_anchor[b] >= 0 and self.elems[b].text - self.sub_anchor[b] < MIN_LIST_CHARS

    cdef int32_t _choose(self) noexcept:
        cdef Elem *elems = self.elems
        cdef int32_t i, best = -1, node, child, holder, end, start
        cdef bint headed
        cdef int64_t total = elems[0].text, best_text = 0, sum_text = 0, m, cm, best_mass, own
        cdef Elem *e
        self.work += 2 * <long long>self.n_elems  # the passes of 1 and 2; 3 counts its visits
        # 1. <main>
        for i in range(self.n_elems):
            e = &elems[i]
            if e.flags & F_SEM_MAIN and not (e.flags & F_ANC_EXCL) and e.text > best_text:
                best, best_text = i, e.text
        if best >= 0 and best_text * 100 >= SEMANTIC_PCT * total:
            return best
        start = 0
        if best >= 0 and _mass(&elems[best]) * 100 >= MAIN_MASS_PCT * _mass(&elems[0]):
            start = best
        # 2. one dominant, non-nested <article> that is not a list of articles
        best, best_text = -1, 0
        for i in range(self.n_elems):
            e = &elems[i]
            if e.flags & F_SEM_ARTICLE and not (e.flags & (F_ANC_EXCL | F_IN_ARTICLE)):
                sum_text += e.text
                if e.text > best_text:
                    best, best_text = i, e.text
        if (
            best >= 0
            and best_text * 100 >= SEMANTIC_PCT * total
            and sum_text * 2 <= 3 * best_text
            and not _listing(&elems[best])
        ):
            return best
        # 3. descent
        node = start
        while True:
            e = &elems[node]
            m = _mass(e)
            end = e.end
            best = -1
            best_mass = -1
            holder = -1
            headed = False
            own = m  # the node's own text: its mass less its children's
            child = node + 1
            while child < end:
                self.work += 1
                cm = _mass(&elems[child])
                own -= cm
                if self.frame >= 0 and child <= self.frame < elems[child].end and (
                    elems[child].text - elems[self.frame].text < MIN_LIST_CHARS
                ):
                    # the frame's label of the document it holds is not part of the document
                    m -= cm
                    child = elems[child].end
                    continue
                if not (elems[child].flags & F_EXCLUDED) and cm > best_mass:
                    best, best_mass = child, cm
                if elems[child].kind & (K_H1 | K_H23) and cm > 0:
                    headed = True
                if holder < 0 and self._holds_anchor(child):
                    holder = child
                child = elems[child].end
            if best < 0 or m <= 0 or own >= OWN_TEXT_CHARS * LINK_WEIGHT_DIV:
                # text written straight into the node, outside any child element, is the node's
                # own prose (chrome comes in elements of its own): a child beside it is a part of
                # the document, not all of it
                break
            if holder >= 0 and not self._holds_anchor(best) and self._only_anchor(holder):
                # a bar holding only the title heading, beside the text: the heading is prepended
                # to the text's container wherever that is, so the descent goes on as if the
                # bar were not there
                m -= _mass(&elems[holder])
                holder = -1
            if holder >= 0 and self._holds_anchor(best):
                # the heaviest child holds the title heading: follow it while it holds enough,
                # and while it holds more than the heading (the main content is the heading's
                # text: a branch of the heading alone leaves the text beside it behind)
                if elems[best].flags & F_ANCHOR or best_mass * 100 < ANCHOR_PCT * m or self._only_anchor(best):
                    break
            elif holder >= 0:
                # the title heading is beside the heaviest child: the heading's branch is taken
                # when it holds text of its own beside a list of other items, or a good share
                # of the text; else the node keeps both. A <header> is never taken: it
                # introduces its section (the heading, a kicker, a dateline), the section is the
                # document
                cm = _mass(&elems[holder])
                if elems[holder].flags & F_ANCHOR or elems[holder].kind & K_HF or cm * 100 < (
                    LISTING_ANCHOR_PCT if _listing(&elems[best]) else ANCHOR_PCT
                ) * m:
                    break
                best = holder
            elif _listing(&elems[best]) or best_mass * 100 < ALPHA_PCT * m or headed:
                # a heading among the children makes the node a document of headed sections:
                # descending into one block would leave the others behind
                break
            if elems[best].kind & K_BLOCKSTOP:
                break  # a paragraph, list or heading is a part of the content, not its container
            if elems[best].kind & K_TABLEPART and not (self._dominated(best) or self._holds_anchor(best)):
                # a data table is content; a layout table (one dominant cell, or the cell of the
                # page's title heading: a data table does not hold the document's heading) is
                # descended
                break
            node = best
        return node

    cdef inline bint _in_table(self, int32_t j) noexcept:
        """Whether element ``j`` is a part of a table (a row group, a row, a cell), not a table:
        its parent is a table part (a table nested in a cell has a cell for parent)."""
        cdef int32_t parent = self.elems[j].parent
        return (
            self.elems[j].kind & (K_TABLEPART | K_CELL) != 0
            and parent >= 0
            and self.elems[parent].kind & K_TABLEPART != 0
        )

    cdef int _render(self, int32_t c, long max_chars) except -1:
        """Append the text of element ``c`` without chrome and link lists to ``self.out``."""
        cdef Elem *elems = self.elems
        cdef Elem *top = &elems[c]
        cdef Elem *e
        cdef int64_t total = top.text
        cdef bint link_page = total > 0 and <int64_t>top.link * 2 >= total
        cdef int32_t j = c + 1, nd = 0
        cdef bint drop
        cdef uint32_t *grown
        cdef uint32_t pos
        while j < top.end:
            self.work += 1
            e = &elems[j]
            drop = False
            if (
                e.flags & F_SEMANTIC
                and (<int64_t>e.link * 100 >= DENSE_PCT * e.text or <int64_t>e.text * 3 < 2 * total)
                and total - e.text >= LINE_CHARS
                and not self._holds_anchor(j)
            ):
                # chrome by markup (<nav>, <aside>, role="navigation"...) is a stronger signal than
                # a class name: it goes while it holds less than two thirds of the container (a
                # class name: half), and, when it is mostly links, however much it holds and
                # whatever its parts are named (two signals agree); the text beside it (at least
                # a line) is what the page says
                drop = True
            elif <int64_t>e.text * 2 < total and not (e.flags & F_OVERRIDE):
                if e.flags & F_STRONG and not (e.flags & F_PAGE_HF and self._holds_anchor(j)):
                    # a page header holding the title heading is the document's header
                    drop = True
                elif e.flags & F_LAYOUT and <int64_t>e.link * 100 >= LAYOUT_DENSE_PCT * e.text:
                    drop = True
                elif (
                    not (e.kind & K_INLINE)
                    and not self._in_table(j)
                    and e.text >= MIN_LIST_CHARS
                    and <int64_t>e.link * 100 >= DENSE_PCT * e.text
                    and not link_page
                ):
                    # a link list; the rows and cells of a table are records of one table, which
                    # is a link list or not as a whole (a member list links each entry to its
                    # definition: which rows happen to be mostly links says nothing)
                    drop = True
                elif (
                    not (e.kind & (K_INLINE | K_BLOCKSTOP | K_TABLEPART | K_CELL))
                    and MIN_LIST_CHARS <= e.text < LINE_CHARS
                    and <int64_t>e.link * 100 >= LINK_LINE_PCT * e.text
                    and not link_page
                    and not self._holds_anchor(j)
                ):
                    # a one-line layout block (not a paragraph, list item or cell) of mostly link
                    # text is a navigation line: breadcrumbs, category or tag links, previous/next.
                    # Prose links a few of its words, not most of them. A line holding the title
                    # heading is the page's heading (a linked path names the documented item).
                    drop = True
                elif (
                    e.flags & F_SCRIPTED
                    and not (e.kind & (K_INLINE | K_BLOCKSTOP))
                    and e.text < MIN_LIST_CHARS
                ):
                    # a layout block (not a paragraph, list or heading) whose script fills it in
                    # the browser (an ad slot, a widget): its few words are a label
                    # ("Advertisement", "Loading...")
                    drop = True
            if drop:
                if 2 * nd + 2 > self.cap_drops:
                    self.cap_drops = self.cap_drops * 2 if self.cap_drops else 256
                    grown = <uint32_t *>realloc(self.drops, self.cap_drops * sizeof(uint32_t))
                    if grown == NULL:
                        raise MemoryError()
                    self.drops = grown
                self.drops[2 * nd] = e.tstart
                self.drops[2 * nd + 1] = e.tend
                nd += 1
                j = e.end
            else:
                j += 1
        pos = top.tstart
        self.work += top.tend - top.tstart  # the bytes folded (at most)
        for j in range(nd):
            _append_folded(&self.out, self.buf.data + pos, self.drops[2 * j] - pos)
            if self.out.len and self.out.data[self.out.len - 1] != 32:
                bytebuf_push(&self.out, 32)
            pos = self.drops[2 * j + 1]
        _append_folded(&self.out, self.buf.data + pos, top.tend - pos)
        return 0

    cdef void _reset(self) noexcept:
        self.n_elems = 0
        self.work = 0
        self.buf.len = self.out.len = self.heading.len = self.title.len = self.canonical.len = 0
        self.anchor = -1
        self.anchors = []
        self.frame = -1
        self.container = -1
        self.n_series = 0

    cdef int run(self, tree.xmlNode *root, long max_chars) except -1:
        """Extract the main text of the tree at ``root`` into ``self.out`` (UTF-8, whitespace
        folded, at most ``max_chars`` characters), with ``self.heading``, ``self.title`` and
        ``self.canonical``, within the budget set in ``max_work`` and ``cpu_deadline``. Returns
        an ``EXTRACT_*`` outcome.

        The walk over the tree, most of the pass, runs without the GIL: another thread may run
        Python meanwhile (the tree must not change until this returns)."""
        cdef int status
        self._reset()
        with nogil:
            status = self.walk_tree(root)
            if status == EXTRACT_OK:
                status = self._walk_budget()
        if status != EXTRACT_OK:
            return status
        return self._decide(max_chars)

    cdef int walk_tree(self, tree.xmlNode *root) except -1 nogil:
        """The walk of :meth:`run`: the elements and counts of the tree at ``root`` (its
        <head>'s title and links, its <body>'s elements); an ``EXTRACT_*`` outcome."""
        cdef tree.xmlNode *body = NULL
        cdef tree.xmlNode *node
        if root == NULL:
            return EXTRACT_EMPTY
        if root.type == tree.XML_DOCUMENT_NODE or root.type == tree.XML_HTML_DOCUMENT_NODE:
            root = root.children
            while root != NULL and root.type != tree.XML_ELEMENT_NODE:
                root = root.next
            if root == NULL:
                return EXTRACT_EMPTY
        if _tag_kind(root.name) & K_BODY:
            body = root
        else:
            node = root.children
            while node != NULL:
                if node.type == tree.XML_ELEMENT_NODE and node.name != NULL:
                    if _tag_kind(node.name) & K_HEAD:
                        self._read_head(node)
                    elif _tag_kind(node.name) & K_BODY and body == NULL:
                        body = node
                node = node.next
        if body == NULL:
            body = root
        return self._walk(body)

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
        cdef _ParserCtxt *ctxt
        cdef const _XmlError *error
        cdef void *doc
        cdef bint cut
        cdef int status
        self._reset()
        if _html_new_ctxt == NULL or n > <size_t>0x7FFFFFFF:
            return EXTRACT_FALLBACK
        if self.parser == NULL:
            self.parser = _html_new_ctxt(&_EVENTS, <void *>self)
            if self.parser == NULL:
                return EXTRACT_FALLBACK
        ctxt = <_ParserCtxt *>self.parser
        self.ev_cur = -1
        self.ev_depth = self.ev_skip = 0
        self.ev_region = REGION_NONE
        self.ev_body = False
        self.ev_roots = 0
        self.ev_status = EXTRACT_OK
        self.ev_title = False
        self.ev_steps = 0
        with nogil:
            doc = _html_read_memory(ctxt, <const char *>data, <int>n, NULL, "UTF-8", _PARSE_OPTIONS)
            if doc != NULL:  # (no handler builds one)
                _xml_free_doc(doc)
        error = _xml_last_error(ctxt)
        cut = error != NULL and error.code == XML_ERR_RESOURCE_LIMIT
        self.ev_documents += 1
        if self.ev_status != EXTRACT_OK or cut or self.ev_documents >= PARSER_DOCUMENTS:
            # a stopped parser starts the next document afresh; and it interns every tag and
            # attribute name it meets, for as long as it lives: a fresh one now and then bounds
            # that table whatever names pages invent
            _html_free_ctxt(ctxt)
            self.parser = NULL
            self.ev_documents = 0
        if self.ev_status != EXTRACT_OK and self.ev_status != EV_DONE:
            return self.ev_status
        if cut or not self.ev_body:
            return EXTRACT_FALLBACK
        status = self._walk_budget()
        if status != EXTRACT_OK:
            return status
        return self._decide(max_chars)

    cdef int _decide(self, long max_chars) except -1:
        """Everything after the walk: choose the container and render it (``run``). Each step
        is linear in the page and counts its work; the budget is looked at between steps."""
        cdef int i
        cdef Elem *e
        cdef int32_t h1 = -1, first_heading = -1, first_h1 = -1, first_titled = -1
        cdef uint32_t above
        cdef int status
        if self.n_elems == 0 or self.elems[0].text == 0:
            return EXTRACT_EMPTY
        self.work += self.n_elems
        # ancestors' exclusion, top-down (a parent always precedes its children). HTML allows
        # no <main> inside header, footer, nav or aside: one found there was put there by a
        # parser recovering unclosed tags, so a <main> starts afresh, whatever holds it
        for i in range(self.n_elems):
            e = &self.elems[i]
            above = self.elems[e.parent].flags if e.parent >= 0 and not (e.flags & F_SEM_MAIN) else 0
            if e.flags & F_EXCLUDED or above & F_ANC_EXCL:
                e.flags |= F_ANC_EXCL
            if (e.flags & F_EXCLUDED and not (e.flags & F_PAGE_HF)) or above & F_ANC_HARD:
                e.flags |= F_ANC_HARD
            if e.flags & F_PAGE_HF or above & F_IN_PAGE_HF:
                e.flags |= F_IN_PAGE_HF
            # a page header is chrome for the text, but the <h1> it holds is the page's name
            if (e.flags & F_STRONG and not (e.flags & (F_OVERRIDE | F_PAGE_HF))) or above & F_ANC_STRONG:
                e.flags |= F_ANC_STRONG
            # the page's identity heading: its first <h1> (HTML semantics: the heading, also
            # inside a title-classed wrapper that adds a category or a date), else its first
            # title-classed element; in a page-header region, not in strong chrome, and there
            # only an <h1> (a header's menus have title-classed items). A title-classed element
            # is a heading only when it is as short as one: a "title" word in a wrapper's class
            # (even <body>'s: "no-header-title") does not make the whole page its heading
            if e.flags & F_ANC_STRONG or not e.text:
                continue
            if first_h1 < 0 and e.kind & K_H1:
                first_h1 = i
            elif (
                first_titled < 0
                and e.flags & F_TITLED
                and not (e.flags & F_IN_PAGE_HF)
                and e.text <= HEADING_CHARS
            ):
                first_titled = i
        first_heading = first_h1 if first_h1 >= 0 else first_titled
        self.anchor = self._find_anchors()
        self._mark_anchors()
        status = self.budget()
        if status != EXTRACT_OK:
            return status
        self.container = self._choose()
        status = self.budget()
        if status != EXTRACT_OK:
            return status
        # the page heading: the first <h1> outside chrome, prepended when the container holds
        # none (a container with a top-level heading of its own is already named)
        for i in range(self.container, self.elems[self.container].end):
            self.work += 1
            if self.elems[i].kind & K_H1 and self.elems[i].text:
                h1 = -2
                break
        for i in range(self.n_elems if h1 == -1 else 0):
            self.work += 1
            e = &self.elems[i]
            if not (e.kind & K_H1) or not e.text:
                continue
            if e.flags & F_ANC_EXCL and not (e.flags & F_ANCHOR):
                continue
            h1 = i
            break
        if h1 >= 0:
            _append_folded(&self.out, self.buf.data + self.elems[h1].tstart, self.elems[h1].tend - self.elems[h1].tstart)
            bytebuf_push(&self.out, 32)
        elif h1 == -1 and self.title.len:
            _append_folded(&self.out, self.title.data, self.title.len)
            bytebuf_push(&self.out, 32)
        self._render(self.container, max_chars)
        if not _has_visible(self.out.data, self.out.len):
            self.out.len = 0
            self._render(0, max_chars)
        _trim_cap(&self.out, max_chars)
        if first_heading >= 0:
            e = &self.elems[first_heading]
            self.work += e.tend - e.tstart
            _append_folded(&self.heading, self.buf.data + e.tstart, e.tend - e.tstart)
            _trim_cap(&self.heading, 1000)
        status = self.budget()
        if status != EXTRACT_OK:
            return status
        return EXTRACT_OK if _has_visible(self.out.data, self.out.len) else EXTRACT_EMPTY

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
        self.cpu_deadline = _cpu_now() + timeout if timeout > 0 else 0.0

    @property
    def last_work(self):
        """Work units counted by the last page (so far, when it stopped past its budget)."""
        return self.work

    def _result(self, int status):
        names = {
            EXTRACT_OK: "ok", EXTRACT_EMPTY: "empty", EXTRACT_TIMEOUT: "timeout", EXTRACT_NOMEM: "nomem",
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


# -- the walk driven by the parser's events ------------------------------------------------------
# libxml2 is the one lxml carries (its module exports the library's functions): resolved at import,
# so the events come from the very parser that builds lxml's trees, whatever copy lxml links.
cdef extern from "libxml/parser.h":
    ctypedef struct _XmlError "xmlError":
        int code
    ctypedef struct _ParserCtxt "xmlParserCtxt":
        pass
    ctypedef void (*_StartFn "startElementSAXFunc")(void *, const_xmlChar *, const_xmlChar **) noexcept
    ctypedef void (*_EndFn "endElementSAXFunc")(void *, const_xmlChar *) noexcept
    ctypedef void (*_TextFn "charactersSAXFunc")(void *, const_xmlChar *, int) noexcept
    ctypedef void (*_CDataFn "cdataBlockSAXFunc")(void *, const_xmlChar *, int) noexcept
    ctypedef void (*_BlankFn "ignorableWhitespaceSAXFunc")(void *, const_xmlChar *, int) noexcept
    ctypedef void (*_ErrorFn "xmlStructuredErrorFunc")(void *, const _XmlError *) noexcept
    ctypedef struct _SAXHandler "xmlSAXHandler":
        _StartFn startElement
        _EndFn endElement
        _TextFn characters
        _CDataFn cdataBlock
        _BlankFn ignorableWhitespace
        _ErrorFn serror
        unsigned int initialized
    unsigned int XML_SAX2_MAGIC
    int XML_PARSE_HUGE
    int XML_ERR_RESOURCE_LIMIT

cdef extern from "libxml/HTMLparser.h":
    int HTML_PARSE_RECOVER
    int HTML_PARSE_NONET
    int HTML_PARSE_COMPACT

ctypedef _ParserCtxt *(*_NewCtxtFn)(const _SAXHandler *, void *) noexcept nogil
ctypedef void *(*_ReadMemoryFn)(_ParserCtxt *, const char *, int, const char *, const char *, int) noexcept nogil
ctypedef void (*_CtxtFn)(_ParserCtxt *) noexcept nogil
ctypedef const _XmlError *(*_LastErrorFn)(void *) noexcept nogil
ctypedef void (*_FreeDocFn)(void *) noexcept nogil

cdef _NewCtxtFn _html_new_ctxt = NULL
cdef _ReadMemoryFn _html_read_memory = NULL
cdef _CtxtFn _html_free_ctxt = NULL
cdef _CtxtFn _xml_stop_parser = NULL
cdef _LastErrorFn _xml_last_error = NULL
cdef _FreeDocFn _xml_free_doc = NULL
# lxml.html's parser: lxml's HTML defaults (recover, no network, compact) and huge_tree
cdef int _PARSE_OPTIONS = HTML_PARSE_RECOVER | HTML_PARSE_NONET | HTML_PARSE_COMPACT | XML_PARSE_HUGE
cdef _SAXHandler _EVENTS

cdef enum:
    PARSER_DOCUMENTS = 1000  # documents one parser context reads before a fresh one
    EV_DONE = 100       # the page's events are over: the parse stopped before the document's end

cdef enum:
    REGION_NONE = 0     # not inside <head> or <body> (<html> itself, an element beside them)
    REGION_HEAD = 1
    REGION_BODY = 2


cdef void _bind_libxml2(bytes module_path):
    """Resolve the parser functions in lxml's module (loaded already: the same copy)."""
    global _html_new_ctxt, _html_read_memory, _html_free_ctxt, _xml_stop_parser, _xml_last_error, _xml_free_doc
    cdef void *lib = dlopen(module_path, RTLD_NOW)
    if lib == NULL:
        return
    cdef void *new_ctxt = dlsym(lib, "htmlNewSAXParserCtxt")
    cdef void *read_memory = dlsym(lib, "htmlCtxtReadMemory")
    cdef void *free_ctxt = dlsym(lib, "htmlFreeParserCtxt")
    cdef void *stop = dlsym(lib, "xmlStopParser")
    cdef void *last_error = dlsym(lib, "xmlCtxtGetLastError")
    cdef void *free_doc = dlsym(lib, "xmlFreeDoc")
    if NULL in (new_ctxt, read_memory, free_ctxt, stop, last_error, free_doc):
        return
    _html_read_memory = <_ReadMemoryFn>read_memory
    _html_free_ctxt = <_CtxtFn>free_ctxt
    _xml_stop_parser = <_CtxtFn>stop
    _xml_last_error = <_LastErrorFn>last_error
    _xml_free_doc = <_FreeDocFn>free_doc
    _html_new_ctxt = <_NewCtxtFn>new_ctxt


cdef inline void _halt(Extractor ex, int status) noexcept nogil:
    ex.ev_status = status
    _xml_stop_parser(<_ParserCtxt *>ex.parser)


cdef inline bint _tick(Extractor ex) noexcept nogil:
    """Count one event; False (and the parse stopped) once past the budget."""
    cdef int status
    ex.ev_steps += 1
    if ex.ev_steps % DEADLINE_EVERY == 0:
        status = ex._walk_budget()
        if status != EXTRACT_OK:
            _halt(ex, status)
            return False
    return True


cdef void _event_head_element(Extractor ex, const_xmlChar *name, const_xmlChar **atts) noexcept nogil:
    """:meth:`Extractor._read_head_element` for an element opening: a <title> starts collecting
    its text, a <link> is read from its attributes."""
    cdef const unsigned char *rel = NULL
    cdef const unsigned char *href = NULL
    cdef size_t i = 0
    if _eq(name, "title"):
        ex.ev_title = ex.title.len == 0
    elif _eq(name, "link") and atts != NULL:
        while atts[i] != NULL:
            if _eq(atts[i], "rel"):
                rel = atts[i + 1] if atts[i + 1] != NULL else <const unsigned char *>b""
            elif _eq(atts[i], "href"):
                href = atts[i + 1] if atts[i + 1] != NULL else <const unsigned char *>b""
            i += 2
        ex._read_link(rel, strlen(<const char *>rel) if rel != NULL else 0,
                      href, strlen(<const char *>href) if href != NULL else 0)


cdef void _event_open(Extractor ex, const_xmlChar *name, const_xmlChar **atts) noexcept nogil:
    """An element opens in <body> (or is the <body>): :meth:`Extractor._walk`'s element step."""
    cdef uint16_t kind = _tag_kind(name)
    cdef bint hidden = (kind & K_DROP) != 0
    cdef ElementAttrs at
    cdef const unsigned char *v
    cdef size_t i = 0
    cdef int which
    cdef int32_t idx
    if kind & K_TITLE or (hidden and name[0] == 108):  # <title>, <link>
        _event_head_element(ex, name, atts)
    elif hidden and ex.ev_cur >= 0 and name[0] == 115 and _eq(name, "script"):
        ex.elems[ex.ev_cur].flags |= F_SCRIPTED
    if not hidden:
        _clear_attrs(&at)
        if atts != NULL:
            while atts[i] != NULL:
                which = _attr_which(atts[i], kind)
                if which:
                    v = atts[i + 1] if atts[i + 1] != NULL else <const unsigned char *>b""
                    _read_attr(which, v, strlen(<const char *>v), &at)
                i += 2
        hidden = at.hidden
    if hidden:
        ex.ev_skip = 1
        return
    idx = ex._open(ex.ev_cur, kind, &at)
    if idx < 0:
        _halt(ex, EXTRACT_NOMEM)
        return
    ex.ev_cur = idx


cdef void _on_start(Extractor ex, const_xmlChar *name, const_xmlChar **atts) noexcept nogil:
    cdef uint16_t kind
    ex.ev_depth += 1
    if ex.ev_status != EXTRACT_OK or name == NULL or not _tick(ex):
        return
    if ex.ev_depth >= MAX_DEPTH:
        # lxml's tree stops here: such a document is read as its tree is (its reader then
        # flattens it), so every way of reading a page gives the same text
        _halt(ex, EXTRACT_FALLBACK)
        return
    if ex.ev_region == REGION_BODY:
        if ex.ev_skip:
            ex.ev_skip += 1
        else:
            _event_open(ex, name, atts)
    elif ex.ev_depth == 1:
        if ex.ev_roots or not _eq(name, "html"):
            # after its <html> closed, libxml2 starts another one for what follows; lxml's root
            # is the first, so the rest is not the page's (and a first without <body> is the
            # tree walk's). A root other than <html> is the tree walk's too.
            _halt(ex, EV_DONE if ex.ev_body else EXTRACT_FALLBACK)
        ex.ev_roots += 1
    elif ex.ev_depth == 2:
        kind = _tag_kind(name)
        if kind & K_HEAD:
            ex.ev_region = REGION_HEAD
        elif kind & K_BODY and not ex.ev_body:
            ex.ev_region = REGION_BODY
            ex.ev_body = True
            _event_open(ex, name, atts)
    elif ex.ev_region == REGION_HEAD and ex.ev_depth == 3:
        _event_head_element(ex, name, atts)


cdef void _on_end(Extractor ex, const_xmlChar *name) noexcept nogil:
    cdef int depth = ex.ev_depth
    ex.ev_depth -= 1
    ex.ev_title = False
    if ex.ev_status != EXTRACT_OK:
        return
    if ex.ev_region == REGION_BODY:
        if ex.ev_skip:
            ex.ev_skip -= 1
        else:
            ex._close(ex.ev_cur)
            ex.ev_cur = ex.elems[ex.ev_cur].parent
    if depth == 2:
        ex.ev_region = REGION_NONE


cdef void _on_cdata(Extractor ex, const_xmlChar *s, int n) noexcept nogil:
    if ex.ev_status != EXTRACT_OK or n <= 0:
        return
    if ex.ev_region == REGION_BODY and ex.ev_skip == 0 and ex.ev_cur >= 0 and _tick(ex):
        if ex._add_text(ex.ev_cur, s, <size_t>n) < 0:
            _halt(ex, EXTRACT_NOMEM)


cdef void _on_text(Extractor ex, const_xmlChar *s, int n) noexcept nogil:
    if ex.ev_title and n > 0:
        bytebuf_append(&ex.title, s, <size_t>n)
    _on_cdata(ex, s, n)


cdef void _on_blank(void *ctx, const_xmlChar *s, int n) noexcept nogil:
    """Whitespace the parser calls ignorable: lxml's tree builder drops it too."""


cdef void _on_error(void *ctx, const _XmlError *error) noexcept nogil:
    """Parse errors: recovered from, never reported (lxml collects them in a log)."""


# libxml2 calls each handler with the user data given to htmlNewSAXParserCtxt: the extractor
# itself (kept alive by the caller of run_html). The handlers declare that pointer as the
# extractor, a borrowed reference that Cython neither counts nor checks, so they need no GIL;
# the casts below only retype the handlers' first argument, a pointer either way.
memset(&_EVENTS, 0, sizeof(_EVENTS))
_EVENTS.startElement = <_StartFn>_on_start
_EVENTS.endElement = <_EndFn>_on_end
_EVENTS.characters = <_TextFn>_on_text
_EVENTS.cdataBlock = <_CDataFn>_on_cdata
_EVENTS.ignorableWhitespace = <_BlankFn>_on_blank
_EVENTS.serror = <_ErrorFn>_on_error
_EVENTS.initialized = XML_SAX2_MAGIC


#: libxml2's deepest tree (see ``MAX_DEPTH`` in the ``.pxd``), for the reading policy.
MAX_TREE_DEPTH = MAX_DEPTH


def _bind() -> None:
    import os

    import lxml.etree

    _bind_libxml2(os.fsencode(lxml.etree.__file__))


_bind()


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
        if p[i] == 60:  # <
            c = p[i + 1]
            if (c | 32) >= 97 and (c | 32) <= 122:
                j = i + 2
                while j < n and p[j] != 60 and p[j] != 62:
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


cdef str _fold(str s):
    return " ".join(s.split())


cdef int _word_hashes(const unsigned char *p, size_t n, U64Buf *out) noexcept nogil:
    """Append the hashes of the words of UTF-8 text (runs of ASCII letters, digits, '_' and
    non-ASCII letters), ASCII-lower-cased, to ``out`` (repeats included); for the title-heading
    match only. -1 when out of memory."""
    cdef unsigned char word[128]
    cdef size_t w = 0, i = 0, skip
    cdef unsigned char c
    while i <= n:
        c = p[i] if i < n else 32
        skip = _punctuation_len(p + i, n - i) if c >= 0x80 else 0
        if skip:
            i += skip - 1  # Unicode punctuation and symbols end a word, as ASCII ones do
            c = 32
        i += 1
        if c >= 0x80 or (c >= 48 and c <= 57) or (c >= 97 and c <= 122) or c == 95 or (c >= 65 and c <= 90):
            if w < 128:
                word[w] = c + 32 if (c >= 65 and c <= 90) else c
                w += 1
        elif w:
            if u64buf_push(out, hash_bytes(word, w, 0x57)) < 0:
                return -1
            w = 0
    return 0


cdef int _wt_reserve(WordTable *t, size_t words) noexcept nogil:
    """Room in ``t`` for ``words`` distinct words at most half full; -1 when out of memory."""
    cdef size_t cap = 16
    cdef uint64_t *keys
    cdef uint32_t *stamps
    while cap < 2 * words:
        cap *= 2
    if cap <= t.cap:
        return 0
    keys = <uint64_t *>realloc(t.keys, cap * sizeof(uint64_t))
    if keys == NULL:
        return -1
    t.keys = keys
    stamps = <uint32_t *>realloc(t.stamps, cap * sizeof(uint32_t))
    if stamps == NULL:
        return -1
    t.stamps = stamps
    memset(t.stamps, 0, cap * sizeof(uint32_t))
    t.cap = cap
    t.stamp = 0
    return 0


cdef inline void _wt_clear(WordTable *t) noexcept nogil:
    """Empty ``t`` in constant time: a slot is in use only under the current stamp."""
    t.stamp += 1
    if t.stamp == 0:  # wrapped: the old stamps could come back
        memset(t.stamps, 0, t.cap * sizeof(uint32_t))
        t.stamp = 1


cdef inline bint _wt_add(WordTable *t, uint64_t h) noexcept nogil:
    """Add the word hash ``h``; whether it was not in ``t`` yet."""
    cdef size_t mask = t.cap - 1, slot = <size_t>(h & mask)
    while t.stamps[slot] == t.stamp:
        if t.keys[slot] == h:
            return False
        slot = (slot + 1) & mask
    t.keys[slot] = h
    t.stamps[slot] = t.stamp
    return True


cdef inline bint _wt_has(const WordTable *t, uint64_t h) noexcept nogil:
    cdef size_t mask = t.cap - 1, slot = <size_t>(h & mask)
    while t.stamps[slot] == t.stamp:
        if t.keys[slot] == h:
            return True
        slot = (slot + 1) & mask
    return False


cdef inline size_t _punctuation_len(const unsigned char *p, size_t n) noexcept nogil:
    """Length of the UTF-8 sequence at ``p`` when it is Latin-1 punctuation or a symbol
    (U+00A0-U+00BF: no-break space, section and pilcrow signs, quotes) or general punctuation
    (U+2000-U+206F: spaces, dashes, quotes, ellipsis); else 0."""
    if n >= 2 and p[0] == 0xC2 and 0xA0 <= p[1] <= 0xBF:
        return 2
    if n >= 3 and p[0] == 0xE2 and (p[1] == 0x80 or p[1] == 0x81) and 0x80 <= p[2] <= 0xBF:
        return 3
    return 0


cdef inline bint _is_space(unsigned char c) noexcept nogil:
    return c == 32 or c == 10 or c == 9 or c == 13 or c == 12 or c == 11


cdef void _append_folded(ByteBuf *out, const unsigned char *p, size_t n) noexcept nogil:
    """Append UTF-8 text with ASCII whitespace runs folded to one space (none at the start)."""
    cdef size_t i
    cdef unsigned char c
    cdef bint space = out.len == 0 or out.data[out.len - 1] == 32
    if bytebuf_reserve(out, n) < 0:
        return
    for i in range(n):
        c = p[i]
        if _is_space(c):
            if not space:
                out.data[out.len] = 32
                out.len += 1
                space = True
        else:
            out.data[out.len] = c
            out.len += 1
            space = False


cdef bint _has_visible(const unsigned char *p, size_t n) noexcept nogil:
    cdef size_t i
    for i in range(n):
        if not _is_space(p[i]):
            return True
    return False


cdef void _trim_cap(ByteBuf *b, long max_chars) noexcept nogil:
    """Drop trailing spaces; cut at ``max_chars`` code points, at the last space before the cut
    when one is within 200 bytes."""
    cdef size_t i, chars = 0, cut = b.len, space
    # a code point takes at least one byte: a text of at most max_chars bytes needs no cut
    for i in range(b.len if b.len > <size_t>max_chars else 0):
        if (b.data[i] & 0xC0) != 0x80:
            if chars == <size_t>max_chars:
                cut = i
                break
            chars += 1
    if cut < b.len:
        space = cut
        while space > 0 and cut - space < 200 and b.data[space - 1] != 32:
            space -= 1
        if space > 0 and cut - space < 200:
            cut = space
        b.len = cut
    while b.len and b.data[b.len - 1] == 32:
        b.len -= 1
