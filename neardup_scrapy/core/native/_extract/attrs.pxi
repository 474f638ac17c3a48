# Part of the extractor, included by extract.pyx (one compiled module; see its docstring).
# The attributes the walk reads (rel, role, style, hidden...).

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
        if c == c' ' or c == c'\t' or c == c'\n' or c == c'\r':
            continue
        if m < 256:
            squeezed[m] = c | ASCII_CASE if (c >= c'A' and c <= c'Z') else c
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
    if c == c'c':
        return A_CLASS if _eq(name, "class") else 0
    if c == c'i':
        return A_ID if _eq(name, "id") else 0
    if c == c'r':
        if _eq(name, "role"):
            return A_ROLE
        return A_REL if kind & K_A and _eq(name, "rel") else 0
    if c == c'h':
        if _eq(name, "hidden"):
            return A_HIDDEN
        return A_HREF if _eq(name, "href") else 0
    if c == c's':
        return A_STYLE if _eq(name, "style") else 0
    if c == c'a':
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
