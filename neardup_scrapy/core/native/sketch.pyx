# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True, initializedcheck=False
"""From token hashes to everything the index keeps of a page, in C.

* **Shingles**: ``s_i = mix64(((t_i P ^ t_{i+1}) P ^ ...) ^ t_{i+k-1})`` over ``k`` consecutive
  token hashes (wrapping uint64); a text of fewer than ``k`` tokens is one shingle.
* **MinHash** by one-permutation hashing (Li, Owen and Zhang 2012): each mixed shingle hash
  ``x`` falls in bin ``floor(hi32(x) K / 2^32)`` of ``K = num_perm`` bins, which keep the
  minimum of ``lo32(x)``; an empty bin takes the value of the first non-empty bin of a seeded
  probe sequence shared by all pages (optimal densification, Shrivastava 2017), so equal bins
  of two pages still occur with probability ``J``.
* **SimHash** (Charikar 2002): bit ``j`` is set when more than half of the shingles have it set,
  counted per byte value (8 x 256 counters) rather than per bit.
* **Digest**: two seeded 64-bit hashes of the token-hash sequence (the exact-duplicate key).
* **Bucket keys**: the digest, one key per MinHash band (``mix64(sum_j v_j m_j)`` over the
  band's values with odd seeded multipliers) and one per SimHash block table (the fingerprint
  masked to the table's blocks); the top 8 bits name the table.
* **Profile** (variable length, see :func:`build_profile`): what verification needs besides
  the MinHash: a content-defined chunking of the token sequence (the *edit sketch*), the
  word hashes of the page's heading and title, and, for a short page, its whole token sequence
  (8 bits a token), so that short pages are compared exactly.
"""

from cpython.bytes cimport PyBytes_AS_STRING, PyBytes_FromStringAndSize, PyBytes_GET_SIZE
from cpython.unicode cimport PyUnicode_DATA, PyUnicode_GET_LENGTH, PyUnicode_KIND
from libc.stdint cimport uint8_t, uint16_t, uint32_t, uint64_t
from libc.stdlib cimport free, malloc
from libc.string cimport memcpy, memset

from neardup_scrapy.core.native._common cimport (
    ByteBuf,
    bytebuf_append,
    bytebuf_push,
    hash_bytes,
    mix64,
    nd_load64,
    nd_rotl64,
    u64buf_push,
)

cdef uint64_t _PRIME = 0x9E3779B97F4A7C15ULL
cdef uint64_t _LOW56 = (1ULL << 56) - 1
cdef uint32_t _EMPTY = 0xFFFFFFFFU

cdef enum:
    _PROFILE_VERSION = 2
    _CHUNKS = 32
    _SHORT_TOKENS = 256
#: Profile format version (first byte of every profile).
PROFILE_VERSION = _PROFILE_VERSION
#: Average chunks per page of the edit sketch: a page of ``n`` tokens is cut at level
#: ``L = ceil(log2(n / CHUNKS))``, so chunks hold ``2**L`` tokens on average.
CHUNKS = _CHUNKS
#: Pages of at most this many tokens keep their token sequence in the profile (8 bits a token):
#: their Jaccard similarity and their edits are computed exactly, not estimated. A MinHash of
#: ``K = 128`` bins estimates ``J`` with a standard error of ``sqrt(J (1 - J) / K)`` whatever the
#: page's size (0.02 at 0.95), and a short page fills fewer bins than it has (densified bins
#: repeat others), so its estimate is the least certain where one differing word is most of
#: what tells two pages apart.
SHORT_TOKENS = _SHORT_TOKENS
cdef int _MAX_CHUNKS = 255
cdef int _MAX_WORDS = 32
cdef uint32_t _CHUNK_BASE = 0x5BD1  # odd multiplier of the chunk hashes (mod 2**15)


def seeded_constants(uint64_t seed, str label, int count):
    """``count`` stable pseudo-random uint64 constants for ``(seed, label)``."""
    cdef bytes b
    out = []
    for i in range(count):
        b = f"{label}:{i}".encode()
        out.append(hash_bytes(<const unsigned char *>PyBytes_AS_STRING(b), PyBytes_GET_SIZE(b), seed))
    return out


def digest_bytes(data, uint64_t seed):
    """16-byte digest of bytes (the repeat cache's body key; kept in memory only).

    Four lanes over interleaved 8-byte words, ``v = rotl(v + w C2, 31) C1`` (independent, so
    the processor overlaps them: one pass at about 0.6 instructions per byte), then two
    different seeded mixes of the lanes, the length and the hash of the tail give the two
    64-bit halves.
    """
    cdef const unsigned char[:] view = data
    cdef size_t n = view.shape[0]
    return _digest(&view[0] if n else <const unsigned char *>b"", n, seed)


def digest_text(str text, uint64_t seed):
    """:func:`digest_bytes` of a string's characters as Python stores them (1, 2 or 4 bytes
    each, the width mixed into the seed), so equal strings have equal digests without an
    encoding pass (UTF-8 encoding a page with non-ASCII text costs more than this digest)."""
    cdef int kind = PyUnicode_KIND(text)
    cdef size_t n = <size_t>PyUnicode_GET_LENGTH(text) * <size_t>kind
    return _digest(<const unsigned char *>PyUnicode_DATA(text), n, seed ^ (<uint64_t>kind * 0x9E3779B97F4A7C15ULL))


cdef bytes _digest(const unsigned char *p, size_t n, uint64_t seed):
    cdef size_t i = 0
    cdef uint64_t c1 = 0x9E3779B185EBCA87ULL, c2 = 0xC2B2AE3D27D4EB4FULL
    cdef uint64_t v1 = seed + c1 + c2, v2 = seed + c2, v3 = seed, v4 = seed - c1
    cdef uint64_t tail, a, b
    while i + 32 <= n:
        v1 = nd_rotl64(v1 + nd_load64(p + i) * c2, 31) * c1
        v2 = nd_rotl64(v2 + nd_load64(p + i + 8) * c2, 31) * c1
        v3 = nd_rotl64(v3 + nd_load64(p + i + 16) * c2, 31) * c1
        v4 = nd_rotl64(v4 + nd_load64(p + i + 24) * c2, 31) * c1
        i += 32
    tail = hash_bytes(p + i, n - i, seed ^ <uint64_t>n)
    a = mix64(nd_rotl64(v1, 1) + nd_rotl64(v2, 7) + nd_rotl64(v3, 12) + nd_rotl64(v4, 18) + tail)
    b = mix64((v1 ^ nd_rotl64(v2, 29)) + (v3 ^ nd_rotl64(v4, 47)) + mix64(tail ^ 0x5A5A5A5A5A5A5A5AULL))
    return a.to_bytes(8, "little") + b.to_bytes(8, "little")


def string_hash(str text, uint64_t seed):
    """Stable 64-bit hash of a string (hosts, urls)."""
    cdef bytes b = text.encode("utf-8", "surrogatepass")
    return hash_bytes(<const unsigned char *>PyBytes_AS_STRING(b), PyBytes_GET_SIZE(b), seed)


cdef class Sketcher:
    """Digest, MinHash, SimHash and bucket keys of token-hash arrays, for one set of parameters.

    Args:
        seed: the hash seed.
        num_perm: MinHash bins.
        shingle_size: tokens per shingle.
        bands, rows: MinHash LSH banding.
        simhash_masks: one 64-bit mask per SimHash block table.
    """

    def __cinit__(self, uint64_t seed, int num_perm, int shingle_size, int bands, int rows, simhash_masks):
        cdef int i, power = 0
        if num_perm < 1 or shingle_size < 1 or bands < 1 or rows < 1 or bands * rows > num_perm:
            raise ValueError("invalid sketch parameters")
        self.seed = seed
        self.num_perm = num_perm
        self.shingle_size = shingle_size
        self.bands = bands
        self.rows = rows
        while (1 << power) < num_perm:
            power += 1
        self.bin_shift = 64 - power if (1 << power) == num_perm and power >= 1 else 0
        self.minhash_salt = seeded_constants(seed, "minhash-oph", 1)[0]
        self.probe_seed = seeded_constants(seed, "minhash-probe", 1)[0]
        self.digest_seed_a, self.digest_seed_b = seeded_constants(seed, "digest", 2)
        self.band_mult = <uint64_t *>malloc(rows * sizeof(uint64_t))
        masks = list(simhash_masks)
        self.n_masks = len(masks)
        self.simhash_masks = <uint64_t *>malloc(max(1, self.n_masks) * sizeof(uint64_t))
        self.signature = <uint32_t *>malloc(num_perm * sizeof(uint32_t))
        self.simhash_counts = <uint32_t *>malloc(64 * sizeof(uint32_t))
        if not (self.band_mult and self.simhash_masks and self.signature and self.simhash_counts):
            raise MemoryError()
        for i, value in enumerate(seeded_constants(seed, "band", rows)):
            self.band_mult[i] = <uint64_t>value | 1
        for i, value in enumerate(masks):
            self.simhash_masks[i] = <uint64_t>value
        self.shingles.data = NULL
        self.shingles.len = self.shingles.cap = 0

    def __dealloc__(self):
        free(self.band_mult)
        free(self.simhash_masks)
        free(self.signature)
        free(self.simhash_counts)
        free(self.shingles.data)

    @property
    def key_count(self):
        """Bucket keys per page: the digest, the bands and the SimHash tables."""
        return 1 + self.bands + self.n_masks

    # -- Python access to the parts (tests check them against their definitions) ------------------
    def shingles_of(self, bytes tokens):
        """Shingle hashes of token hashes (bytes of little-endian uint64, both)."""
        cdef size_t n = PyBytes_GET_SIZE(tokens) // 8
        if n == 0:
            return b""
        self._shingle(<const uint64_t *>PyBytes_AS_STRING(tokens), n)
        return PyBytes_FromStringAndSize(<char *>self.shingles.data, self.shingles.len * 8)

    def minhash_of(self, bytes shingles):
        """MinHash signature (``num_perm`` little-endian uint32) of shingle hashes."""
        self._load(shingles)
        self._minhash()
        return PyBytes_FromStringAndSize(<char *>self.signature, self.num_perm * 4)

    def simhash_of(self, bytes shingles):
        """SimHash of shingle hashes."""
        self._load(shingles)
        return self._simhash()

    cdef int _load(self, bytes shingles) except -1:
        cdef size_t i, n = PyBytes_GET_SIZE(shingles) // 8
        cdef uint64_t v
        if n == 0:
            raise ValueError("no shingles")
        self.shingles.len = 0
        for i in range(n):
            memcpy(&v, PyBytes_AS_STRING(shingles) + 8 * i, 8)
            if u64buf_push(&self.shingles, v) < 0:
                raise MemoryError()
        return 0

    cdef int _shingle(self, const uint64_t *tokens, size_t n) except -1 nogil:
        cdef size_t i, j, width = self.shingle_size if <size_t>self.shingle_size < n else n
        cdef size_t count = n - width + 1
        cdef uint64_t acc
        self.shingles.len = 0
        for i in range(count):
            acc = tokens[i]
            for j in range(1, width):
                acc = (acc * _PRIME) ^ tokens[i + j]
            if u64buf_push(&self.shingles, mix64(acc)) < 0:
                raise MemoryError()
        return 0

    cdef int _bin(self, uint64_t x) noexcept nogil:
        if self.bin_shift:
            return <int>(x >> self.bin_shift)
        return <int>(((x >> 32) * <uint64_t>self.num_perm) >> 32)

    cdef void _minhash(self) noexcept nogil:
        cdef int k = self.num_perm, b, j
        cdef size_t i
        cdef uint64_t x, step
        cdef uint32_t v
        cdef uint32_t *sig = self.signature
        cdef uint8_t filled_stack[1024]
        cdef uint8_t *filled = &filled_stack[0]
        if k > 1024:
            filled = <uint8_t *>malloc(k)
        for b in range(k):
            sig[b] = _EMPTY
        for i in range(self.shingles.len):
            x = mix64(self.shingles.data[i] ^ self.minhash_salt)
            b = self._bin(x)
            v = <uint32_t>x
            if v < sig[b]:
                sig[b] = v
        if filled == NULL:
            return
        for b in range(k):
            filled[b] = sig[b] != _EMPTY
        for b in range(k):
            if filled[b]:
                continue
            step = 0
            while True:  # a probe sequence ends at a non-empty bin (there is at least one)
                j = self._bin(mix64(((<uint64_t>b) << 32) ^ step ^ self.probe_seed))
                if filled[j]:
                    sig[b] = sig[j]
                    break
                step += 1
        if k > 1024:
            free(filled)

    cdef uint64_t _simhash(self) noexcept nogil:
        """Bit ``j`` set when more than half of the shingles have bit ``j`` set.

        Counted eight bits at a time: ``acc[k]`` holds, in byte ``b``, how many shingles so far
        have bit ``8b + k`` set (``(s >> k) & 0x0101...01`` adds one per byte), emptied into
        the 64 totals every 255 shingles, before a byte can overflow.
        """
        cdef uint32_t *counts = self.simhash_counts
        cdef size_t i, n = self.shingles.len, start
        cdef int k, b
        cdef uint64_t s, fp = 0
        cdef uint64_t acc[8]
        cdef uint64_t L = 0x0101010101010101ULL
        memset(counts, 0, 64 * sizeof(uint32_t))
        start = 0
        while start < n:
            memset(acc, 0, sizeof(acc))
            for i in range(start, min(n, start + 255)):
                s = self.shingles.data[i]
                acc[0] += s & L
                acc[1] += (s >> 1) & L
                acc[2] += (s >> 2) & L
                acc[3] += (s >> 3) & L
                acc[4] += (s >> 4) & L
                acc[5] += (s >> 5) & L
                acc[6] += (s >> 6) & L
                acc[7] += (s >> 7) & L
            for k in range(8):
                for b in range(8):
                    counts[8 * b + k] += <uint32_t>((acc[k] >> (8 * b)) & 0xFF)
            start += 255
        for k in range(64):
            if <uint64_t>counts[k] * 2 > n:
                fp |= 1ULL << k
        return fp

    cdef int sketch(self, const uint64_t *tokens, size_t n, uint64_t host_salt, bint salted,
                    unsigned char *digest, uint64_t *simhash, uint64_t *keys) except -1 nogil:
        """Sketch a non-empty token-hash array: ``digest`` (16 bytes), ``simhash``, ``keys``
        (:attr:`key_count` values) and the MinHash in ``self.signature``."""
        cdef uint64_t da, db, value, fp
        cdef int b, j, t, nk = 1 + self.bands + self.n_masks
        da = hash_bytes(<const unsigned char *>tokens, n * 8, self.digest_seed_a)
        db = hash_bytes(<const unsigned char *>tokens, n * 8, self.digest_seed_b)
        memcpy(digest, &da, 8)
        memcpy(digest + 8, &db, 8)
        self._shingle(tokens, n)
        self._minhash()
        fp = self._simhash()
        simhash[0] = fp
        keys[0] = da
        for b in range(self.bands):
            value = 0
            for j in range(self.rows):
                value += <uint64_t>self.signature[b * self.rows + j] * self.band_mult[j]
            keys[1 + b] = value
        for t in range(self.n_masks):
            keys[1 + self.bands + t] = fp & self.simhash_masks[t]
        for t in range(nk):
            value = keys[t] ^ host_salt if salted else keys[t]
            keys[t] = (mix64(value) & _LOW56) | ((<uint64_t>t) << 56)
        return 0


# -- the profile ---------------------------------------------------------------------------------------
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


cdef bint _same_words(const uint16_t *a, int na, const uint16_t *b, int nb, uint16_t ignore) noexcept:
    """Two word sets name the same thing: one holds the other (a title decorated with a site
    name), or they share 80% of their words. Words with bit ``ignore`` set are left out (an empty
    set then names nothing, and agrees)."""
    cdef int i = 0, j = 0, common = 0, ka = 0, kb = 0
    for i in range(na):
        ka += not (a[i] & ignore)
    for j in range(nb):
        kb += not (b[j] & ignore)
    if ka == 0 or kb == 0:
        return True
    i = j = 0
    while i < na and j < nb:
        if a[i] & ignore:
            i += 1
        elif b[j] & ignore:
            j += 1
        elif a[i] == b[j]:
            common += 1
            i += 1
            j += 1
        elif a[i] < b[j]:
            i += 1
        else:
            j += 1
    return common == ka or common == kb or common * 5 >= 4 * (ka + kb - common)


cdef int _names(const Profile *pa, const Profile *pb, uint16_t ignore) noexcept:
    """1 when the two pages' names (headings, titles) agree, 0 when they name different things,
    -1 when no comparison can be made (see :func:`names_relation`)."""
    cdef bint made = False, like = True
    if pa.nh and pb.nh:
        made = True
        like = _same_words(pa.heading, pa.nh, pb.heading, pb.nh, ignore)
    if pa.nt and pb.nt:
        made = True
        like = like and _same_words(pa.title, pa.nt, pb.title, pb.nt, ignore)
    if made and like:
        return 1
    if pa.nh and pb.nt:
        made = True
        if _same_words(pa.heading, pa.nh, pb.title, pb.nt, ignore):
            return 1
    if pa.nt and pb.nh:
        made = True
        if _same_words(pa.title, pa.nt, pb.heading, pb.nh, ignore):
            return 1
    return 0 if made else -1


#: :func:`names_relation` results.
NAMES_AGREE = 0
NAMES_DIFFER = 1
NAMES_DIFFER_IN_NUMBERS = 2


def names_relation(bytes a, bytes b):
    """How two pages' names relate: ``NAMES_AGREE``, ``NAMES_DIFFER`` or ``NAMES_DIFFER_IN_NUMBERS``.

    A page's names are its heading (first ``<h1>``, else a title-classed element) and its
    ``<title>``; a qualified name (``scipy.sparse.csr_matrix.mean``) or a dotted number is one
    word. Like is compared with like: heading with heading, title with title, each made where
    both pages have one; the names agree when every such comparison finds the same words
    (``_same_words``). Where one does not (a copy in another template, whose heading is the
    original's ``<title>``), a page's heading compared with the other's title may still find
    them. They differ when comparisons were made and none of these agrees; they differ *in
    numbers* when leaving out the numbers (version, part or chapter numbers) makes the
    like-for-like comparisons agree: another release, part or chapter of a document.
    """
    cdef Profile pa, pb
    _parse(a, &pa)
    _parse(b, &pb)
    if _names(&pa, &pb, 0) != 0:
        return NAMES_AGREE
    if _names(&pa, &pb, 0x8000) == 1:
        return NAMES_DIFFER_IN_NUMBERS
    return NAMES_DIFFER


def heads_agree(bytes a, bytes b):
    """Whether two pages' names allow them to be one document (:func:`names_relation` is
    ``NAMES_AGREE``)."""
    return names_relation(a, b) == NAMES_AGREE


cdef int _token_shingles(const uint8_t *t, int n, int k, uint64_t *out) noexcept nogil:
    """The shingles of ``k`` consecutive 8-bit tokens (one of all when ``n < k``), sorted and
    distinct; returns their count."""
    cdef int i, j, count = 0, width = k if k < n else n
    cdef uint64_t acc
    for i in range(n - width + 1):
        acc = 0
        for j in range(width):
            acc = mix64(acc * _PRIME ^ t[i + j])
        out[count] = acc
        count += 1
    _sort_u64(out, count)
    j = 0
    for i in range(count):
        if i == 0 or out[i] != out[j - 1]:
            out[j] = out[i]
            j += 1
    return j


cdef void _sort_u64(uint64_t *a, int n) noexcept nogil:
    """Insertion sort into runs of 16, then bottom-up merges through a stack buffer (n <= 256)."""
    cdef int i, j, width, lo, mid, hi, x, y, z
    cdef uint64_t v
    cdef uint64_t tmp[_SHORT_TOKENS]
    lo = 0
    while lo < n:
        hi = lo + 16 if lo + 16 < n else n
        for i in range(lo + 1, hi):
            v = a[i]
            j = i - 1
            while j >= lo and a[j] > v:
                a[j + 1] = a[j]
                j -= 1
            a[j + 1] = v
        lo += 16
    width = 16
    while width < n:
        lo = 0
        while lo < n:
            mid = lo + width if lo + width < n else n
            hi = lo + 2 * width if lo + 2 * width < n else n
            x, y, z = lo, mid, 0
            while x < mid and y < hi:
                if a[x] <= a[y]:
                    tmp[z] = a[x]
                    x += 1
                else:
                    tmp[z] = a[y]
                    y += 1
                z += 1
            while x < mid:
                tmp[z] = a[x]
                x += 1
                z += 1
            while y < hi:
                tmp[z] = a[y]
                y += 1
                z += 1
            memcpy(a + lo, tmp, z * sizeof(uint64_t))
            lo += 2 * width
        width *= 2


def exact_similarity(bytes a, bytes b, int shingle_size):
    """The exact Jaccard similarity of two short pages' shingles of ``shingle_size`` tokens,
    from the token sequences their profiles keep; ``-1.0`` when either page is too long to
    keep it (see ``SHORT_TOKENS``). Tokens are their hashes' top 8 bits: a shingle that differs
    from another in one token is taken for it with probability ``2^-8``, so of the ``d``
    shingles two texts do not share, about ``d / 256`` are counted as shared (0.05 of 13 at
    J = 0.9 between two pages of 250 tokens): a bias below the second decimal."""
    cdef Profile pa, pb
    cdef uint64_t sa[_SHORT_TOKENS]
    cdef uint64_t sb[_SHORT_TOKENS]
    cdef int na, nb, i = 0, j = 0, common = 0
    _parse(a, &pa)
    _parse(b, &pb)
    if pa.ntok == 0 or pb.ntok == 0 or shingle_size < 1:
        return -1.0
    na = _token_shingles(pa.tokens, pa.ntok, shingle_size, sa)
    nb = _token_shingles(pb.tokens, pb.ntok, shingle_size, sb)
    while i < na and j < nb:
        if sa[i] == sb[j]:
            common += 1
            i += 1
            j += 1
        elif sa[i] < sb[j]:
            i += 1
        else:
            j += 1
    return common / <double>(na + nb - common)


cdef int _coarsen(const uint16_t *chunks, int count, uint16_t *out) noexcept:
    """Merge level-L chunks into level-L+1 chunks (flags are lost); returns the new count."""
    cdef int i, m = 0
    cdef uint32_t h = 0, length = 0, clen
    for i in range(count):
        clen = chunks[2 * i + 1]
        h = (h * _pow_mod15(_CHUNK_BASE, clen) + (chunks[2 * i] & 0x7FFF)) & 0x7FFF
        length += clen
        if chunks[2 * i] & 0x8000 or i == count - 1:
            out[2 * m] = <uint16_t>h
            out[2 * m + 1] = <uint16_t>(length if length < 65535 else 65535)
            m += 1
            h = 0
            length = 0
    return m


def edit_regions(bytes a, bytes b, int anchor_tokens=5):
    """The regions where two pages' texts differ, from their edit sketches.

    Chunk sequences (brought to one level) are aligned by a longest common subsequence; every
    maximal run of unmatched chunks between two matches is one region, with the tokens it holds
    on each side. Returns ``(level, regions)``: the level compared at (chunks of ``2**level``
    tokens on average) and a list of ``(tokens_a, tokens_b)``; ``None`` when the pages are too
    different in length to be compared (levels more than one apart). Two short pages (see
    ``SHORT_TOKENS``) are aligned token by token (level 0); there, a common run of fewer than
    ``anchor_tokens`` tokens (a shingle) between two places is no anchor but a coincidence (a
    "the" or a "de" in two rewritten sentences), and the two places and the run are one place.
    """
    cdef Profile pa, pb
    cdef uint16_t ca[512]
    cdef uint16_t cb[512]
    cdef int na, nb, i, j
    cdef uint16_t *dp
    cdef int w
    cdef long ra = 0, rb = 0, run = 0, anchor = 1
    cdef bint open_region = False
    _parse(a, &pa)
    _parse(b, &pb)
    if pa.ntok and pb.ntok:
        na, nb = pa.ntok, pb.ntok
        for i in range(na):
            ca[2 * i] = pa.tokens[i]
            ca[2 * i + 1] = 1
        for i in range(nb):
            cb[2 * i] = pb.tokens[i]
            cb[2 * i + 1] = 1
        pa.level = pb.level = 0
        anchor = anchor_tokens if anchor_tokens > 1 else 1
    elif abs(pa.level - pb.level) > 1:
        return None
    else:
        if pa.level < pb.level:
            na = _coarsen(pa.chunks, pa.count, ca)
        else:
            na = pa.count
            for i in range(2 * na):
                ca[i] = pa.chunks[i]
        if pb.level < pa.level:
            nb = _coarsen(pb.chunks, pb.count, cb)
        else:
            nb = pb.count
            for i in range(2 * nb):
                cb[i] = pb.chunks[i]
    for i in range(na):
        ca[2 * i] &= 0x7FFF
    for i in range(nb):
        cb[2 * i] &= 0x7FFF
    # suffix LCS table: dp[i][j] = LCS of ca[i:], cb[j:]
    w = nb + 1
    dp = <uint16_t *>malloc((na + 1) * w * sizeof(uint16_t))
    if dp == NULL:
        raise MemoryError()
    try:
        for i in range(na, -1, -1):
            for j in range(nb, -1, -1):
                if i == na or j == nb:
                    dp[i * w + j] = 0
                elif ca[2 * i] == cb[2 * j] and ca[2 * i + 1] == cb[2 * j + 1]:
                    dp[i * w + j] = dp[(i + 1) * w + j + 1] + 1
                else:
                    dp[i * w + j] = max(dp[(i + 1) * w + j], dp[i * w + j + 1])
        regions = []
        i = j = 0
        while i < na or j < nb:
            if i < na and j < nb and ca[2 * i] == cb[2 * j] and ca[2 * i + 1] == cb[2 * j + 1] and dp[i * w + j] == dp[(i + 1) * w + j + 1] + 1:
                if open_region:
                    # a common run closes the place only once it is an anchor (see below)
                    run += ca[2 * i + 1]
                    if run >= anchor:
                        regions.append((ra, rb))
                        ra = rb = run = 0
                        open_region = False
                i += 1
                j += 1
            else:
                if run:  # a common run too short to anchor the texts: part of the place
                    ra += run
                    rb += run
                    run = 0
                if j >= nb or (i < na and dp[(i + 1) * w + j] >= dp[i * w + j + 1]):
                    ra += ca[2 * i + 1]
                    i += 1
                else:
                    rb += cb[2 * j + 1]
                    j += 1
                open_region = True
        if open_region:
            regions.append((ra, rb))
        return max(pa.level, pb.level), regions
    finally:
        free(dp)
