"""A page's sketches as the index uses them: digest, MinHash, SimHash, bucket keys and profile.

The compiled pass (:mod:`neardup_scrapy.core.native.page`) computes them; :class:`Sketch` holds
them as numpy views. Bucket keys are uint64: the top 8 bits name the table (0: exact digests,
1..b: MinHash bands, then the SimHash block tables, 252: canonical addresses, 253/254: url
resources, 255: urls), the low
56 bits the bucket. With
``scope="host"`` every content key is salted with the host, so only pages of one host meet.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from typing import Any

import numpy as np
import numpy.typing as npt

from .minhash import Stored, stored_form
from .native.sketch import string_hash

U64 = npt.NDArray[np.uint64]
U32 = npt.NDArray[np.uint32]

#: Table of the url keys (a page fetched again is found by its url).
URL_TABLE = 255
#: Tables of the resource keys (:func:`resource_keys`): a url without a query is the *base* of
#: its resource, a url with one a *view* of it.
RESOURCE_BASE_TABLE = 253
RESOURCE_VIEW_TABLE = 254
#: Table of the canonical keys (:func:`canonical_key`): a page that names another address
#: canonical is indexed under that address, so the page at it finds its copies.
CANONICAL_TABLE = 252
_CANONICAL_SALT = 0x43414E4F4E494341
_LOW56 = (1 << 56) - 1
_BASE_SALT = 0x5245534F55524345
_VIEW_SALT = 0x56494557565F4B59


@dataclass(frozen=True)
class Sketch:
    """One page's sketches.

    Attributes:
        tokens: number of tokens.
        digest: 16-byte exact-duplicate digest of the token sequence.
        signature: MinHash values (uint32, ``num_perm``).
        stored: the signature as stored (low 8 bits, :func:`.minhash.stored_form`).
        simhash: 64-bit SimHash.
        keys: all bucket keys: exact, bands, SimHash tables.
        bands: number of MinHash band keys in ``keys`` (after the exact key).
        profile: the verification profile (edit sketch, heading and title words).
        canonical: the page's ``<link rel=canonical>`` href (``""`` when none).
    """

    tokens: int
    digest: bytes
    signature: U32
    stored: Stored
    simhash: int
    keys: U64
    bands: int
    profile: bytes
    canonical: str = ""

    @property
    def exact_key(self) -> U64:
        """The exact-digest table key."""
        return self.keys[:1]

    @property
    def band_keys(self) -> U64:
        """One key per MinHash band."""
        return self.keys[1 : 1 + self.bands]

    @property
    def simhash_keys(self) -> U64:
        """One key per SimHash block table."""
        return self.keys[1 + self.bands :]

    @property
    def simhash_tables(self) -> int:
        """``len(simhash_keys)``, without making the slice."""
        return max(len(self.keys) - 1 - self.bands, 0)

    @classmethod
    def from_native(cls, page: Any, bands: int) -> Sketch:
        """The sketch of a :class:`~neardup_scrapy.core.native.page.PageSketch` with status ``ok``."""
        signature = np.frombuffer(page.signature, dtype="<u4").astype(np.uint32, copy=False)
        return cls(
            tokens=int(page.tokens),
            digest=page.digest,
            signature=signature,
            stored=stored_form(signature),
            simhash=int(page.simhash),
            keys=np.frombuffer(page.keys, dtype="<u8").astype(np.uint64, copy=False),
            bands=bands,
            profile=page.profile,
            canonical=page.canonical,
        )


def url_key(url: str, seed: int) -> np.uint64:
    """The bucket key of a url (table :data:`URL_TABLE`): the same url is the same page."""
    return np.uint64((string_hash(url, seed) & _LOW56) | (URL_TABLE << 56))


def canonical_key(address: str, seed: int) -> np.uint64:
    """The bucket key (table :data:`CANONICAL_TABLE`) under which the pages that name ``address``
    canonical are indexed. The scheme is left out: a page fetched as ``http://`` is the address
    its copies name as ``https://``."""
    where = address.partition("://")[2] or address
    return np.uint64((string_hash(where, seed ^ _CANONICAL_SALT) & _LOW56) | (CANONICAL_TABLE << 56))


def resource_of(url: str) -> str:
    """A url without its query and fragment: the address of which the query selects a view."""
    return url.partition("#")[0].partition("?")[0]  # cut at the first of either


@lru_cache(maxsize=8)
def resource_keys(url: str, seed: int) -> tuple[np.uint64, np.uint64]:
    """``(lookup, insert)`` keys of a url's resource (:func:`resource_of`).

    A base (no query or fragment) is inserted under the base table and looks up the views; a
    view is inserted under the view table and looks up its base. A lookup of a view finds one page
    (its base) however many views an address has (``viewtopic.php?t=...``), and a base and
    its views meet in whichever order they come. Cached for the last few urls: one check asks
    for its url's keys up to three times (lookup, provisional and final commit).
    """
    resource = resource_of(url)
    # salted apart, so the two tables differ in every bit (stores may keep only the low ones)
    base = np.uint64((string_hash(resource, seed ^ _BASE_SALT) & _LOW56) | (RESOURCE_BASE_TABLE << 56))
    view = np.uint64((string_hash(resource, seed ^ _VIEW_SALT) & _LOW56) | (RESOURCE_VIEW_TABLE << 56))
    return (base, view) if resource != url else (view, base)


def host_salt(host: str, seed: int) -> int:
    """The salt of a host's bucket keys with ``scope="host"``."""
    return int(string_hash(host, seed))
