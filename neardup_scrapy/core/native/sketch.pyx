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

The module is one extension split by concern into the files it includes (``_sketch/``): seeded
hashes and digests (``hashes.pxi``), the profile's layout, writing and reading (``profile.pxi``),
the comparison of two pages' names (``names.pxi``), the exact similarity of two short pages
(``exact.pxi``) and the edit regions (``edits.pxi``); the :class:`Sketcher` is here, its fields
and :func:`build_profile` declared in ``sketch.pxd``.
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


include "_sketch/hashes.pxi"
include "_sketch/profile.pxi"
include "_sketch/names.pxi"
include "_sketch/exact.pxi"
include "_sketch/edits.pxi"


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
