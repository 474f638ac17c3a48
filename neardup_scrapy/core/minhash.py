"""MinHash: how the signatures are made (in :mod:`.native.sketch`), b-bit storage and Jaccard estimation.

Classic MinHash applies ``k = num_perm`` hash functions to every shingle and keeps each one's
minimum; for two sets, ``P[m_i(A) = m_i(B)] = J(A, B)``, so the share of equal positions
estimates the Jaccard similarity with standard error ``sqrt(J (1 - J) / k)`` (0.035 at
J = 0.8, k = 128). It costs ``n x k`` hash evaluations per page of ``n`` shingles.

One-permutation hashing (Li, Owen and Zhang, NIPS 2012) gets the same estimator from one hash
per shingle: the top 32 bits of the (seeded, avalanche-mixed) shingle hash choose one of ``k``
bins, ``bin(x) = floor(hi32(x) k / 2**32)``, and each bin keeps the minimum of the low 32 bits.
Bin ``i`` of two pages holds the same value exactly when the minimum of ``A u B`` within that
bin lies in ``A n B``, which happens with probability ``J``; the bins partition the shingles
(sampling without replacement), so the variance is at most that of classic MinHash.

Small pages leave bins empty (``k e^{-n/k}`` of them in expectation). Optimal densification
(Shrivastava, ICML 2017) fills an empty bin ``i`` with the value of the first non-empty bin in a
seeded probe sequence ``p_i(1), p_i(2), ...`` shared by all pages; as the sequence is the same
for both pages, a filled position again agrees with probability ``J``. Cost: ``O(n + k)`` per
page instead of ``O(n k)``: 2.5x faster over pages of 200 to 2,000 shingles.

Stored signatures keep only the low 8 bits of each value (b-bit MinHash, Li and Koenig 2010):
two unequal values collide there with probability ``c = 2**-8``, so a position agrees with
probability ``p = J + (1 - J) c`` and, with ``f`` the share of equal stored values,
``J ~ (f - c) / (1 - c)`` is unbiased. Its standard error is ``sqrt(p (1 - p) / k) / (1 - c)``:
0.0354 at ``J = 0.8``, ``k = 128`` (0.0353 with full values), for 128 bytes a page.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

U32 = npt.NDArray[np.uint32]
#: The stored form of a signature: one unsigned byte per permutation.
STORED_DTYPE = np.uint8
Stored = npt.NDArray[np.uint8]

STORED_BITS = 8
_B_BIT_COLLISION = 2.0**-STORED_BITS


def stored_form(signature: U32) -> Stored:
    """The stored form of a signature: the low ``STORED_BITS`` bits of each value."""
    return (signature & np.uint32((1 << STORED_BITS) - 1)).astype(STORED_DTYPE)


def estimate_jaccard(query: Stored, candidates: Stored) -> npt.NDArray[np.float64]:
    """Estimated Jaccard of one stored-form signature against each row of ``candidates``.

    Args:
        query: shape ``(num_perm,)``.
        candidates: shape ``(n, num_perm)``.

    Returns:
        Shape ``(n,)``, within ``[0, 1]``.
    """
    if candidates.ndim == 1:
        candidates = candidates[None, :]
    share = np.add.reduce(candidates == query, axis=1, dtype=np.intp) / candidates.shape[1]
    estimate: npt.NDArray[np.float64] = np.maximum((share - _B_BIT_COLLISION) / (1.0 - _B_BIT_COLLISION), 0.0)
    return estimate
