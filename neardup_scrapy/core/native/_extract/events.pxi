# Part of the extractor, included by extract.pyx (one compiled module; see its docstring).
# The walk driven by the parser's events.

# -- the walk driven by the parser's events ------------------------------------------------------
# libxml2 is the one lxml carries (its module exports the library's functions): resolved at import,
# so the events come from the very parser that builds lxml's trees, whatever copy lxml links.
# (the C declarations of libxml2 used here are in _libxml2.pxd)
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
        status = _walk_budget(ex)
        if status != EXTRACT_OK:
            _halt(ex, status)
            return False
    return True


cdef int _event_head_element(Extractor ex, const_xmlChar *name, const_xmlChar **atts) noexcept nogil:
    """:func:`_read_head_element` for an element opening: a <title> starts collecting its text,
    a <link> is read from its attributes; -1 when out of memory."""
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
        return _read_link(ex, rel, strlen(<const char *>rel) if rel != NULL else 0,
                          href, strlen(<const char *>href) if href != NULL else 0)
    return 0


cdef void _event_open(Extractor ex, const_xmlChar *name, const_xmlChar **atts) noexcept nogil:
    """An element opens in <body> (or is the <body>): :func:`_walk`'s element step."""
    cdef uint16_t kind = _tag_kind(name)
    cdef bint hidden = (kind & K_DROP) != 0
    cdef ElementAttrs at
    cdef const unsigned char *v
    cdef size_t i = 0
    cdef int which
    cdef int32_t idx
    if kind & K_TITLE or (hidden and name[0] == c'l'):  # <title>, <link>
        if _event_head_element(ex, name, atts) < 0:
            _halt(ex, EXTRACT_NOMEM)
            return
    elif hidden and ex.ev_cur >= 0 and name[0] == c's' and _eq(name, "script"):
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
    idx = _open(ex, ex.ev_cur, kind, &at)
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
        if _event_head_element(ex, name, atts) < 0:
            _halt(ex, EXTRACT_NOMEM)


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
            if _close(ex, ex.ev_cur) < 0:
                _halt(ex, EXTRACT_NOMEM)
                return
            ex.ev_cur = ex.elems[ex.ev_cur].parent
    if depth == 2:
        ex.ev_region = REGION_NONE


cdef void _on_cdata(Extractor ex, const_xmlChar *s, int n) noexcept nogil:
    if ex.ev_status != EXTRACT_OK or n <= 0:
        return
    if ex.ev_region == REGION_BODY and ex.ev_skip == 0 and ex.ev_cur >= 0 and _tick(ex):
        if _add_text(ex, ex.ev_cur, s, <size_t>n) < 0:
            _halt(ex, EXTRACT_NOMEM)


cdef void _on_text(Extractor ex, const_xmlChar *s, int n) noexcept nogil:
    if ex.ev_title and n > 0 and bytebuf_append(&ex.title, s, <size_t>n) < 0:
        _halt(ex, EXTRACT_NOMEM)
        return
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


def _bind() -> None:
    import os

    import lxml.etree

    _bind_libxml2(os.fsencode(lxml.etree.__file__))


_bind()


cdef int _run_html(Extractor ex, const unsigned char *data, size_t n, long max_chars) except -1:
    """:meth:`Extractor.run_html` (see there)."""
    cdef _ParserCtxt *ctxt
    cdef const _XmlError *error
    cdef void *doc
    cdef bint cut
    cdef int status
    _reset(ex)
    if _html_new_ctxt == NULL or n > <size_t>0x7FFFFFFF:
        return EXTRACT_FALLBACK
    if ex.parser == NULL:
        ex.parser = _html_new_ctxt(&_EVENTS, <void *>ex)
        if ex.parser == NULL:
            return EXTRACT_FALLBACK
    ctxt = <_ParserCtxt *>ex.parser
    ex.ev_cur = -1
    ex.ev_depth = ex.ev_skip = 0
    ex.ev_region = REGION_NONE
    ex.ev_body = False
    ex.ev_roots = 0
    ex.ev_status = EXTRACT_OK
    ex.ev_title = False
    ex.ev_steps = 0
    with nogil:
        doc = _html_read_memory(ctxt, <const char *>data, <int>n, NULL, "UTF-8", _PARSE_OPTIONS)
        if doc != NULL:  # (no handler builds one)
            _xml_free_doc(doc)
    error = _xml_last_error(ctxt)
    cut = error != NULL and error.code == XML_ERR_RESOURCE_LIMIT
    ex.ev_documents += 1
    if ex.ev_status != EXTRACT_OK or cut or ex.ev_documents >= PARSER_DOCUMENTS:
        # a stopped parser starts the next document afresh; and it interns every tag and
        # attribute name it meets, for as long as it lives: a fresh one now and then bounds
        # that table whatever names pages invent
        _html_free_ctxt(ctxt)
        ex.parser = NULL
        ex.ev_documents = 0
    if ex.ev_status != EXTRACT_OK and ex.ev_status != EV_DONE:
        return ex.ev_status
    if cut or not ex.ev_body:
        return EXTRACT_FALLBACK
    status = _walk_budget(ex)
    if status != EXTRACT_OK:
        return status
    return _decide(ex, max_chars)
