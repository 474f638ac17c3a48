"""The near-duplicate detector: page -> main text -> sketches -> candidates -> verified verdict.

Per page, :meth:`NearDupDetector.check`:

1. analyses the page in one compiled pass (:mod:`.analysis`): main text, tokens, a 128-bit
   digest, a MinHash signature, a 64-bit SimHash, the bucket keys of the exact table, the
   MinHash bands and the SimHash block tables, and the page's profile (edit sketch, heading);
2. asks the store for every page sharing a bucket (or the page's url: a page fetched again is
   the same page, not a duplicate of itself), then **verifies** each candidate by the rule of
   :mod:`.verify` -- a bucket hit alone never makes a duplicate;
3. joins the cluster of the best verified candidate, with a guard against chaining: the page
   must pass the rule against the cluster's representative (its first page), or pass it against
   a member that is itself at ``J >= T`` from the representative, while its headings agree with
   the representative's and ``J >= max(0.3, T - 0.3)`` with it (a copy of one version of a
   document joins the document's cluster; a chain of small edits away from the representative
   ends after one step). Clusters whose representatives the page passes directly are
   merged (union-find); the earliest representative stays;
4. commits the page atomically (a shared store re-runs the check if another process changed
   a bucket meanwhile); the store updates per-host counters and the mirror evidence, from which
   mirror hosts are named (:mod:`.mirrors`);
5. keeps the original as the representative: a duplicate whose address its cluster's pages name
   canonical (``<link rel=canonical>``, the HTTP ``Link`` header) replaces the representative in
   its own commit, and :meth:`NearDupDetector.settle` (before a report) makes the origin's page
   the representative of the clusters a mirror's page represents: arrival order decides which
   page came first, not which one is the original.

The detector owns a collaborator per half of a check: :class:`~.repeats.RepeatingAnalyzer` (1,
and the bodies seen before) and :class:`~.indexer.Indexer` (2-5, through :class:`~.lookup.Lookup`
for keys and candidates, :class:`~.decide.Decider` for the decision and :class:`~.commit.Committer`
for the commit and the verdict; the counts and the report's examples), and
:class:`~.mirror_state.MirrorState` (the mirror hosts named so far).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from typing import Any

from neardup_scrapy.core.analysis import PageAnalysis
from neardup_scrapy.core.hosts import host_of
from neardup_scrapy.core.mirrors import MirrorPair
from neardup_scrapy.core.params import DetectorParams, describe_banding
from neardup_scrapy.core.repeats import RepeatingAnalyzer
from neardup_scrapy.core.storage.base import IndexStorage
from neardup_scrapy.core.storage.memory import MemoryStorage
from neardup_scrapy.core.verdict import Verdict

from .indexer import Indexer
from .mirror_state import MirrorState
from .report_data import build_report

logger = logging.getLogger(__name__)


class NearDupDetector:
    """Crawl-time exact and near-duplicate detection over main content.

    Args:
        threshold: Jaccard similarity for a near-duplicate (default 0.8; see :mod:`.verify`).
        algorithm: ``"both"`` (default: candidates from MinHash bands and SimHash blocks),
            ``"minhash"`` or ``"simhash"``.
        storage: ``None``/``"memory"`` for the in-memory store, another kind understood by
            :func:`neardup_scrapy.core.storage.open_storage`, or an :class:`IndexStorage`.
        keep_excerpts: how many recent unique pages' main texts to keep (8,000 characters each,
            at most) so the report can show near-duplicate pairs side by side, cut around
            their first difference. 0 keeps none.
        repeat_cache: bodies whose sketch is remembered, so a byte-identical body is not parsed
            again (0 disables).
        url_identity: a url checked again is the same page, reported as before and indexed
            once (default). Off for item indexes, where several items of one page share its url.
        **params: any other :class:`DetectorParams` field (``num_perm``, ``shingle_size``, ...).

    Raises:
        ParameterError: a parameter is invalid (the message names it).
        ParameterMismatchError: a persisted store was built with other parameters.
        StorageError: the store cannot be reached.
    """

    def __init__(
        self,
        threshold: float = 0.8,
        algorithm: str = "both",
        *,
        storage: IndexStorage | str | None = None,
        keep_excerpts: int = 2000,
        repeat_cache: int = 2048,
        url_identity: bool = True,
        **params: Any,
    ) -> None:
        detector_params = DetectorParams(threshold=threshold, algorithm=algorithm, **params)
        self._init(detector_params, storage, keep_excerpts, repeat_cache, url_identity)

    @classmethod
    def from_params(
        cls,
        params: DetectorParams,
        storage: IndexStorage | str | None = None,
        keep_excerpts: int = 2000,
        repeat_cache: int = 2048,
        url_identity: bool = True,
    ) -> NearDupDetector:
        """Build a detector from an existing :class:`DetectorParams`."""
        detector = cls.__new__(cls)
        detector._init(params, storage, keep_excerpts, repeat_cache, url_identity)
        return detector

    def _init(
        self,
        params: DetectorParams,
        storage: IndexStorage | str | None,
        keep_excerpts: int,
        repeat_cache: int,
        url_identity: bool = True,
    ) -> None:
        self.params = params
        self._reader = RepeatingAnalyzer(params, repeat_cache)
        self.storage: IndexStorage = _store(storage, params.ttl)
        self.storage.open(params.index_signature())
        self._mirror_state = MirrorState(params, self.storage)
        self._indexer = Indexer(params, self.storage, self._mirror_state, keep_excerpts, url_identity)
        #: Pages checked by this detector by what they added to the counts (``Verdict.counted``):
        #: ``pages`` is the sum of the other five.
        self.counts = self._indexer.counts
        self.skip_reasons = self._indexer.skip_reasons
        self.started = time.time()
        logger.debug("neardup detector: %s", describe_banding(params))
        self._mirror_state.refresh(self.counts["pages"], force=True)

    # -- public API ------------------------------------------------------------------------------
    def check(
        self,
        url: str,
        html: bytes | str | None = None,
        *,
        text: str | None = None,
        tree: Any = None,
        encoding: str | None = None,
        nbytes: int | None = None,
        started: float | None = None,
        parse: Callable[[], Any] | None = None,
        canonical: str = "",
    ) -> Verdict:
        """Decide whether a page duplicates one seen before, and index it.

        The text comes from ``text`` (plain text), else ``tree`` (an lxml root, e.g. Scrapy's
        ``response.selector.root``; never modified), else ``html``. A body (``html``, also when
        given with ``tree``) seen recently byte for byte is not parsed again: its sketch is
        reused (see :mod:`.repeats`). Bad input never raises: it gives a ``skipped`` verdict.

        Args:
            url: the page's url (its host drives per-host stats and mirrors).
            html: the page body, bytes or str.
            text: plain text instead of HTML (e.g. item fields).
            tree: an already parsed lxml tree of the page.
            encoding: the body's encoding when known (bytes ``html`` only).
            nbytes: the body size for the bytes-saved figure (default: ``len(html)``).
            started: ``time.thread_time()`` when the check began in this thread, if the caller
                did part of it (e.g. parsed ``tree``): that part counts in the ``timeout``
                budget, CPU seconds of this thread (default: now).
            parse: returns the tree of ``html`` where the compiled pass cannot follow the
                parser's events (see :class:`~.analysis.PageAnalyzer`); its exceptions propagate.
            canonical: the address the HTTP ``Link: <...>; rel="canonical"`` header names (it
                takes precedence over the page's ``<link rel=canonical>``).

        Raises:
            StorageError: the store failed (after its own retries).
        """
        if nbytes is None:
            nbytes = len(html) if html is not None else len(text or "")
        analysis = self._reader(
            url, html, text=text, tree=tree, encoding=encoding, started=started, parse=parse
        )
        return self.check_analysis(url, analysis, nbytes=nbytes, canonical=canonical)

    def analyze(
        self,
        url: str,
        html: bytes | str | None = None,
        *,
        text: str | None = None,
        tree: Any = None,
        encoding: str | None = None,
        started: float | None = None,
        parse: Callable[[], Any] | None = None,
    ) -> PageAnalysis:
        """The per-page half of :meth:`check` (no index, no cache of repeated bodies); see
        :class:`~.analysis.PageAnalyzer` (``started`` and ``parse`` as in :meth:`check`)."""
        return self._reader.analyzer(
            url, html, text=text, tree=tree, encoding=encoding, started=started, parse=parse
        )

    def check_analysis(
        self, url: str, analysis: PageAnalysis, *, nbytes: int = 0, canonical: str = ""
    ) -> Verdict:
        """The index half of :meth:`check`: decide and record a page analysed before.

        ``analysis`` may come from another process (:class:`~.analysis.PageAnalyzer` with the
        same parameters); verdicts are those :meth:`check` gives for the same pages in the same
        order. ``canonical`` as in :meth:`check`.

        Raises:
            StorageError: the store failed (after its own retries).
        """
        if analysis.sketch is None:
            return self._indexer.skip(url, analysis.host, analysis.skip_reason or "no text")
        return self._indexer.check_sketch(
            url, analysis.host, analysis.sketch, analysis.excerpt, nbytes, canonical=canonical
        )

    def skip(self, url: str, reason: str) -> Verdict:
        """Count a page as skipped (not HTML, too large, opted out...) without checking it."""
        return self._indexer.skip(url, host_of(url), reason)

    @property
    def revisits(self) -> int:
        """Pages whose url was checked before (``counts["revisits"]``)."""
        return self.counts["revisits"]

    def mirror_of(self, host: str) -> str | None:
        """The origin host that ``host`` has been confirmed to mirror (its strongest), if any,
        once the direction is settled (:func:`~.mirrors.settled`)."""
        return self._mirror_state.mirror_of(host)

    @property
    def mirrors(self) -> dict[str, str]:
        """``{mirror host: strongest origin host}`` of the pairs confirmed so far whose direction
        is settled: what a crawl may act on (skip the mirror's requests, tag its pages)."""
        return self._mirror_state.mirrors

    @property
    def mirrors_version(self) -> int:
        """Increases whenever :attr:`mirrors` changes (for processes that keep a copy of it)."""
        return self._mirror_state.version

    def settle(self) -> int:
        """Decide the mirror pairs on the whole index as it is now and make, in every cluster
        represented on a mirror host, the mirror's origin's page the representative (what the
        report and the exports show). Called by :meth:`report`; returns the clusters changed."""
        return self._mirror_state.settle(self.counts["pages"])

    def surviving_mirrors(self, unseen: dict[str, int]) -> dict[str, str]:
        """Of the mirror hosts in ``unseen`` (``{host: pages a crawl gave up on it}``), those
        whose pair holds whatever those pages turn out to be (:func:`~.mirrors.survives`), with
        their origin. Reads the evidence afresh (the map of :attr:`mirrors` too)."""
        return self._mirror_state.surviving(unseen, self.counts["pages"])

    def mirror_pairs(self) -> list[MirrorPair]:
        """Every (mirror host, origin host) pair the index's evidence supports now."""
        return self._mirror_state.pairs()

    def report(
        self,
        *,
        max_clusters: int = 100,
        max_members: int = 20,
        max_hosts: int = 1000,
        max_examples: int = 20,
        dropped: int = 0,
        storage_errors: int = 0,
    ) -> dict[str, Any]:
        """The JSON-serialisable report (format ``neardup-report/1``; see README), after
        :meth:`settle`."""
        self.settle()
        return self.report_as_is(
            max_clusters=max_clusters,
            max_members=max_members,
            max_hosts=max_hosts,
            max_examples=max_examples,
            dropped=dropped,
            storage_errors=storage_errors,
        )

    def report_as_is(
        self,
        *,
        max_clusters: int = 100,
        max_members: int = 20,
        max_hosts: int = 1000,
        max_examples: int = 20,
        dropped: int = 0,
        storage_errors: int = 0,
    ) -> dict[str, Any]:
        """The report of the index as it is, without :meth:`settle`: for one of several processes
        filling a shared index, which leaves the representatives to the report made when all
        are done (changing them would change the verdicts of the others' pages)."""
        return build_report(
            self.storage,
            self.params,
            examples=self._indexer.examples.pairs[:max_examples],
            max_clusters=max_clusters,
            max_members=max_members,
            max_hosts=max_hosts,
            dropped=dropped,
            storage_errors=storage_errors,
        )

    def exchange_url_rules(self, writer: str, state: bytes | None) -> list[bytes]:
        """Save one process's duplicate-url rules (``state``, when given) with the index under
        ``writer``; returns the states every other writer saved (see :mod:`.urlrules`)."""
        if state is not None:
            self.storage.save_url_rules(writer, state)
        return [blob for name, blob in sorted(self.storage.url_rules().items()) if name != writer]

    def close(self) -> None:
        """Close the store."""
        self.storage.close()

    def __enter__(self) -> NearDupDetector:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _store(storage: IndexStorage | str | None, ttl: float | None) -> IndexStorage:
    """The store ``storage`` names (see :class:`NearDupDetector`), not opened yet."""
    if storage is None or storage == "memory":
        return MemoryStorage(ttl=ttl)
    if isinstance(storage, str):
        from neardup_scrapy.core.storage import open_storage

        return open_storage(storage, ttl=ttl)
    return storage
