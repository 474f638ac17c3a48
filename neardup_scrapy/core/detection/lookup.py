"""A page's lookup: the keys it is looked up (and indexed) under, and which of the store's hits
are candidates for the decision (:mod:`.decide`)."""

from __future__ import annotations

from typing import Any

import numpy as np

from neardup_scrapy.core.chance import ChanceFilter
from neardup_scrapy.core.params import DetectorParams
from neardup_scrapy.core.sketch import Sketch, resource_keys, url_key
from neardup_scrapy.core.storage.base import DocBatch, IndexStorage


class Lookup:
    """Keys and candidates of a page by ``params.algorithm`` (``url_identity``: a page is also
    looked up by its url, so a url checked again finds itself)."""

    def __init__(self, params: DetectorParams, storage: IndexStorage, url_identity: bool) -> None:
        self.params = params
        self._storage = storage
        self._url_identity = url_identity

    def _content_keys(self, sketch: Sketch) -> np.ndarray[Any, np.dtype[np.uint64]]:
        algorithm = self.params.algorithm
        if algorithm == "both":
            return sketch.keys
        if algorithm == "minhash":
            return sketch.keys[: 1 + sketch.bands]
        return np.concatenate([sketch.exact_key, sketch.simhash_keys])

    def keys(self, url: str, sketch: Sketch) -> np.ndarray[Any, np.dtype[np.uint64]]:
        """Lookup keys: the content keys, then (with url identity) the url's resource and own keys."""
        content = self._content_keys(sketch)
        if not self._url_identity:
            return content
        seed = self.params.seed
        keys = np.empty(len(content) + 2, dtype=np.uint64)
        keys[:-2] = content
        keys[-2] = resource_keys(url, seed)[0]
        keys[-1] = url_key(url, seed)
        return keys

    def chance_filter(self, url: str, sketch: Sketch) -> ChanceFilter | None:
        """The page's test for SimHash blocks shared by chance; ``None`` without block keys."""
        if self.params.algorithm == "minhash" or not sketch.simhash_tables:
            return None
        return ChanceFilter(
            stored=sketch.stored,
            simhash=sketch.simhash,
            bands=self.params.lsh_bands if self.params.algorithm == "both" else 0,
            rows=self.params.lsh_rows,
            max_distance=self.params.simhash_distance,
            url=url,
            by_address=self._url_identity,
        )

    def candidates(self, ids: np.ndarray[Any, Any], url: str, sketch: Sketch) -> DocBatch | None:
        """The records of the lookup's hits ``ids`` that are candidates: less the pages that share
        only a SimHash block with the page by chance (:mod:`.chance`), dropped by the store before
        fetching when it can, else from the fetched batch (the same test either way)."""
        if not len(ids):
            return None
        chance = self.chance_filter(url, sketch)
        if chance is None:
            return self._storage.fetch(ids)
        return self._storage.fetch_candidates(ids, chance)
