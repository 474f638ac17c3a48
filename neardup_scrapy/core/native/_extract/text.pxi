# Part of the extractor, included by extract.pyx (one compiled module; see its docstring).
# Text: visible characters, words of a heading, folded and capped output.

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
        space = ~((z + 0x7F * L) | z) & H                              # byte == 32 (space)
        ws = ((x | H) - 0x09 * L) & ~((x | H) - 0x0E * L) & H          # 9 <= byte <= 13 (tab to carriage return)
        lead = v & (v << 1) & H                                        # 11xxxxxx
        # one bit per byte at bit 7: shifted to bit 0, the multiply sums the bytes into the top one
        count += <int32_t>((((lead | (~v & H & ~(space | ws))) >> 7) * L) >> 56)
        i += 8
    while i < n:
        c = p[i]
        if (c & 0xC0) != 0x80 and c != c' ' and c != c'\n' and c != c'\t' and c != c'\r' and c != c'\f' and c != c'\v':
            count += 1
        i += 1
    return count


def count_chars(bytes data):
    """:func:`_count_chars` of ``data`` (for tests)."""
    return _count_chars(<const unsigned char *>PyBytes_AS_STRING(data), PyBytes_GET_SIZE(data))


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
        if c >= 0x80 or (c >= c'0' and c <= c'9') or (c >= c'a' and c <= c'z') or c == c'_' or (c >= c'A' and c <= c'Z'):
            if w < 128:
                word[w] = c + ASCII_CASE if (c >= c'A' and c <= c'Z') else c
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


cdef int _append_folded(ByteBuf *out, const unsigned char *p, size_t n) noexcept nogil:
    """Append UTF-8 text with ASCII whitespace runs folded to one space (none at the start);
    -1 when out of memory."""
    cdef size_t i
    cdef unsigned char c
    cdef bint space = out.len == 0 or out.data[out.len - 1] == c' '
    if bytebuf_reserve(out, n) < 0:
        return -1
    for i in range(n):
        c = p[i]
        if _is_space(c):
            if not space:
                out.data[out.len] = c' '
                out.len += 1
                space = True
        else:
            out.data[out.len] = c
            out.len += 1
            space = False
    return 0


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
        while space > 0 and cut - space < 200 and b.data[space - 1] != c' ':
            space -= 1
        if space > 0 and cut - space < 200:
            cut = space
        b.len = cut
    while b.len and b.data[b.len - 1] == c' ':
        b.len -= 1
