"""Committing a decided page: the store changes for it (record, keys, unions), the atomic
commit (re-decided when another process changed a bucket meanwhile), the representative
replaced by the page's original, and the verdict the detector returns."""

from __future__ import annotations

import time
from typing import Any

import numpy as np

from neardup_scrapy.core.hosts import host_of
from neardup_scrapy.core.params import DetectorParams
from neardup_scrapy.core.sketch import CANONICAL_TABLE, Sketch, canonical_key, resource_keys
from neardup_scrapy.core.storage.base import Commit, CommitResult, DocRecord, IndexStorage, StorageError
from neardup_scrapy.core.urls import canonical_address
from neardup_scrapy.core.verdict import Status, Verdict

from .decide import Decider, Match
from .lookup import Lookup

_MAX_COMMIT_ATTEMPTS = 20
EMPTY_KEYS = np.empty(0, dtype=np.uint64)


class Committer:
    """Decides and commits checked pages to the store (``url_identity`` as in :class:`Lookup`)."""

    def __init__(
        self,
        params: DetectorParams,
        storage: IndexStorage,
        lookup: Lookup,
        decider: Decider,
        url_identity: bool,
    ) -> None:
        self.params = params
        self._storage = storage
        self._lookup = lookup
        self._decider = decider
        self._url_identity = url_identity
        self._canonical_keys: bool | None = None  # known at the first page (see index)

    def index(
        self, url: str, host: str, sketch: Sketch, nbytes: int, *, address: str, exact_only: bool
    ) -> tuple[Match, CommitResult | None]:
        """Decide page ``url`` and commit it atomically: its decision and the commit's result, or
        no result for a revisit (``address``: the address the page names canonical).

        Raises:
            StorageError: the index kept changing under the page, or the store failed.
        """
        if self._canonical_keys is None:  # canonical keys only where no content table reaches theirs
            self._canonical_keys = 1 + sketch.bands + sketch.simhash_tables < CANONICAL_TABLE
        keys = self._lookup.keys(url, sketch)
        for _attempt in range(_MAX_COMMIT_ATTEMPTS):
            # A page without candidate is unique: the store commits it in the lookup's step.
            match = self._decider.no_candidate(exact_only)
            provisional = self.commit_for(url, host, sketch, match, None, nbytes, keys, address)
            ids, token, result = self._storage.lookup_or_insert(keys, provisional)
            if result is not None:
                break
            match = self._decider.decide(url, sketch, self._lookup.candidates(ids, url, sketch), exact_only)
            if match.status == "revisit":
                self._storage.commit(
                    Commit(record=None, keys=EMPTY_KEYS, token=None, host=host, status="revisit")
                )
                return match, None
            result = self._storage.commit(
                self.commit_for(url, host, sketch, match, token, nbytes, keys, address)
            )
            if result is not None:
                break
        else:
            raise StorageError(
                f"index kept changing under page {url}; gave up after {_MAX_COMMIT_ATTEMPTS} tries"
            )
        return match, result

    def commit_for(  # noqa: PLR0917 (benchmarks/bench_core.py passes token and nbytes positionally)
        self,
        url: str,
        host: str,
        sketch: Sketch,
        match: Match,
        token: object,
        nbytes: int,
        keys: np.ndarray[Any, np.dtype[np.uint64]] | None = None,
        address: str = "",
    ) -> Commit:
        """The store changes for one decided page.

        ``keys`` are the page's lookup keys (content keys, then the url key) when already
        computed. Exact duplicates add only their address's keys (resource and url): by content
        they are found through their root. ``address``: the address the page names canonical
        (:func:`~.urls.canonical_address`); the page is also indexed under its canonical key, so
        the page at that address finds it.
        """
        if keys is None:
            keys = self._lookup.keys(url, sketch)
        if match.status == "exact":
            # found through their root by content; by their address (views of it, the url
            # again) through their own resource and url keys
            commit_keys = keys[len(keys) - 2 * self._url_identity :].copy()
            if self._url_identity:
                commit_keys[0] = resource_keys(url, self.params.seed)[1]
        elif self._url_identity:
            # the page is inserted under its resource's other table than the one it looked up
            commit_keys = keys.copy()
            commit_keys[-2] = resource_keys(url, self.params.seed)[1]
        else:
            commit_keys = keys
        named_key = None
        if self._canonical_keys:
            if address:
                commit_keys = np.append(commit_keys, canonical_key(address, self.params.seed))
            if match.status in ("exact", "near"):
                named_key = int(canonical_key(url, self.params.seed))
        record = DocRecord(
            url=url,
            host=host,
            digest=sketch.digest,
            simhash=sketch.simhash,
            signature=sketch.stored,
            parent=match.root,
            status=match.status,
            similarity=float("nan") if match.similarity is None else match.similarity,
            hamming=-1 if match.hamming is None else match.hamming,
            added=time.time(),
            profile=sketch.profile,
        )
        canonical = host_of(address) if address else ""
        return Commit(
            record=record,
            keys=commit_keys,
            token=token,
            unions=match.unions,
            host=host,
            status=match.status,
            canonical_host=canonical if canonical and canonical != host else None,
            nbytes=nbytes,
            named_key=named_key,
        )

    def original_of(self, url: str, host: str, match: Match, result: CommitResult, address: str) -> str:
        """Why the page just committed replaced the representative it matched (it is its
        original), or ``""`` when it did not.

        The original is the page whose address the cluster's pages name canonical: the store
        made it the representative in the commit (:attr:`Commit.named_key`), in commit order,
        so a shared index evolves as one process checking its pages in that order would make
        it. A page that names another page of its cluster canonical makes that page the
        representative too (when the candidates hold it). The origin's pages of a mirror pair
        are made representatives by :meth:`~.mirror_state.MirrorState.settle`, on the pairs of the
        whole index (a process's view of the pairs while it checks depends on when it last read
        them).
        """
        if match.status not in ("exact", "near") or match.known is None:
            return ""
        if result.promoted:
            return f"the canonical address of {match.root_url}"
        if address and address != match.root_url:
            named = match.known.by_url(address)
            if named is not None and named != match.root and self._same_cluster(named, result.doc_id):
                self._storage.promote(named)
        return ""

    def _same_cluster(self, a: int, b: int) -> bool:
        batch = self._storage.fetch(np.array([a, b], dtype=np.int64))
        return len(batch) == 2 and int(batch.roots[0]) == int(batch.roots[1])


def verdict(  # noqa: PLR0917
    url: str,
    host: str,
    sketch: Sketch,
    match: Match,
    result: CommitResult,
    exact_only: bool,
    address: str,
    replaced: str,
    mirror_of: str | None,
) -> Verdict:
    """The verdict of a committed page (``replaced``: why it replaced the representative, see
    :meth:`Committer.original_of`; ``mirror_of``: the origin its host mirrors, if settled)."""
    status: Status = match.status  # type: ignore[assignment]
    # a cross-host duplicate is the copy when it names another host canonical or its host
    # is a settled mirror; otherwise nothing tells yet which of the two pages is the original
    undecided = (
        match.status != "unique"
        and not replaced
        and match.root_host not in ("", host)
        and not (address and host_of(address) != host)
        and mirror_of is None
    )
    return Verdict(
        url=url,
        host=host,
        status=status,
        duplicate_of=match.root_url,
        similarity=match.similarity,
        hamming=match.hamming,
        cluster=url if match.status == "unique" else match.root_url,
        mirror_of=mirror_of,
        reason=f"{match.reason}; it replaces it as the representative: {replaced}"
        if replaced
        else match.reason,
        rule=match.rule,
        matched=match.matched_url,
        tokens=sketch.tokens,
        exact_only=exact_only,
        doc_id=result.doc_id,
        canonical=address or None,
        undecided=undecided,
        replaced=match.root_url if replaced else None,
    )


def revisit_verdict(
    url: str, host: str, sketch: Sketch, match: Match, *, exact_only: bool, mirror_of: str | None
) -> Verdict:
    """A url checked before: the same page, reported as it was, indexed once."""
    status: Status = match.before  # type: ignore[assignment]
    return Verdict(
        url=url,
        host=host,
        status=status,
        duplicate_of=None if status == "unique" else match.root_url,
        similarity=match.similarity,
        hamming=match.hamming,
        cluster=match.root_url,
        mirror_of=mirror_of,
        reason=match.reason,
        matched=url,
        tokens=sketch.tokens,
        exact_only=exact_only,
        doc_id=match.root,
        canonical=canonical_address(url, sketch.canonical) or None,
        revisit=True,
    )
