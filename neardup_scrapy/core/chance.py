"""SimHash blocks shared by chance: index hits that are not candidates.

A SimHash block table finds the pages within ``d = simhash_distance`` bits of a page: ``d``
differing bits leave at least two of the ``d + 2`` blocks whole (pigeonhole), so every such page
shares all the bits of one table's mask (about ``128 / (d + 2)`` bits). A page that shares them
but differs in more than ``d`` bits overall shares them by chance, and chance grows with the
index: among ``n`` pages a lookup meets about ``C(d + 2, 2) n / 2^(128 / (d + 2))`` of them in
its ``C(d + 2, 2)`` tables, which for ``d = 3`` is 0.02 at 100k pages, 0.2 at 1M and 2 at 10M.
Counted as candidates, they would make every lookup fetch and verify more pages as the index
grows. As in Manku et al. (WWW 2007), the block narrows and the Hamming distance decides: a hit
is a candidate when it lies within ``d`` bits, shares a MinHash band, or was found by the
page's digest or address; the rest are dropped before anything is verified.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
import numpy.typing as npt

from .minhash import Stored
from .native.chance import far_rows
from .sketch import resource_of

U64Array = npt.NDArray[np.uint64]


@dataclass(slots=True)
class ChanceFilter:
    """One page's test for hits that share only a SimHash block with it.

    Attributes:
        stored: the page's signature in stored form (bands compared row by row).
        simhash: the page's 64-bit SimHash.
        bands, rows: MinHash banding (``bands = 0``: no band keys).
        max_distance: ``simhash_distance``.
        url: the page's url.
        by_address: whether lookups include the url and resource keys (url identity).
        resource: the url without its query and fragment (:func:`~.sketch.resource_of`), a prefix
            of every url the address keys find.
    """

    stored: Stored
    simhash: int
    bands: int
    rows: int
    max_distance: int
    url: str
    by_address: bool
    resource: str = field(init=False)

    def __post_init__(self) -> None:
        self.resource = resource_of(self.url)

    def chance_rows(self, signatures: Stored, simhashes: U64Array, urls: Sequence[str]) -> list[int]:
        """Indices of the rows that share only a SimHash block with the page, in row order.

        A shared band is read from the stored forms: a band's rows equal in full are equal in
        stored form, so no band hit is ever called chance. ``urls`` is read only for rows that are
        far and share no band.
        """
        if not len(simhashes):
            return []
        far = far_rows(
            self.simhash,
            np.ascontiguousarray(self.stored),
            np.ascontiguousarray(simhashes, dtype=np.uint64),
            np.ascontiguousarray(signatures).reshape(len(simhashes), -1),
            self.bands,
            self.rows,
            self.max_distance,
        )
        if self.by_address:  # a far row the page's address keys find is no chance hit
            return [i for i in far if not self.same_address(urls[i])]
        return far

    def same_address(self, other: str) -> bool:
        """Whether the url or resource keys find ``other`` from the page: the same url, or a
        base (no query or fragment) and a view of it."""
        if other == self.url:
            return True
        # both cases share the page's resource, a prefix of every url of its address
        if not other.startswith(self.resource):
            return False
        return resource_of(other) == self.resource and self.resource in {self.url, other}
