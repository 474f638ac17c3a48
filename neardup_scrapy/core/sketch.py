"""From normalised tokens to everything the index needs: digest, MinHash, SimHash and bucket keys.

Bucket keys are uint64: the top 8 bits name the table (0: exact digests, 1..b: MinHash bands,
then the SimHash block tables), the low 56 bits the bucket. With ``scope="host"`` every key is
salted with the host, so only pages of one host ever meet.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from .hashing import TokenHasher, digest128, mix64, seeded_constants, shingle_hashes, string_hash
from .minhash import MinHasher, low16
from .params import DetectorParams
from .simhash import block_masks, simhash64

U64 = npt.NDArray[np.uint64]
U32 = npt.NDArray[np.uint32]
U16 = npt.NDArray[np.uint16]

_LOW56 = np.uint64((1 << 56) - 1)
_S56 = np.uint64(56)


@dataclass(frozen=True)
class Sketch:
    """One page's sketches.

    Attributes:
        tokens: number of tokens.
        digest: 16-byte xxh3-128 of the normalised token sequence.
        signature: MinHash values (uint32, ``num_perm``).
        stored: the signature as stored (low 16 bits).
        simhash: 64-bit SimHash.
        exact_key: the exact-digest table key.
        band_keys: one key per MinHash band.
        simhash_keys: one key per SimHash block table.
    """

    tokens: int
    digest: bytes
    signature: U32
    stored: U16
    simhash: int
    exact_key: U64
    band_keys: U64
    simhash_keys: U64


class Sketcher:
    """Computes :class:`Sketch` objects for one :class:`DetectorParams`."""

    def __init__(self, params: DetectorParams) -> None:
        self.params = params
        self._minhasher = MinHasher(params.num_perm, params.seed)
        self._token_hasher = TokenHasher(params.seed)
        bands, rows = params.lsh_bands, params.lsh_rows
        self._bands, self._rows = bands, rows
        self._band_mult = seeded_constants(params.seed, "band", rows) | np.uint64(1)
        self._simhash_masks = np.array(block_masks(params.simhash_distance), dtype=np.uint64)
        tables = np.arange(1, 1 + bands + len(self._simhash_masks), dtype=np.uint64) << _S56
        self._band_tables = tables[:bands]
        self._simhash_tables = tables[bands:]

    @property
    def table_count(self) -> int:
        """Bucket tables in all (exact + bands + SimHash tables)."""
        return 1 + self._bands + len(self._simhash_masks)

    def sketch(self, tokens: list[str], host: str) -> Sketch:
        """Sketch a non-empty token list of a page on ``host``."""
        seed = self.params.seed
        shingles = shingle_hashes(self._token_hasher(tokens), self.params.shingle_size)
        return self.assemble(
            len(tokens),
            digest128(" ".join(tokens), seed),
            self._minhasher.signature(shingles),
            simhash64(shingles),
            host,
        )

    def assemble(self, tokens: int, digest: bytes, signature: U32, fingerprint: int, host: str) -> Sketch:
        """Derive the bucket keys from a page's digest, MinHash signature and SimHash."""
        salt = np.uint64(string_hash(host, self.params.seed)) if self.params.scope == "host" else np.uint64(0)
        exact = np.array([int.from_bytes(digest[:8], "little")], dtype=np.uint64)
        used = signature[: self._bands * self._rows].astype(np.uint64).reshape(self._bands, self._rows)
        band = np.zeros(self._bands, dtype=np.uint64)
        for j in range(self._rows):
            band = (band ^ used[:, j]) * self._band_mult[j]
        simhash_values = self._simhash_masks & np.uint64(fingerprint)
        return Sketch(
            tokens=tokens,
            digest=digest,
            signature=signature,
            stored=low16(signature),
            simhash=fingerprint,
            exact_key=(mix64(exact ^ salt) & _LOW56),
            band_keys=(mix64(band ^ salt) & _LOW56) | self._band_tables,
            simhash_keys=(mix64(simhash_values ^ salt) & _LOW56) | self._simhash_tables,
        )
