# Part of the sketcher, included by sketch.pyx (one compiled module; see its docstring).
# Seeded hashes: constants, digests of bytes and strings, string hashes.

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
