"""Stable 64-bit mixing in numpy (the stores' bucket fields).

Per-page hashing (tokens, shingles, sketches) is compiled: :mod:`neardup_scrapy.core.native`.
Every hash of the project is a pure function of its input bytes and the seed, with fixed
64-bit arithmetic, so values are identical across processes, machines and Python versions;
Python's ``hash()`` is never used.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

U64 = npt.NDArray[np.uint64]

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
