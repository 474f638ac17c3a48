# Part of the extractor, included by extract.pyx (one compiled module; see its docstring).
# The walk: numbering visible elements and counting their text (from a tree or events).

cdef int32_t _new_elem(Extractor ex) noexcept nogil:
    """A zeroed element at the end of the array; -1 when out of memory."""
    cdef Elem *grown
    cdef int32_t cap
    if ex.n_elems >= ex.cap_elems:
        cap = ex.cap_elems * 2 if ex.cap_elems else 4096
        grown = <Elem *>realloc(ex.elems, cap * sizeof(Elem))
        if grown == NULL:
            return -1
        ex.elems = grown
        ex.cap_elems = cap
    memset(&ex.elems[ex.n_elems], 0, sizeof(Elem))
    ex.n_elems += 1
    return ex.n_elems - 1


cdef int32_t _open(Extractor ex, int32_t cur, uint16_t kind, ElementAttrs *at) noexcept nogil:
    """Number a visible element opening inside ``cur`` (-1: the walk's root) and set its
    flags; returns its index, -1 when out of memory."""
    cdef int32_t idx = _new_elem(ex)
    cdef Elem *e
    cdef Elem *p
    cdef uint32_t flags, inherited = 0
    cdef uint8_t klass
    if idx < 0:
        return -1
    e = &ex.elems[idx]
    e.parent = cur
    e.kind = kind
    if cur >= 0:
        p = &ex.elems[cur]
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
        klass = _classify(ex.memo, at.cls, at.ncls, at.ident, at.nid)
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
        if at.rel or _in_series(ex, at.href, at.nhref):
            # a pager or a link up to the contents: navigation by its relation
            # (its own rel, or the head's <link rel=next/prev> to the same href)
            flags |= F_STRONG
    e.flags = flags
    e.tstart = <uint32_t>ex.buf.len
    if not (kind & K_INLINE) and bytebuf_push(&ex.buf, c' ') < 0:
        return -1
    return idx


cdef int _add_text(Extractor ex, int32_t cur, const unsigned char *s, size_t n) noexcept nogil:
    """Append text found inside the open element ``cur``; -1 when out of memory."""
    cdef int32_t chars
    cdef Elem *e
    if bytebuf_append(&ex.buf, s, n) < 0:
        return -1
    chars = _count_chars(s, n)
    e = &ex.elems[cur]
    e.text += chars
    e.content += chars
    if e.flags & F_LINK:
        e.link += chars
        e.clink += chars
    return 0


cdef int _close(Extractor ex, int32_t i) noexcept nogil:
    """Close the open element ``i``: its text span and flags, and its counts added to its
    parent's; -1 when out of memory."""
    cdef Elem *e = &ex.elems[i]
    cdef Elem *p
    cdef uint32_t flags = e.flags
    if not (e.kind & K_INLINE) and bytebuf_push(&ex.buf, c' ') < 0:
        return -1
    e.tend = <uint32_t>ex.buf.len
    e.end = ex.n_elems
    if flags & (F_SEM_MAIN | F_SEM_ARTICLE | F_CONTENT) and e.text > e.marked:
        e.marked = e.text
    if flags & (F_STRONG | F_LAYOUT) and not (flags & F_SEMANTIC) and e.text > 0 and <int64_t>e.marked * 2 >= e.text:
        # a class name can be a wrapper's; an element's tag or role says what it is
        flags |= F_OVERRIDE
    if (flags & F_STRONG or (flags & F_LAYOUT and not (flags & F_IN_SECTION))) and not (flags & F_OVERRIDE):
        flags |= F_EXCLUDED
    e.flags = flags
    if e.parent < 0:
        return 0
    p = &ex.elems[e.parent]
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
    return 0


cdef int _read_head(Extractor ex, tree.xmlNode *head) noexcept nogil:
    """The first <title> text and the canonical link of a <head>; -1 when out of memory."""
    cdef tree.xmlNode *node = head.children
    while node != NULL:
        if node.type == tree.XML_ELEMENT_NODE and node.name != NULL:
            if _read_head_element(ex, node) < 0:
                return -1
        node = node.next
    return 0


cdef int _read_head_element(Extractor ex, tree.xmlNode *node) noexcept nogil:
    """Keep a <title>'s text or a canonical <link>'s href, when none is kept yet, and the
    hrefs of ``<link rel=next/prev>``.

    Also called for these elements met in the body: an HTML parser moves the document's
    <title> and links into <body> when the head holds something it does not allow there,
    and they are still the document's (titles of inline SVG are never reached: the walk
    does not enter <svg>). -1 when out of memory."""
    cdef tree.xmlNode *child
    cdef tree.xmlAttr *a
    cdef const unsigned char *rel
    cdef const unsigned char *href
    cdef size_t nrel, nhref
    if _eq(node.name, "title") and ex.title.len == 0:
        child = node.children
        while child != NULL:
            if child.type == tree.XML_TEXT_NODE and child.content != NULL:
                if bytebuf_append(&ex.title, child.content, strlen(<const char *>child.content)) < 0:
                    return -1
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
        return _read_link(ex, rel, nrel, href, nhref)
    return 0


cdef int _read_link(Extractor ex, const unsigned char *rel, size_t nrel, const unsigned char *href,
                    size_t nhref) noexcept nogil:
    """Keep the href of a canonical ``<link>`` (the first one) and of ``<link rel=next/prev>``
    (``rel``/``href`` NULL: the attribute is absent); -1 when out of memory."""
    if rel == NULL or href == NULL:
        return 0
    if _ieq(rel, nrel, "canonical") and ex.canonical.len == 0:
        if bytebuf_append(&ex.canonical, href, nhref) < 0:
            return -1
    if _rel_navigation(rel, nrel) & REL_SERIES and ex.n_series < MAX_SERIES:
        ex.series[ex.n_series] = hash_bytes(href, nhref, SERIES_SEED)
        ex.n_series += 1
    return 0


cdef bint _in_series(Extractor ex, const unsigned char *href, size_t n) noexcept nogil:
    """Whether ``href`` is the page's declared next or previous document."""
    cdef uint64_t h
    cdef int i
    if ex.n_series == 0:
        return False
    h = hash_bytes(href, n, SERIES_SEED)
    for i in range(ex.n_series):
        if ex.series[i] == h:
            return True
    return False


cdef int _walk_budget(Extractor ex) noexcept nogil:
    """:meth:`Extractor.budget` with the walk's work so far: its visible elements and the bytes of their
    text, the same whether the walk follows a tree or the parser's events (hidden elements,
    never entered by the one and skipped by the other, cost none)."""
    ex.work = <long long>ex.n_elems * WORK_ELEMENT + <long long>ex.buf.len
    return ex.budget()


cdef int _walk(Extractor ex, tree.xmlNode *top) except -1 nogil:
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
            status = _walk_budget(ex)
            if status != EXTRACT_OK:
                return status
        if node.type == tree.XML_ELEMENT_NODE and node.name != NULL:
            kind = _tag_kind(node.name)
            hidden = (kind & K_DROP) != 0
            if kind & K_TITLE or (hidden and node.name[0] == c'l'):  # <title>, <link>
                if _read_head_element(ex, node) < 0:
                    return EXTRACT_NOMEM
            elif hidden and cur >= 0 and node.name[0] == c's' and _eq(node.name, "script"):
                ex.elems[cur].flags |= F_SCRIPTED
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
                idx = _open(ex, cur, kind, &at)
                if idx < 0:
                    return EXTRACT_NOMEM
                cur = idx
                if node.children != NULL:
                    node = node.children
                    continue
                if _close(ex, cur) < 0:  # a leaf element ends at once
                    return EXTRACT_NOMEM
                cur = ex.elems[cur].parent
        elif (node.type == tree.XML_TEXT_NODE or node.type == tree.XML_CDATA_SECTION_NODE) and cur >= 0:
            if node.content != NULL:
                n = strlen(<const char *>node.content)
                if n and _add_text(ex, cur, node.content, n) < 0:
                    return EXTRACT_NOMEM
        # the node is done: on to the next one in document order, closing finished elements
        if node == top:
            return EXTRACT_OK
        while node.next == NULL:
            node = node.parent
            if _close(ex, cur) < 0:
                return EXTRACT_NOMEM
            cur = ex.elems[cur].parent
            if node == top or node == NULL:
                return EXTRACT_OK
        node = node.next


cdef int _walk_tree(Extractor ex, tree.xmlNode *root) except -1 nogil:
    """The walk of :meth:`Extractor.run`: the elements and counts of the tree at ``root`` (its
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
                    if _read_head(ex, node) < 0:
                        return EXTRACT_NOMEM
                elif _tag_kind(node.name) & K_BODY and body == NULL:
                    body = node
            node = node.next
    if body == NULL:
        body = root
    return _walk(ex, body)
