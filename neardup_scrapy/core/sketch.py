"""From normalised tokens to everything the index needs: digest, MinHash, SimHash and bucket keys.

Bucket keys are uint64: the top 8 bits name the table (0: exact digests, 1..b: MinHash bands,
then the SimHash block tables), the low 56 bits the bucket. With ``scope="host"`` every key is
salted with the host, so only pages of one host ever meet.

The exact-duplicate digest is the xxh3-128 of the page's token hashes (little-endian uint64):
two pages get the same digest when their normalised token sequences are equal (up to a 64-bit
collision of two distinct tokens, about ``n^2 / 2^65`` for ``n`` distinct tokens ever seen).
A MinHash band's key is ``mix64(sum_j v_j m_j mod 2^64)`` over its rows' values ``v_j`` with
seeded odd multipliers ``m_j``.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from .hashing import TokenHasher, digest128, mix64, seeded_constants, shingle_hashes, string_hash
from .minhash import MinHasher, low16
from .params import DetectorParams
from .simhash import block_masks, simhash64
from .text import char_tokens, normalize_text
from .tokens import WordHasher

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
        digest: 16-byte xxh3-128 of the token hashes (the exact-duplicate key).
        signature: MinHash values (uint32, ``num_perm``).
        stored: the signature as stored (low 16 bits).
        simhash: 64-bit SimHash.
        exact_key: the exact-digest table key.
        band_keys: one key per MinHash band.
        simhash_keys: one key per SimHash block table.
        keys: all keys: exact, bands, SimHash tables (the three above are views of it).
    """

    tokens: int
    digest: bytes
    signature: U32
    stored: U16
    simhash: int
    exact_key: U64
    band_keys: U64
    simhash_keys: U64
    keys: U64


class Sketcher:
    """Computes :class:`Sketch` objects for one :class:`DetectorParams`."""

    def __init__(self, params: DetectorParams) -> None:
        self.params = params
        self._minhasher = MinHasher(params.num_perm, params.seed)
        if params.shingle_kind == "word":
            self._word_hasher: WordHasher | None = WordHasher(params.seed, params.mask_digits)
        else:
            self._word_hasher = None
            self._token_hasher = TokenHasher(params.seed)
        bands, rows = params.lsh_bands, params.lsh_rows
        self._bands, self._rows = bands, rows
        self._band_mult = seeded_constants(params.seed, "band", rows) | np.uint64(1)
        masks = block_masks(params.simhash_distance)
        self._simhash_masks = np.array(masks, dtype=np.uint64)
        self._tables = np.arange(1 + bands + len(masks), dtype=np.uint64) << _S56  # exact, bands, simhash
        self._host_salts: dict[str, np.uint64] = {}

    @property
    def table_count(self) -> int:
        """Bucket tables in all (exact + bands + SimHash tables)."""
        return len(self._tables)

    def token_hashes(self, text: str) -> U64:
        """Seeded xxh3-64 of the normalised tokens of ``text`` (words or characters, by params)."""
        if self._word_hasher is not None:
            return self._word_hasher(text)
        return self._token_hasher(char_tokens(normalize_text(text, self.params.mask_digits)))

    def sketch(self, token_hashes: U64, host: str) -> Sketch:
        """Sketch a page on ``host`` from its non-empty token hashes (:meth:`token_hashes`)."""
        shingles = shingle_hashes(token_hashes, self.params.shingle_size)
        return self.assemble(
            len(token_hashes),
            digest128(token_hashes.astype("<u8", copy=False).tobytes(), self.params.seed),
            self._minhasher.signature(shingles),
            simhash64(shingles),
            host,
        )

    def _salt(self, host: str) -> np.uint64:
        salt = self._host_salts.get(host)
        if salt is None:
            if len(self._host_salts) > 100_000:
                self._host_salts.clear()
            salt = self._host_salts[host] = np.uint64(string_hash(host, self.params.seed))
        return salt

    def assemble(self, tokens: int, digest: bytes, signature: U32, fingerprint: int, host: str) -> Sketch:
        """Derive the bucket keys from a page's digest, MinHash signature and SimHash."""
        bands = self._bands
        values = np.empty(len(self._tables), dtype=np.uint64)
        values[0] = int.from_bytes(digest[:8], "little")
        used = signature[: bands * self._rows].astype(np.uint64).reshape(bands, self._rows)
        np.matmul(used, self._band_mult, out=values[1 : 1 + bands])
        np.bitwise_and(self._simhash_masks, np.uint64(fingerprint), out=values[1 + bands :])
        if self.params.scope == "host":
            values ^= self._salt(host)
        keys = (mix64(values) & _LOW56) | self._tables
        return Sketch(
            tokens=tokens,
            digest=digest,
            signature=signature,
            stored=low16(signature),
            simhash=fingerprint,
            exact_key=keys[:1],
            band_keys=keys[1 : 1 + bands],
            simhash_keys=keys[1 + bands :],
            keys=keys,
        )
