"""Stable, seeded hashing in numpy: token hashes, word/char n-gram shingles, key mixing.

Every hash here is a pure function of its input bytes and the seed (xxh3 and fixed 64-bit
arithmetic), so values are identical across processes, machines and Python versions. Python's
``hash()`` is never used.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt
import xxhash

U64 = npt.NDArray[np.uint64]

_PRIME = np.uint64(0x9E3779B97F4A7C15)  # 2**64 / golden ratio, odd
_MIX1 = np.uint64(0xBF58476D1CE4E5B9)
_MIX2 = np.uint64(0x94D049BB133111EB)
_S30, _S27, _S31 = np.uint64(30), np.uint64(27), np.uint64(31)


def mix64(values: U64) -> U64:
    """SplitMix64 finaliser, vectorised: a bijection on uint64 with good avalanche."""
    z = values ^ (values >> _S30)
    z = z * _MIX1
    z ^= z >> _S27
    z *= _MIX2
    z ^= z >> _S31
    return z


class _TokenHashCache(dict[str, int]):
    """``token -> seeded xxh3-64``, filled on first use (``dict.__missing__``)."""

    def __init__(self, seed: int) -> None:
        super().__init__()
        self.seed = seed

    def __missing__(self, token: str) -> int:
        value = xxhash.xxh3_64_intdigest(token.encode("utf-8", "surrogatepass"), self.seed)
        self[token] = value
        return value


class TokenHasher:
    """Seeded xxh3-64 of tokens, each distinct token hashed once.

    Word frequencies are Zipfian: a page's tokens are mostly words seen on earlier pages, so a
    bounded memo turns most hashes into one C-level dict lookup (``map`` over
    ``dict.__getitem__``), about 2.5x faster than hashing every token. The values are those of
    :func:`token_hashes`; the memo only saves work.
    """

    def __init__(self, seed: int, max_entries: int = 200_000) -> None:
        self._cache = _TokenHashCache(seed)
        self._max_entries = max_entries

    def __call__(self, tokens: list[str]) -> U64:
        """Hashes of ``tokens``, in order."""
        if len(self._cache) > self._max_entries:
            self._cache.clear()
        return np.array(list(map(self._cache.__getitem__, tokens)), dtype=np.uint64)


def token_hashes(tokens: list[str], seed: int) -> U64:
    """Hash every token with seeded xxh3-64 (no memo; see :class:`TokenHasher`)."""
    digest = xxhash.xxh3_64_intdigest
    return np.fromiter(
        (digest(t.encode("utf-8", "surrogatepass"), seed) for t in tokens), dtype=np.uint64, count=len(tokens)
    )


def shingle_hashes(hashed_tokens: U64, size: int) -> U64:
    """Hashes of all contiguous n-grams of ``size`` tokens, built from per-token hashes.

    ``s_i = mix64(((((t_i * P) ^ t_{i+1}) * P) ^ ...) ^ t_{i+size-1})`` (wrapping uint64); the
    multiply between steps makes the combination order-sensitive. A text shorter than ``size``
    tokens yields one shingle of all its tokens, so short texts still have a sketch.

    Args:
        hashed_tokens: output of :func:`token_hashes`.
        size: shingle length in tokens.

    Returns:
        One uint64 per shingle (``max(1, n - size + 1)`` values; none for no tokens).
    """
    n = len(hashed_tokens)
    if n == 0:
        return np.empty(0, dtype=np.uint64)
    width = min(size, n)
    count = n - width + 1
    acc = hashed_tokens[:count].copy()
    for j in range(1, width):
        acc *= _PRIME
        acc ^= hashed_tokens[j : j + count]
    return mix64(acc)


def seeded_constants(seed: int, label: str, count: int) -> U64:
    """``count`` stable pseudo-random uint64 constants for ``(seed, label)``."""
    digest = xxhash.xxh3_64_intdigest
    return np.array([digest(f"{label}:{i}".encode(), seed) for i in range(count)], dtype=np.uint64)


def digest128(data: bytes, seed: int) -> bytes:
    """128-bit xxh3 digest of bytes (the exact-duplicate key hashes a page's token hashes)."""
    return xxhash.xxh3_128_digest(data, seed)


def string_hash(text: str, seed: int) -> int:
    """Stable 64-bit hash of a short string (hosts, labels)."""
    return xxhash.xxh3_64_intdigest(text.encode("utf-8", "surrogatepass"), seed)
