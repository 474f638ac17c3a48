# Part of the sketcher, included by sketch.pyx (one compiled module; see its docstring).
# Exact similarity of two short pages from the token sequences their profiles keep.

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
