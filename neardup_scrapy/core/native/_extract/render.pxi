# Part of the extractor, included by extract.pyx (one compiled module; see its docstring).
# Rendering the container without chrome.

cdef inline bint _in_table(Extractor ex, int32_t j) noexcept:
    """Whether element ``j`` is a part of a table (a row group, a row, a cell), not a table:
    its parent is a table part (a table nested in a cell has a cell for parent)."""
    cdef int32_t parent = ex.elems[j].parent
    return (
        ex.elems[j].kind & (K_TABLEPART | K_CELL) != 0
        and parent >= 0
        and ex.elems[parent].kind & K_TABLEPART != 0
    )


cdef int _render(Extractor ex, int32_t c, long max_chars) noexcept:
    """Append the text of element ``c`` without chrome and link lists to ``ex.out``; -1 when
    out of memory."""
    cdef Elem *elems = ex.elems
    cdef Elem *top = &elems[c]
    cdef Elem *e
    cdef int64_t total = top.text
    cdef bint link_page = total > 0 and <int64_t>top.link * 2 >= total
    cdef int32_t j = c + 1, nd = 0
    cdef bint drop
    cdef uint32_t *grown
    cdef uint32_t pos
    while j < top.end:
        ex.work += 1
        e = &elems[j]
        drop = False
        if (
            e.flags & F_SEMANTIC
            and (<int64_t>e.link * 100 >= DENSE_PCT * e.text or <int64_t>e.text * 3 < 2 * total)
            and total - e.text >= LINE_CHARS
            and not _holds_anchor(ex, j)
        ):
            # chrome by markup (<nav>, <aside>, role="navigation"...) is a stronger signal than
            # a class name: it goes while it holds less than two thirds of the container (a
            # class name: half), and, when it is mostly links, however much it holds and
            # whatever its parts are named (two signals agree); the text beside it (at least
            # a line) is what the page says
            drop = True
        elif <int64_t>e.text * 2 < total and not (e.flags & F_OVERRIDE):
            if e.flags & F_STRONG and not (e.flags & F_PAGE_HF and _holds_anchor(ex, j)):
                # a page header holding the title heading is the document's header
                drop = True
            elif e.flags & F_LAYOUT and <int64_t>e.link * 100 >= LAYOUT_DENSE_PCT * e.text:
                drop = True
            elif (
                not (e.kind & K_INLINE)
                and not _in_table(ex, j)
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
                and not _holds_anchor(ex, j)
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
            if 2 * nd + 2 > ex.cap_drops:
                ex.cap_drops = ex.cap_drops * 2 if ex.cap_drops else 256
                grown = <uint32_t *>realloc(ex.drops, ex.cap_drops * sizeof(uint32_t))
                if grown == NULL:
                    return -1
                ex.drops = grown
            ex.drops[2 * nd] = e.tstart
            ex.drops[2 * nd + 1] = e.tend
            nd += 1
            j = e.end
        else:
            j += 1
    pos = top.tstart
    ex.work += top.tend - top.tstart  # the bytes folded (at most)
    for j in range(nd):
        if _append_folded(&ex.out, ex.buf.data + pos, ex.drops[2 * j] - pos) < 0:
            return -1
        if ex.out.len and ex.out.data[ex.out.len - 1] != c' ' and bytebuf_push(&ex.out, c' ') < 0:
            return -1
        pos = ex.drops[2 * j + 1]
    return _append_folded(&ex.out, ex.buf.data + pos, top.tend - pos)
