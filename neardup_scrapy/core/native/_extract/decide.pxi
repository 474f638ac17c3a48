# Part of the extractor, included by extract.pyx (one compiled module; see its docstring).
# Decisions over the walked arrays: the title heading and the container.

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
    HEADING_MAX_CHARS = 1000  # the heading reported is cut at this many characters
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


cdef inline int64_t _mass(Elem *e) noexcept nogil:
    """Text outside chrome, link text weighted 1/LINK_WEIGHT_DIV (scaled by LINK_WEIGHT_DIV)."""
    return <int64_t>(e.content - e.clink) * LINK_WEIGHT_DIV + e.clink


cdef inline bint _listing(Elem *e) noexcept nogil:
    """Two or more <article> descendants holding half the text: a list of items, not one text."""
    return e.art_n >= 2 and <int64_t>e.art_text * 2 >= e.text


cdef void _reset(Extractor ex) noexcept:
    ex.n_elems = 0
    ex.work = 0
    ex.buf.len = ex.out.len = ex.heading.len = ex.title.len = ex.canonical.len = 0
    ex.anchor = -1
    ex.anchors = []
    ex.frame = -1
    ex.container = -1
    ex.n_series = 0


cdef int32_t _find_anchors(Extractor ex) except -3:
    """The page's title headings: the headings outside chrome that best match <title> (at
    least 60% of their words are words of the title). An ``<h1>`` is the document's heading
    by HTML semantics, so it ranks before ``<h2>``/``<h3>``, which rank before title-classed
    elements; then most words in common. Every heading of the best rank is kept (a page may
    repeat its title, e.g. in a bar for small screens) in ``ex.anchors``; returns the first.
    A framing page's label (module docstring) gives way to the document's heading and is
    kept in ``ex.frame``.

    Linear in the page: a heading is a line, so an element longer than ``ANCHOR_CHARS`` is
    not read as one, the candidates' text is read at most ``ANCHOR_READS`` times over the
    page's text however they nest, and their words are counted against the title's in C
    tables, no Python object per word. -2 when out of memory."""
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
    cdef size_t allowance = ANCHOR_READS * ex.buf.len + ANCHOR_BYTES
    ex.anchors = []
    ex.frame = -1
    ex.work += ex.title.len
    ex.word_hashes.len = 0
    if _word_hashes(ex.title.data, ex.title.len, &ex.word_hashes) < 0:
        return -2
    if ex.word_hashes.len == 0:
        return -1
    if (
        _wt_reserve(&ex.title_words, ex.word_hashes.len) < 0
        or _wt_reserve(&ex.heading_words, ANCHOR_BYTES // 2 + 1) < 0
    ):
        return -2
    _wt_clear(&ex.title_words)
    for k in range(ex.word_hashes.len):
        _wt_add(&ex.title_words, ex.word_hashes.data[k])
    ex.work += ex.n_elems
    for i in range(ex.n_elems):
        e = &ex.elems[i]
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
        ex.work += e.tend - e.tstart
        ex.word_hashes.len = 0
        if _word_hashes(ex.buf.data + e.tstart, e.tend - e.tstart, &ex.word_hashes) < 0:
            return -2
        # distinct words first in the buffer, then how many of them the title has
        _wt_clear(&ex.heading_words)
        distinct = hit = 0
        for k in range(ex.word_hashes.len):
            h = ex.word_hashes.data[k]
            if _wt_add(&ex.heading_words, h):
                ex.word_hashes.data[distinct] = h
                distinct += 1
                hit += _wt_has(&ex.title_words, h)
        if not distinct or hit * 5 < 3 * distinct:
            continue
        if e.kind & K_H1 and len(framed) < MAX_FRAMED:
            framed.append((i, {ex.word_hashes.data[k] for k in range(distinct)}))
        rank = (3 if e.kind & K_H1 else 2 if e.kind & K_H23 else 1, hit)
        if rank > best_rank:
            best_rank = rank
            ex.anchors = [i]
        elif rank == best_rank:
            ex.anchors.append(i)
    # A page that frames a copied document (an archive, a wiki, an aggregator) heads it
    # twice: its own <h1> is the document's heading with the frame's words added ("Site:
    # Document"), and the document keeps its heading below. The later heading, whose words
    # the earlier one holds and more, is the document's: its branch is the content. (The
    # pair is looked for among the first MAX_FRAMED title-matching <h1>s: the comparison
    # is pairwise.)
    anchor_set = set(ex.anchors)
    ex.work += len(framed) * len(framed)
    for a in range(len(framed)):
        outer, words = framed[a]
        if outer not in anchor_set:
            continue
        for b in range(a + 1, len(framed)):
            inner, inner_words = framed[b]
            if inner >= ex.elems[outer].end and inner_words < words:
                ex.anchors = [inner]
                ex.frame = outer
                return inner
    if not ex.anchors:
        # No heading matches <title> (a headline written apart from the page's SEO title):
        # a page's one <h1> outside chrome is still its document's heading (HTML semantics)
        only = -1
        for i in range(ex.n_elems):
            e = &ex.elems[i]
            if e.kind & K_H1 and not (e.flags & (F_ANC_HARD | F_IN_PAGE_HF)) and e.tend > e.tstart:
                if only >= 0:
                    return -1
                only = i
        if only >= 0:
            ex.anchors = [only]
    return ex.anchors[0] if ex.anchors else -1


cdef int _mark_anchors(Extractor ex) except -2:
    """Flag the title headings (``F_ANCHOR``) and fill, bottom-up in one pass, what the
    decisions ask of a subtree: the most text of a title heading in it (``sub_anchor``) and,
    for a table part, the most mass of a cell it lays out (``cell_mass``: cells reached through
    table parts only, not inside other cells). Each question is then answered in constant
    time, however many headings or cells the page has. -1 when out of memory."""
    cdef int32_t i, p, n = ex.n_elems, cap
    cdef Elem *elems = ex.elems
    cdef int32_t *grown_anchor
    cdef int64_t *grown_mass
    cdef int64_t m
    if n > ex.cap_aux:
        cap = ex.cap_elems
        grown_anchor = <int32_t *>realloc(ex.sub_anchor, cap * sizeof(int32_t))
        if grown_anchor == NULL:
            return -1
        ex.sub_anchor = grown_anchor
        grown_mass = <int64_t *>realloc(ex.cell_mass, cap * sizeof(int64_t))
        if grown_mass == NULL:
            return -1
        ex.cell_mass = grown_mass
        ex.cap_aux = cap
    for i in ex.anchors:
        elems[i].flags |= F_ANCHOR
    for i in range(n):
        ex.sub_anchor[i] = elems[i].text if elems[i].flags & F_ANCHOR else -1
        ex.cell_mass[i] = -1
    # children come after their parent: in reverse order each subtree is done before its parent
    for i in range(n - 1, -1, -1):
        p = elems[i].parent
        if p < 0:
            continue
        if ex.sub_anchor[i] > ex.sub_anchor[p]:
            ex.sub_anchor[p] = ex.sub_anchor[i]
        if elems[p].kind & K_TABLEPART:
            if elems[i].kind & K_CELL:
                m = _mass(&elems[i])
            elif elems[i].kind & K_TABLEPART:
                m = ex.cell_mass[i]
            else:
                m = -1
            if m > ex.cell_mass[p]:
                ex.cell_mass[p] = m
    ex.work += 2 * <long long>n
    return 0


cdef bint _holds_anchor(Extractor ex, int32_t i) noexcept:
    return ex.sub_anchor[i] >= 0


cdef bint _dominated(Extractor ex, int32_t t) noexcept:
    """Whether a cell of table part ``t`` holds ALPHA of its mass (a layout table)."""
    return ex.cell_mass[t] >= 0 and ex.cell_mass[t] * 100 >= ALPHA_PCT * _mass(&ex.elems[t])


cdef bint _only_anchor(Extractor ex, int32_t b) noexcept:
    """Whether branch ``b`` holds a title heading and little else (under MIN_LIST_CHARS).

    Every heading that ties as the title heading counts (a page often repeats its title in
    a top bar and above its text): the branch of any of them alone is not the content.
    """
    return ex.sub_anchor[b] >= 0 and ex.elems[b].text - ex.sub_anchor[b] < MIN_LIST_CHARS


cdef int32_t _choose(Extractor ex) noexcept:
    cdef Elem *elems = ex.elems
    cdef int32_t i, best = -1, node, child, holder, end, start
    cdef bint headed
    cdef int64_t total = elems[0].text, best_text = 0, sum_text = 0, m, cm, best_mass, own
    cdef Elem *e
    ex.work += 2 * <long long>ex.n_elems  # the passes of 1 and 2; 3 counts its visits
    # 1. <main>
    for i in range(ex.n_elems):
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
    for i in range(ex.n_elems):
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
            ex.work += 1
            cm = _mass(&elems[child])
            own -= cm
            if ex.frame >= 0 and child <= ex.frame < elems[child].end and (
                elems[child].text - elems[ex.frame].text < MIN_LIST_CHARS
            ):
                # the frame's label of the document it holds is not part of the document
                m -= cm
                child = elems[child].end
                continue
            if not (elems[child].flags & F_EXCLUDED) and cm > best_mass:
                best, best_mass = child, cm
            if elems[child].kind & (K_H1 | K_H23) and cm > 0:
                headed = True
            if holder < 0 and _holds_anchor(ex, child):
                holder = child
            child = elems[child].end
        if best < 0 or m <= 0 or own >= OWN_TEXT_CHARS * LINK_WEIGHT_DIV:
            # text written straight into the node, outside any child element, is the node's
            # own prose (chrome comes in elements of its own): a child beside it is a part of
            # the document, not all of it
            break
        if holder >= 0 and not _holds_anchor(ex, best) and _only_anchor(ex, holder):
            # a bar holding only the title heading, beside the text: the heading is prepended
            # to the text's container wherever that is, so the descent goes on as if the
            # bar were not there
            m -= _mass(&elems[holder])
            holder = -1
        if holder >= 0 and _holds_anchor(ex, best):
            # the heaviest child holds the title heading: follow it while it holds enough,
            # and while it holds more than the heading (the main content is the heading's
            # text: a branch of the heading alone leaves the text beside it behind)
            if elems[best].flags & F_ANCHOR or best_mass * 100 < ANCHOR_PCT * m or _only_anchor(ex, best):
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
        if elems[best].kind & K_TABLEPART and not (_dominated(ex, best) or _holds_anchor(ex, best)):
            # a data table is content; a layout table (one dominant cell, or the cell of the
            # page's title heading: a data table does not hold the document's heading) is
            # descended
            break
        node = best
    return node


cdef int _decide(Extractor ex, long max_chars) except -1:
    """Everything after the walk: choose the container and render it (``run``). Each step
    is linear in the page and counts its work; the budget is looked at between steps."""
    cdef int i
    cdef Elem *e
    cdef int32_t h1 = -1, first_heading = -1, first_h1 = -1, first_titled = -1
    cdef uint32_t above
    cdef int status
    if ex.n_elems == 0 or ex.elems[0].text == 0:
        return EXTRACT_EMPTY
    ex.work += ex.n_elems
    # ancestors' exclusion, top-down (a parent always precedes its children). HTML allows
    # no <main> inside header, footer, nav or aside: one found there was put there by a
    # parser recovering unclosed tags, so a <main> starts afresh, whatever holds it
    for i in range(ex.n_elems):
        e = &ex.elems[i]
        above = ex.elems[e.parent].flags if e.parent >= 0 and not (e.flags & F_SEM_MAIN) else 0
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
    ex.anchor = _find_anchors(ex)
    if ex.anchor == -2 or _mark_anchors(ex) < 0:
        return EXTRACT_NOMEM
    status = ex.budget()
    if status != EXTRACT_OK:
        return status
    ex.container = _choose(ex)
    status = ex.budget()
    if status != EXTRACT_OK:
        return status
    # the page heading: the first <h1> outside chrome, prepended when the container holds
    # none (a container with a top-level heading of its own is already named)
    for i in range(ex.container, ex.elems[ex.container].end):
        ex.work += 1
        if ex.elems[i].kind & K_H1 and ex.elems[i].text:
            h1 = -2
            break
    for i in range(ex.n_elems if h1 == -1 else 0):
        ex.work += 1
        e = &ex.elems[i]
        if not (e.kind & K_H1) or not e.text:
            continue
        if e.flags & F_ANC_EXCL and not (e.flags & F_ANCHOR):
            continue
        h1 = i
        break
    if h1 >= 0:
        e = &ex.elems[h1]
        if _append_folded(&ex.out, ex.buf.data + e.tstart, e.tend - e.tstart) < 0 or bytebuf_push(&ex.out, c' ') < 0:
            return EXTRACT_NOMEM
    elif h1 == -1 and ex.title.len:
        if _append_folded(&ex.out, ex.title.data, ex.title.len) < 0 or bytebuf_push(&ex.out, c' ') < 0:
            return EXTRACT_NOMEM
    if _render(ex, ex.container, max_chars) < 0:
        return EXTRACT_NOMEM
    if not _has_visible(ex.out.data, ex.out.len):
        ex.out.len = 0
        if _render(ex, 0, max_chars) < 0:
            return EXTRACT_NOMEM
    _trim_cap(&ex.out, max_chars)
    if first_heading >= 0:
        e = &ex.elems[first_heading]
        ex.work += e.tend - e.tstart
        if _append_folded(&ex.heading, ex.buf.data + e.tstart, e.tend - e.tstart) < 0:
            return EXTRACT_NOMEM
        _trim_cap(&ex.heading, HEADING_MAX_CHARS)
    status = ex.budget()
    if status != EXTRACT_OK:
        return status
    return EXTRACT_OK if _has_visible(ex.out.data, ex.out.len) else EXTRACT_EMPTY
