# Part of the sketcher, included by sketch.pyx (one compiled module; see its docstring).
# Edit regions: where two pages' texts differ, from their edit sketches.

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
