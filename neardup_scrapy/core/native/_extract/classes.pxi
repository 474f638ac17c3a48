# Part of the extractor, included by extract.pyx (one compiled module; see its docstring).
# Class/id words: what an element's names say it is.

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
        upper = c >= c'A' and c <= c'Z'
        letter = upper or (c >= c'a' and c <= c'z')
        if (not letter or (upper and prev >= c'a' and prev <= c'z')) and w:
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
        if c == 0 or c == c' ' or c == c'\t' or c == c'\n' or c == c'\r':
            # a class name ends: a hiding utility is a short name ending in the hiding word
            if hiding_last and words_in_name <= 2:
                strong = True
            hiding_last = False
            words_in_name = 0
        if letter and w < 64:
            word[w] = c + ASCII_CASE if upper else c
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
        if c >= c'0' and c <= c'9':
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
