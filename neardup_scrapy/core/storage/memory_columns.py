"""The memory store's page records: one column per field, row ``i`` holding page ``i``.

Per page: num_perm bytes of signature (128 at 128 permutations), the profile (about 100 to 140
bytes: the edit sketch and heading words), 16 bytes of digest, 8 of SimHash, a few bytes of
verdict, host and time added, and the url's bytes.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence

import numpy as np

from neardup_scrapy.core.chance import ChanceFilter
from neardup_scrapy.core.columns import CHUNK_BITS, BytesColumn, Column, StringColumn
from neardup_scrapy.core.minhash import STORED_DTYPE
from neardup_scrapy.core.native.chance import drop_far_rows_in_columns

from .base import STATUS_CODES, STATUS_NAMES, DocBatch, DocRecord, I64Array


class PageColumns:
    """Every page's record, in columns (the cluster parents are the store's)."""

    def __init__(self) -> None:
        self.num_perm = 0
        self._signature_width = 0
        self.urls = StringColumn()
        self.profiles = BytesColumn()
        self.host_of = Column(np.int32)
        self.digests = Column(np.uint8, 16)
        self.simhashes = Column(np.uint64)
        self.signatures: Column | None = None
        self.status = Column(np.uint8)
        self.similarity = Column(np.float16)
        self.hamming = Column(np.int8)
        self.added = Column(np.uint32)  # whole seconds since the epoch

    def open(self, num_perm: int) -> None:
        """Make the signature column: ``num_perm`` values per page."""
        self.num_perm = num_perm
        self.signatures = Column(STORED_DTYPE, num_perm)
        self._signature_width = num_perm * np.dtype(STORED_DTYPE).itemsize  # bytes per row

    def __len__(self) -> int:
        return len(self.urls)

    def append(self, record: DocRecord, host_id: int) -> int:
        """Add the record of a new page; its id."""
        assert self.signatures is not None, "open() first"
        doc_id = self.urls.append(record.url)
        self.host_of.append(host_id)
        self.digests.append(np.frombuffer(record.digest, dtype=np.uint8))
        self.simhashes.append(record.simhash)
        self.signatures.append(record.signature)
        self.profiles.append(record.profile)
        self.status.append(STATUS_CODES[record.status])
        self.similarity.append(record.similarity)
        self.hamming.append(record.hamming)
        self.added.append(int(record.added or time.time()))
        return doc_id

    def take(self, ids: I64Array, find: Callable[[int], int], host_names: Sequence[str]) -> DocBatch:
        """Records of ``ids``, with their cluster roots (``find``)."""
        assert self.signatures is not None, "open() first"
        rows = ids.tolist()
        return DocBatch(
            ids=ids,
            signatures=self.signatures.take(ids),
            simhashes=self.simhashes.take(ids),
            digests=[bytes(row) for row in self.digests.take(ids)],
            roots=np.array([find(i) for i in rows], dtype=np.int64),
            added=self.added.take(ids).astype(np.float64),
            urls=[self.urls[i] for i in rows],
            hosts=[host_names[h] for h in self.host_of.take(ids).tolist()],
            profiles=[self.profiles[i] for i in rows],
            statuses=[STATUS_NAMES[int(v)] for v in self.status.take(ids).tolist()],
        )

    def drop_chance_hits(self, ids: I64Array, chance: ChanceFilter) -> I64Array:
        """``ids`` without the pages that share only a SimHash block with the page by chance
        (:mod:`~neardup_scrapy.core.chance`), judged on the columns before anything is fetched."""
        assert self.signatures is not None, "open() first"
        # With address keys, a far page may still be found by the page's address: only a url
        # that starts with the page's resource can be, told from the stored bytes in place.
        by_address = chance.by_address
        kept, maybe_same = drop_far_rows_in_columns(
            np.ascontiguousarray(ids, dtype=np.int64),
            len(self.simhashes),
            CHUNK_BITS,
            self.simhashes.addresses,
            self.signatures.addresses,
            self._signature_width,
            chance.simhash,
            np.ascontiguousarray(chance.stored),
            chance.bands,
            chance.rows,
            chance.max_distance,
            self.urls.end_addresses if by_address else None,
            self.urls.blob if by_address else b"",
            chance.resource.encode("utf-8", "surrogatepass") if by_address else b"",
        )
        if maybe_same:
            chance_rows = {row for row in maybe_same if not chance.same_address(self.urls[row])}
            if chance_rows:
                kept = kept[[row not in chance_rows for row in kept.tolist()]]
        return kept

    def swap_verdicts(self, doc_id: int, root: int) -> int:
        """``doc_id`` takes over as representative from ``root``: ``root`` gets ``doc_id``'s
        verdict, ``doc_id`` becomes unique; ``doc_id``'s former status code."""
        status = int(self.status[doc_id])
        self.status[root] = status
        self.status[doc_id] = STATUS_CODES["unique"]
        self.similarity[root] = self.similarity[doc_id]
        self.hamming[root] = self.hamming[doc_id]
        self.similarity[doc_id] = np.nan
        self.hamming[doc_id] = -1
        return status

    @property
    def nbytes(self) -> int:
        """Bytes held by the columns."""
        columns = (
            self.host_of,
            self.digests,
            self.simhashes,
            self.status,
            self.similarity,
            self.hamming,
            self.added,
        )
        total = sum(c.nbytes for c in columns) + self.urls.nbytes + self.profiles.nbytes
        return total + (self.signatures.nbytes if self.signatures is not None else 0)
