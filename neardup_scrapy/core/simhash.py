"""64-bit SimHash (Charikar 2002; computed in :mod:`.native.sketch`) and the permuted-block tables of
Manku, Jain and Das Sarma (2007).

SimHash: every shingle hash votes on each of the 64 bits (+1 where the bit is set, -1 where
not; a shingle that occurs twice votes twice); bit ``j`` of the fingerprint is 1 where the vote
is positive. For two documents with shingle-count vectors at angle ``theta``, each bit differs
with probability ``theta / pi``, so the expected Hamming distance is ``64 theta / pi``.

Finding all fingerprints within ``k`` bits without a linear scan: split the 64 bits into
``m > k`` blocks. Two fingerprints that differ in at most ``k`` bits agree on at least
``m - k`` whole blocks, so for every choice of ``m - k`` blocks we keep one table keyed on those
blocks' bits; a query looks up its key in each of the ``C(m, m - k)`` tables and every
fingerprint within ``k`` bits is found in at least one. We use ``m = k + 2``: tables keyed on
two blocks (about 25 bits at ``k = 3``, 10 tables), so a bucket holds few unrelated pages even
at millions of pages, and the table count stays small.
"""

from __future__ import annotations

from functools import lru_cache
from itertools import combinations

import numpy as np
import numpy.typing as npt

U64 = npt.NDArray[np.uint64]

_BITWISE_COUNT = getattr(np, "bitwise_count", None)  # numpy >= 2.0


def hamming(a: int, b: int) -> int:
    """Number of differing bits of two 64-bit fingerprints (symmetric)."""
    return (a ^ b).bit_count()


def hamming_many(query: int, fingerprints: U64) -> npt.NDArray[np.int64]:
    """Hamming distance of ``query`` to each fingerprint."""
    diff = np.bitwise_xor(fingerprints, np.uint64(query))
    if _BITWISE_COUNT is not None:
        counted: npt.NDArray[np.int64] = _BITWISE_COUNT(diff).astype(np.int64)
        return counted
    counts: npt.NDArray[np.int64] = np.unpackbits(diff.view(np.uint8).reshape(-1, 8), axis=1).sum(
        axis=1, dtype=np.int64
    )
    return counts


@lru_cache(maxsize=16)
def block_masks(max_distance: int) -> tuple[int, ...]:
    """Bit masks of the permuted-block tables for ``max_distance``.

    ``m = max_distance + 2`` blocks of near-equal width and one mask per choice of
    ``m - max_distance`` (= 2) of them; ``max_distance = 0`` gives one table over all bits.
    """
    if max_distance == 0:
        return ((1 << 64) - 1,)
    blocks = max_distance + 2
    edges = [round(i * 64 / blocks) for i in range(blocks + 1)]
    block_bits = [((1 << (edges[i + 1] - edges[i])) - 1) << edges[i] for i in range(blocks)]
    masks = []
    for chosen in combinations(range(blocks), blocks - max_distance):
        mask = 0
        for i in chosen:
            mask |= block_bits[i]
        masks.append(mask)
    return tuple(masks)
