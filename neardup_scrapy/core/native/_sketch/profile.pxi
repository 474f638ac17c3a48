# Part of the sketcher, included by sketch.pyx (one compiled module; see its docstring).
# The profile: its layout, writing it (chunks, heading and title words) and reading it.

# Layout (little-endian): u8 version, u8 level, u16 chunk count, per chunk u16 (hash in the low 15
# bits, bit 15 set when the chunk also ends at the next level) and u16 token length; then u8
# heading-word count, u8 title-word count and the sorted distinct u16 word hashes of each (bit 15
# set on a number: a word of digits, or digits joined by dots); then u16 token count and, for a
# page of at most SHORT_TOKENS tokens, the top 8 bits of each token hash in order (count 0 for a
# longer page).

cdef inline uint32_t _pow_mod15(uint32_t base, uint32_t e) noexcept nogil:
    cdef uint32_t result = 1
    base &= 0x7FFF
    while e:
        if e & 1:
            result = (result * base) & 0x7FFF
        base = (base * base) & 0x7FFF
        e >>= 1
    return result


cdef int _cut(const uint64_t *tokens, size_t n, int level, uint16_t *hashes, uint16_t *lens, int cap) noexcept nogil:
    """Cut ``tokens`` into chunks at ``level``; returns the count, or -1 when over ``cap``.

    A chunk ends after token ``i`` when the low ``level`` bits of ``g_i = mix64(t_{i-1} P ^ t_i)``
    are zero, so a chunk boundary depends only on two tokens and survives edits elsewhere;
    level ``L+1`` boundaries are a subset of level ``L`` ones. Chunk hash: ``sum t_j B^(len-1-j)``
    mod 2^15 over the tokens' top 16 bits, so the hash of two consecutive chunks follows from
    theirs (:func:`_coarsen`).
    """
    cdef uint64_t mask = (1ULL << level) - 1, up = (1ULL << (level + 1)) - 1, prev = 0, g
    cdef uint32_t h = 0, length = 0
    cdef int count = 0
    cdef size_t i
    for i in range(n):
        h = (h * _CHUNK_BASE + <uint32_t>(tokens[i] >> 48)) & 0x7FFF
        length += 1
        g = mix64(prev * _PRIME ^ tokens[i])
        prev = tokens[i]
        if (g & mask) == 0 or i == n - 1:
            if count >= cap:
                return -1
            hashes[count] = <uint16_t>(h | (0x8000 if ((g & up) == 0 or i == n - 1) else 0))
            lens[count] = <uint16_t>(length if length < 65535 else 65535)
            count += 1
            h = 0
            length = 0
    return count


cdef int _sorted_words(const uint64_t *words, size_t n, uint16_t *out) noexcept nogil:
    """The distinct top-16-bit values of ``words``, sorted, at most _MAX_WORDS (the smallest)."""
    cdef int count = 0, i, j
    cdef uint16_t v
    cdef size_t k
    for k in range(n):
        v = <uint16_t>(words[k] >> 48)
        # insertion into the sorted prefix (short lists)
        i = 0
        while i < count and out[i] < v:
            i += 1
        if i < count and out[i] == v:
            continue
        if count == _MAX_WORDS:
            if i == count:
                continue
            count -= 1
        j = count
        while j > i:
            out[j] = out[j - 1]
            j -= 1
        out[i] = v
        count += 1
    return count


cdef int build_profile(const uint64_t *tokens, size_t n, const uint64_t *heading, size_t nh,
                       const uint64_t *title, size_t nt, ByteBuf *out) except -1 nogil:
    """Write the profile of a page (see the layout above) to ``out``."""
    cdef int level = 0, count, i
    cdef uint16_t hashes[255]
    cdef uint16_t lens[255]
    cdef uint16_t words[32]
    cdef uint8_t header[4]
    cdef int nw
    while (<size_t>_CHUNKS << level) < n and level < 40:
        level += 1
    while True:
        count = _cut(tokens, n, level, hashes, lens, _MAX_CHUNKS)
        if count >= 0:
            break
        level += 1
    header[0] = _PROFILE_VERSION
    header[1] = <uint8_t>level
    header[2] = count & 0xFF
    header[3] = count >> 8
    bytebuf_append(out, header, 4)
    for i in range(count):
        bytebuf_append(out, <unsigned char *>&hashes[i], 2)
        bytebuf_append(out, <unsigned char *>&lens[i], 2)
    nw = _sorted_words(heading, nh, words)
    bytebuf_push(out, <uint8_t>nw)
    cdef int nw2
    cdef uint16_t words2[32]
    nw2 = _sorted_words(title, nt, words2)
    bytebuf_push(out, <uint8_t>nw2)
    bytebuf_append(out, <unsigned char *>words, 2 * nw)
    if bytebuf_append(out, <unsigned char *>words2, 2 * nw2) < 0:
        raise MemoryError()
    cdef uint16_t short_count = <uint16_t>n if n <= _SHORT_TOKENS else 0
    cdef uint8_t top
    cdef size_t k
    if bytebuf_append(out, <unsigned char *>&short_count, 2) < 0:
        raise MemoryError()
    for k in range(short_count):
        top = <uint8_t>(tokens[k] >> 56)
        if bytebuf_append(out, &top, 1) < 0:
            raise MemoryError()
    return 0


cdef struct Profile:
    int level
    int count
    const uint16_t *chunks   # 2 * count values: hash|flag, length
    int nh
    int nt
    const uint16_t *heading
    const uint16_t *title
    int ntok                 # tokens kept (a short page), else 0
    const uint8_t *tokens


cdef int _parse(bytes data, Profile *p) except -1:
    cdef const unsigned char *s = <const unsigned char *>PyBytes_AS_STRING(data)
    cdef Py_ssize_t n = PyBytes_GET_SIZE(data), at
    if n < 6 or s[0] != _PROFILE_VERSION:
        raise ValueError("not a neardup page profile")
    p.level = s[1]
    p.count = s[2] | (s[3] << 8)
    at = 4 + 4 * p.count
    if n < at + 2:
        raise ValueError("truncated page profile")
    p.chunks = <const uint16_t *>(s + 4)
    p.nh = s[at]
    p.nt = s[at + 1]
    if n < at + 2 + 2 * (p.nh + p.nt):
        raise ValueError("truncated page profile")
    p.heading = <const uint16_t *>(s + at + 2)
    p.title = <const uint16_t *>(s + at + 2 + 2 * p.nh)
    at += 2 + 2 * (p.nh + p.nt)
    if n < at + 2:
        raise ValueError("truncated page profile")
    p.ntok = s[at] | (s[at + 1] << 8)
    if n < at + 2 + p.ntok:
        raise ValueError("truncated page profile")
    p.tokens = <const uint8_t *>(s + at + 2)
    return 0


def profile_tokens(bytes profile):
    """Tokens of the page a profile describes (the sum of its chunk lengths)."""
    cdef Profile p
    cdef int i
    cdef long total = 0
    _parse(profile, &p)
    for i in range(p.count):
        total += p.chunks[2 * i + 1]
    return total
