# cython: language_level=3
"""The part of libxml2's C API that the walk of the parser's events uses (extract.pyx,
``_extract/events.pxi``): the SAX handler, the parser context, the error and option codes,
and the types of the functions resolved in lxml's module at import."""

from lxml.includes.tree cimport const_xmlChar

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
