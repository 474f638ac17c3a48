# Part of the extractor, included by extract.pyx (one compiled module; see its docstring).
# Tag kinds, element flags and the table of tag names.

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


cdef enum:
    ASCII_CASE = 0x20   # the bit that makes an ASCII capital letter lower-case


cdef inline bint _eq(const unsigned char *a, const char *b) noexcept nogil:
    return strlen(<const char *>a) == strlen(b) and memcmp(a, b, strlen(b)) == 0


cdef inline bint _ieq(const unsigned char *a, size_t n, const char *b) noexcept nogil:
    """ASCII case-insensitive equality of ``a[:n]`` (surrounding spaces ignored) with ``b``."""
    cdef size_t m = strlen(b), i
    while n and (a[0] == c' ' or a[0] == c'\t' or a[0] == c'\n' or a[0] == c'\r'):
        a += 1
        n -= 1
    while n and (a[n - 1] == c' ' or a[n - 1] == c'\t' or a[n - 1] == c'\n' or a[n - 1] == c'\r'):
        n -= 1
    if n != m:
        return False
    for i in range(n):
        if (a[i] | ASCII_CASE) != (<unsigned char>b[i] | ASCII_CASE):
            return False
    return True


cdef inline bint _is_space(unsigned char c) noexcept nogil:
    return c == c' ' or c == c'\n' or c == c'\t' or c == c'\r' or c == c'\f' or c == c'\v'
