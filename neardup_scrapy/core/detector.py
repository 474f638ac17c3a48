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
"""

from __future__ import annotations

import logging
import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from .analysis import PageAnalysis, PageAnalyzer
from .chance import ChanceFilter
from .hosts import host_of
from .minhash import estimate_jaccard
from .mirrors import MirrorPair, copies, copies_most, mirror_pairs, settled, survives, undecided_pairs
from .native.sketch import heads_agree
from .params import DetectorParams, describe_banding
from .repeats import RepeatCache
from .report_data import build_report
from .simhash import hamming_many
from .sketch import CANONICAL_TABLE, Sketch, canonical_key, resource_keys, url_key
from .storage.base import (
    Commit,
    CommitResult,
    DocBatch,
    DocRecord,
    IndexStorage,
    StorageError,
)
from .storage.memory import MemoryStorage
from .urls import canonical_address
from .verdict import Status, Verdict
from .verify import RULE_EXACT, RULE_MEMBER_COPY, PairRule, Passed, measured_similarity

logger = logging.getLogger(__name__)

_MAX_COMMIT_ATTEMPTS = 20
#: A confirmed mirror pair stays while it passes at this share of ``mirror_share`` (hysteresis).
_MIRROR_KEEP = 0.5
_EXCERPT_CHARS = 2000  # per side of a report example
_CACHED_CHARS = 8000  # per cached text, so the window can move to where two texts differ
_MAX_EXAMPLES = 50
#: The mirror evidence is read again after a duplicate changed it, at most once per this many
#: pages: ``min(500, max(1, pages // 50))`` -- counted, not timed, so verdicts never depend on
#: how fast pages arrive; prompt on small crawls, amortised on large ones.
_MIRROR_REFRESH_MAX = 500
_EMPTY_KEYS = np.empty(0, dtype=np.uint64)


@dataclass
class _Match:
    """A verified decision before commit (``revisit``: the url was checked before, with the
    status it got then in ``before``)."""

    status: str
    root: int = -1
    root_url: str | None = None
    root_host: str = ""
    similarity: float | None = None
    hamming: int | None = None
    matched_url: str | None = None
    unions: list[tuple[int, int]] = field(default_factory=list)
    reason: str = ""
    rule: str = ""
    before: str = "unique"
    #: the candidate batch's pages by id (for the representative choice after the commit)
    known: _Rows | None = None


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
        self._init(
            DetectorParams(threshold=threshold, algorithm=algorithm, **params),
            storage,
            keep_excerpts,
            repeat_cache,
            url_identity,
        )

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
        self._url_identity = url_identity
        self._analyzer = PageAnalyzer(params)
        self._rule = PairRule(params)
        self._repeats = RepeatCache(repeat_cache, params.seed)
        if storage is None or storage == "memory":
            self.storage: IndexStorage = MemoryStorage(ttl=params.ttl)
        elif isinstance(storage, str):
            from .storage import open_storage

            self.storage = open_storage(storage, ttl=params.ttl)
        else:
            self.storage = storage
        self.storage.open(params.index_signature())
        self._keep_excerpts = keep_excerpts
        self._excerpts: OrderedDict[int, str] = OrderedDict()
        self._examples: list[dict[str, Any]] = []
        self._mirrors: dict[str, str] = {}
        #: Increases whenever :attr:`mirrors` changes (for processes that keep a copy of it).
        self.mirrors_version = 0
        self._confirmed: set[tuple[str, str]] = set()
        #: confirmed pairs whose direction is settled (``mirrors``, the map the crawl acts on)
        self._settled: set[tuple[str, str]] = set()
        self._undecided: set[tuple[str, str]] = set()
        self._mirror_checked = 0
        self._evidence_changed = False
        #: Pages checked by this detector by what they added to the counts (``Verdict.counted``):
        #: ``pages`` is the sum of the other five.
        self.counts: dict[str, int] = dict.fromkeys(
            ("pages", "unique", "exact", "near", "skipped", "revisits"), 0
        )
        self._canonical_keys: bool | None = None  # known at the first page (see _check_sketch)
        self.skip_reasons: dict[str, int] = {}
        self.started = time.time()
        logger.debug("neardup detector: %s", describe_banding(params))
        self._refresh_mirrors(force=True)

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
        host = host_of(url)
        if nbytes is None:
            nbytes = len(html) if html is not None else len(text or "")
        repeat_key = None
        if text is None and html is not None and self._repeats.max_entries:
            repeat_key = self._repeats.key(html, encoding, host if self.params.scope == "host" else "")
            repeat = self._repeats.get(repeat_key)
            if repeat is not None:
                excerpt, cached = repeat
                if cached is None:
                    return self._skip(url, host, "no text")
                return self._check_sketch(url, host, cached, excerpt, nbytes, canonical=canonical)
        analysis = self._analyzer(
            url, html, text=text, tree=tree, encoding=encoding, started=started, parse=parse
        )
        if repeat_key is not None and analysis.skip_reason in (None, "no text"):
            self._repeats.put(repeat_key, analysis.excerpt, analysis.sketch)
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
        return self._analyzer(
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
            return self._skip(url, analysis.host, analysis.skip_reason or "no text")
        return self._check_sketch(
            url, analysis.host, analysis.sketch, analysis.excerpt, nbytes, canonical=canonical
        )

    def skip(self, url: str, reason: str) -> Verdict:
        """Count a page as skipped (not HTML, too large, opted out...) without checking it."""
        return self._skip(url, host_of(url), reason)

    @property
    def revisits(self) -> int:
        """Pages whose url was checked before (``counts["revisits"]``)."""
        return self.counts["revisits"]

    def mirror_of(self, host: str) -> str | None:
        """The origin host that ``host`` has been confirmed to mirror (its strongest), if any,
        once the direction is settled (:func:`~.mirrors.settled`)."""
        return self._mirrors.get(host)

    @property
    def mirrors(self) -> dict[str, str]:
        """``{mirror host: strongest origin host}`` of the pairs confirmed so far whose direction
        is settled: what a crawl may act on (skip the mirror's requests, tag its pages)."""
        return dict(self._mirrors)

    def settle(self) -> int:
        """Decide the mirror pairs on the whole index as it is now and make, in every cluster
        represented on a mirror host, the mirror's origin's page the representative (what the
        report and the exports show). Called by :meth:`report`; returns the clusters changed."""
        self._refresh_mirrors(force=True)
        rounds: list[dict[str, str]] = []  # a mirror of several origins: one origin per round
        for pair in self.mirror_pairs():  # strongest first: its origin's pages go first
            free = next((r for r in rounds if pair.host not in r), None)
            if free is None:
                rounds.append(free := {})
            free[pair.host] = pair.mirror_of
        return sum(self.storage.promote_origins(origins) for origins in rounds)

    def surviving_mirrors(self, unseen: dict[str, int]) -> dict[str, str]:
        """Of the mirror hosts in ``unseen`` (``{host: pages a crawl gave up on it}``), those
        whose pair holds whatever those pages turn out to be (:func:`~.mirrors.survives`), with
        their origin. Reads the evidence afresh (the map of :attr:`mirrors` too)."""
        self._refresh_mirrors(force=True)
        min_pages, share = self.params.mirror_min_pages, self.params.mirror_share
        ev = self.storage.mirror_evidence(min_pages, _MIRROR_KEEP * share)
        return {
            host: origin
            for host, count in unseen.items()
            if (origin := self._mirrors.get(host)) is not None
            and survives(ev, host, origin, count, min_pages=min_pages, share=share, keep=_MIRROR_KEEP)
        }

    def mirror_pairs(self) -> list[MirrorPair]:
        """Every (mirror host, origin host) pair the index's evidence supports now."""
        min_pages, share = self.params.mirror_min_pages, self.params.mirror_share
        return mirror_pairs(self.storage.mirror_evidence(min_pages, share), min_pages, share)

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
            examples=self._examples[:max_examples],
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

    # -- internals -------------------------------------------------------------------------------
    def _skip(self, url: str, host: str, reason: str) -> Verdict:
        self.storage.commit(Commit(record=None, keys=_EMPTY_KEYS, token=None, host=host, status="skipped"))
        self.counts["pages"] += 1
        self.counts["skipped"] += 1
        self.skip_reasons[reason] = self.skip_reasons.get(reason, 0) + 1
        return Verdict(url=url, host=host, status="skipped", reason=reason, mirror_of=self._mirrors.get(host))

    def _lookup_keys(self, sketch: Sketch) -> np.ndarray[Any, np.dtype[np.uint64]]:
        algorithm = self.params.algorithm
        if algorithm == "both":
            return sketch.keys
        if algorithm == "minhash":
            return sketch.keys[: 1 + sketch.bands]
        return np.concatenate([sketch.exact_key, sketch.simhash_keys])

    def _keys(self, url: str, sketch: Sketch) -> np.ndarray[Any, np.dtype[np.uint64]]:
        """Lookup keys: the content keys, then (with url identity) the url's resource and own keys."""
        content = self._lookup_keys(sketch)
        if not self._url_identity:
            return content
        seed = self.params.seed
        keys = np.empty(len(content) + 2, dtype=np.uint64)
        keys[:-2] = content
        keys[-2] = resource_keys(url, seed)[0]
        keys[-1] = url_key(url, seed)
        return keys

    def _chance_filter(self, url: str, sketch: Sketch) -> ChanceFilter | None:
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

    def _candidates(self, ids: np.ndarray[Any, Any], url: str, sketch: Sketch) -> DocBatch | None:
        """The records of the lookup's hits ``ids`` that are candidates: less the pages that share
        only a SimHash block with the page by chance (:mod:`.chance`), dropped by the store before
        fetching when it can, else from the fetched batch (the same test either way)."""
        if not len(ids):
            return None
        chance = self._chance_filter(url, sketch)
        if chance is None:
            return self.storage.fetch(ids)
        return self.storage.fetch_candidates(ids, chance)

    def _check_sketch(
        self, url: str, host: str, sketch: Sketch, raw: str, nbytes: int, *, canonical: str = ""
    ) -> Verdict:
        address = canonical_address(url, canonical or sketch.canonical)
        if self._canonical_keys is None:  # canonical keys only where no content table reaches theirs
            self._canonical_keys = 1 + sketch.bands + sketch.simhash_tables < CANONICAL_TABLE
        keys = self._keys(url, sketch)
        exact_only = sketch.tokens < self.params.min_tokens
        for _attempt in range(_MAX_COMMIT_ATTEMPTS):
            # A page without candidate is unique: the store commits it in the lookup's step.
            match = self._no_candidate(exact_only)
            provisional = self._commit_for(url, host, sketch, match, None, nbytes, keys, address)
            ids, token, result = self.storage.lookup_or_insert(keys, provisional)
            if result is not None:
                break
            match = self._decide(url, sketch, self._candidates(ids, url, sketch), exact_only)
            if match.status == "revisit":
                self.storage.commit(
                    Commit(record=None, keys=_EMPTY_KEYS, token=None, host=host, status="revisit")
                )
                return self._revisit(url, host, sketch, match, exact_only)
            result = self.storage.commit(
                self._commit_for(url, host, sketch, match, token, nbytes, keys, address)
            )
            if result is not None:
                break
        else:
            raise StorageError(
                f"index kept changing under page {url}; gave up after {_MAX_COMMIT_ATTEMPTS} tries"
            )
        return self._finish(
            url, host, sketch, raw, match, result=result, exact_only=exact_only, address=address
        )

    def _commit_for(  # noqa: PLR0917 (benchmarks/bench_core.py passes token and nbytes positionally)
        self,
        url: str,
        host: str,
        sketch: Sketch,
        match: _Match,
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
            keys = self._keys(url, sketch)
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

    def _finish(
        self,
        url: str,
        host: str,
        sketch: Sketch,
        raw: str,
        match: _Match,
        *,
        result: CommitResult,
        exact_only: bool,
        address: str = "",
    ) -> Verdict:
        replaced = self._original_of(url, host, match, result, address)
        self.counts["pages"] += 1
        self.counts[match.status] += 1
        if match.status != "unique" or host in self._mirrors:
            # a duplicate is new evidence; so is a page of its own on a host named a mirror (the
            # share of its documents that are copies falls)
            self._evidence_changed = True
        self._refresh_mirrors()
        if match.status == "near" and len(self._examples) < _MAX_EXAMPLES and match.root in self._excerpts:
            left, right = _around_first_difference(_excerpt(self._excerpts[match.root]), _excerpt(raw))
            self._examples.append(
                {
                    "status": "near",
                    "similarity": match.similarity,
                    "hamming": match.hamming,
                    "a": {"url": match.root_url, "text": left},
                    "b": {"url": url, "text": right},
                }
            )
        if self._keep_excerpts and (match.status == "unique" or replaced):
            self._excerpts[result.doc_id] = raw[:_CACHED_CHARS]  # folded when shown
            while len(self._excerpts) > self._keep_excerpts:
                self._excerpts.popitem(last=False)
        status: Status = match.status  # type: ignore[assignment]
        # a cross-host duplicate is the copy when it names another host canonical or its host
        # is a settled mirror; otherwise nothing tells yet which of the two pages is the original
        undecided = (
            match.status != "unique"
            and not replaced
            and match.root_host not in ("", host)
            and not (address and host_of(address) != host)
            and host not in self._mirrors
        )
        return Verdict(
            url=url,
            host=host,
            status=status,
            duplicate_of=match.root_url,
            similarity=match.similarity,
            hamming=match.hamming,
            cluster=url if match.status == "unique" else match.root_url,
            mirror_of=self._mirrors.get(host),
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

    def _original_of(self, url: str, host: str, match: _Match, result: CommitResult, address: str) -> str:
        """Why the page just committed replaced the representative it matched (it is its
        original), or ``""`` when it did not.

        The original is the page whose address the cluster's pages name canonical: the store
        made it the representative in the commit (:attr:`Commit.named_key`), in commit order,
        so a shared index evolves as one process checking its pages in that order would make
        it. A page that names another page of its cluster canonical makes that page the
        representative too (when the candidates hold it). The origin's pages of a mirror pair
        are made representatives by :meth:`settle`, on the pairs of the whole index (a
        process's view of the pairs while it checks depends on when it last read them).
        """
        if match.status not in ("exact", "near") or match.known is None:
            return ""
        if result.promoted:
            return f"the canonical address of {match.root_url}"
        if address and address != match.root_url:
            named = match.known.by_url(address)
            if named is not None and named != match.root and self._same_cluster(named, result.doc_id):
                self.storage.promote(named)
        return ""

    def _same_cluster(self, a: int, b: int) -> bool:
        batch = self.storage.fetch(np.array([a, b], dtype=np.int64))
        return len(batch) == 2 and int(batch.roots[0]) == int(batch.roots[1])

    def _revisit(self, url: str, host: str, sketch: Sketch, match: _Match, exact_only: bool) -> Verdict:
        """A url checked before: the same page, reported as it was, indexed once."""
        self.counts["pages"] += 1
        self.counts["revisits"] += 1
        status: Status = match.before  # type: ignore[assignment]
        return Verdict(
            url=url,
            host=host,
            status=status,
            duplicate_of=None if status == "unique" else match.root_url,
            similarity=match.similarity,
            hamming=match.hamming,
            cluster=match.root_url,
            mirror_of=self._mirrors.get(host),
            reason=match.reason,
            matched=url,
            tokens=sketch.tokens,
            exact_only=exact_only,
            doc_id=match.root,
            canonical=canonical_address(url, sketch.canonical) or None,
            revisit=True,
        )

    def _refresh_mirrors(self, force: bool = False) -> None:
        """Name mirror hosts from the store's evidence (see ``_MIRROR_REFRESH_MAX``).

        :attr:`mirrors` holds the confirmed pairs whose direction is settled
        (:func:`~.mirrors.settled`). A pair once confirmed stays while the two still share
        ``mirror_min_pages`` documents, the mirror's copies are at least half of
        ``mirror_share`` of its documents and no evidence reverses the direction: a mirror is
        named on a majority of its documents, and
        the pages of its own that a crawl happens to reach before the rest of its copies do not
        withdraw it; a host whose copies fall to a small share of what it serves is withdrawn.
        """
        pages = self.counts["pages"]
        interval = min(_MIRROR_REFRESH_MAX, max(1, pages // 50))
        if not force and not (self._evidence_changed and pages - self._mirror_checked >= interval):
            return
        self._mirror_checked = pages
        self._evidence_changed = False
        min_pages, share = self.params.mirror_min_pages, self.params.mirror_share
        ev = self.storage.mirror_evidence(min_pages, _MIRROR_KEEP * share)  # the lowest share used
        strength = {(p.host, p.mirror_of): p.pages for p in mirror_pairs(ev, min_pages, share)}
        for host, origin in self._confirmed - set(strength):
            shared = ev.shared.get(host, {}).get(origin, 0)
            if (
                shared >= min_pages
                and copies_most(ev, host, min_pages, _MIRROR_KEEP * share)
                and copies(ev, host, origin, min_pages, share) is not False
            ):
                strength[(host, origin)] = shared
        for host, origin in self._settled - set(strength):
            # A settled direction is not undone by the comparisons of counts it was settled
            # against (they flip as a crawl gets ahead on one host): only the reverse direction
            # settled in turn reverses it.
            shared = ev.shared.get(host, {}).get(origin, 0)
            if (
                shared >= min_pages
                and copies_most(ev, host, min_pages, _MIRROR_KEEP * share)
                and not (
                    copies(ev, origin, host, min_pages, share) and settled(ev, origin, host, min_pages, share)
                )
            ):
                strength[(host, origin)] = shared
        confirmed = set(strength)
        # A pair is acted on once its direction is settled (see mirrors.settled), and stays so
        # while it stays confirmed.
        settled_now = {
            pair for pair in confirmed if pair in self._settled or settled(ev, *pair, min_pages, share)
        }
        for host, origin in sorted(settled_now - self._settled):
            logger.info(
                "neardup: %s mirrors %s (%d documents in common; the direction is settled)",
                host,
                origin,
                strength[(host, origin)],
            )
        for host, origin in sorted(confirmed - settled_now - self._confirmed):
            logger.debug(
                "neardup: %s looks like a mirror of %s (%d documents in common); the direction is not "
                "settled yet",
                host,
                origin,
                strength[(host, origin)],
            )
        for host, origin in sorted(self._settled - settled_now):
            logger.info("neardup: %s no longer looks like a mirror of %s", host, origin)
        for pair in undecided_pairs(ev, min_pages, share):
            if pair not in self._undecided:
                self._undecided.add(pair)
                logger.info(
                    "neardup: %s and %s serve the same pages; nothing tells which copies the other", *pair
                )
        self._confirmed = confirmed
        self._settled = settled_now
        strongest: dict[str, tuple[int, str]] = {}
        for host, origin in settled_now:
            n = strength[(host, origin)]
            if host not in strongest or (n, origin) > strongest[host]:
                strongest[host] = (n, origin)
        mirrors = {host: origin for host, (_, origin) in strongest.items()}
        if mirrors != self._mirrors:
            self._mirrors = mirrors
            self.mirrors_version += 1

    def _no_candidate(self, exact_only: bool) -> _Match:
        """The decision for a page with no candidate at all."""
        return _Match(
            "unique", reason=self._exact_only_reason() if exact_only else "no candidate in the index"
        )

    def _exact_only_reason(self) -> str:
        return f"fewer than {self.params.min_tokens} tokens: matched exactly only"

    def _judge_view(
        self, similarity: float, _hamming: int, *, profiles: tuple[bytes, bytes], urls: tuple[str, str]
    ) -> Passed | None:
        return self._rule.view(similarity, profiles=profiles, urls=urls)

    def _decide(self, url: str, sketch: Sketch, batch: DocBatch | None, exact_only: bool) -> _Match:
        if batch is None or not len(batch):
            return self._no_candidate(exact_only)
        if self.params.ttl is not None:
            alive = (batch.added >= time.time() - self.params.ttl).tolist()
        else:
            alive = [True] * len(batch)
        known = _Rows(self.storage, sketch, batch, self.params.shingle_size)
        roots, ids = batch.roots.tolist(), batch.ids.tolist()
        sims = [known.find(doc_id).similarity for doc_id in ids]
        dists = [known.find(doc_id).hamming for doc_id in ids]

        for i, other in enumerate(batch.urls):
            if other == url and alive[i] and self._url_identity:
                rep = known.find(roots[i])
                return _Match(
                    "revisit",
                    root=roots[i],
                    root_url=rep.url,
                    similarity=None if roots[i] == ids[i] else rep.similarity,
                    hamming=None if roots[i] == ids[i] else rep.hamming,
                    reason="this url was checked before",
                    before=batch.statuses[i] if batch.statuses else "unique",
                )

        # Identical text is one document when the names allow it (rule 0: identical text is
        # beyond doubt once long enough to identify a document).
        exact_rows = [
            i
            for i, d in enumerate(batch.digests)
            if d == sketch.digest
            and alive[i]
            and self._rule.identity(
                1.0, profiles=(sketch.profile, known.profile(ids[i])), urls=(url, batch.urls[i])
            )
        ]
        if exact_rows:
            row = min(exact_rows, key=lambda i: (roots[i], ids[i]))
            rep = known.find(roots[row])
            if any(ids[i] == roots[i] for i in exact_rows if roots[i] == roots[row]):
                # ``exact`` says the text is the representative's, as compared
                return _Match(
                    "exact",
                    root=roots[row],
                    root_url=rep.url,
                    root_host=rep.host,
                    known=known,
                    similarity=1.0,
                    hamming=0,
                    matched_url=rep.url,
                    reason="identical main text",
                    rule=RULE_EXACT,
                )
            # the same text as a member that joined by a rule below ``exact``: the page joins
            # that member's cluster, as near as the member is to the representative
            return _Match(
                "near",
                root=roots[row],
                root_url=rep.url,
                root_host=rep.host,
                known=known,
                similarity=rep.similarity,
                hamming=rep.hamming,
                matched_url=batch.urls[row],
                reason=f"identical main text with {batch.urls[row]}, a member of the cluster",
                rule=RULE_MEMBER_COPY,
            )
        # A page too short for shingles is matched exactly, or as another view of its own
        # address (verification rule 6, measured by alignment), in whichever order pages come.
        judge: Callable[..., Passed | None] = self._rule.judge
        if exact_only:
            if self.params.algorithm == "simhash":
                return _Match("unique", reason=self._exact_only_reason())
            judge = self._judge_view

        # Candidates deduplicated by cluster: a cluster's rows are verified best first (the
        # order its best verified row is chosen by) and only until one passes, so a check
        # verifies about one row per cluster, not every member the lookup returned (a host
        # serving thousands of near-identical pages: one cluster, up to 128 members).
        reasons: dict[int, Passed | None] = {}

        def verified(i: int) -> Passed | None:
            if i not in reasons:
                reasons[i] = judge(
                    sims[i],
                    dists[i],
                    profiles=(sketch.profile, known.profile(ids[i])),
                    urls=(url, batch.urls[i]),
                )
            return reasons[i]

        by_root: dict[int, list[int]] = {}
        for i in sorted((i for i in range(len(batch)) if alive[i]), key=lambda i: (-sims[i], ids[i])):
            by_root.setdefault(roots[i], []).append(i)
        best_rows = {
            root: best
            for root, rows in by_root.items()
            if (best := next((i for i in rows if verified(i) is not None), -1)) >= 0
        }
        if not best_rows:
            if exact_only:
                return _Match("unique", reason=self._exact_only_reason())
            return _Match("unique", reason=f"{len(batch)} candidate(s), none similar enough")
        candidate_roots = sorted(best_rows)
        known.prefetch(candidate_roots)

        floor = self.params.edit_floor
        statuses = batch.statuses or ["near"] * len(batch)
        accepted: list[tuple[float, int, int, int, bool]] = []  # (similarity, -root, root, best_row, direct)
        for root in candidate_roots:
            rep = known.find(root)
            verdict = judge(
                rep.similarity, rep.hamming, profiles=(sketch.profile, rep.profile), urls=(url, rep.url)
            )
            direct = verdict is not None
            best_row = best_rows[root]  # the verified row of highest similarity (earliest on ties)
            member = known.find(ids[best_row])
            member_to_rep = measured_similarity(
                float(estimate_jaccard(member.signature, rep.signature)[0]),
                member.profile,
                rep.profile,
                self.params.shingle_size,
            )
            # The chaining guard keeps a cluster from drifting along a chain of resemblances; a
            # member near-identical to its representative (an exact copy: a mirror seen first)
            # stands for it, so the page's verdict with that member holds for the cluster.
            via_member = (not rep.profile or heads_agree(sketch.profile, rep.profile)) and (
                member_to_rep >= self.params.strict_threshold
                or (member_to_rep >= self.params.threshold and rep.similarity >= floor)
            )
            # A member that arrived first of its cluster (``unique``) and was merged in later was
            # that cluster's representative: a page passing it would have joined it before the
            # merge, so it joins it after the merge too (the verdict must not depend on whether
            # the merge came first), still within the edit floor of the representative.
            via_merged = (
                not (direct or via_member)
                and rep.similarity >= floor
                and any(
                    ids[i] != root and statuses[i] == "unique" and verified(i) is not None
                    for i in by_root[root]
                )
            )
            if direct or via_member or via_merged:
                accepted.append((rep.similarity, -root, root, best_row, direct))
        if not accepted:
            return _Match(
                "unique", reason="similar only to members of clusters it does not fit (chaining guard)"
            )
        accepted.sort(reverse=True)
        _, _, best_root, best_row, _ = accepted[0]
        direct_roots = sorted({root for *_, root, _, direct in accepted if direct} | {best_root})
        final_root = direct_roots[0]
        unions = [(r, final_root) for r in direct_roots[1:]]
        final = known.find(final_root)
        passed = reasons[best_row]
        assert passed is not None  # a best row is a verified row
        reason = f"{passed} with {batch.urls[best_row]}" + (
            f"; merged {len(unions)} cluster(s)" if unions else ""
        )
        return _Match(
            "near",
            root=final_root,
            root_url=final.url,
            root_host=final.host,
            known=known,
            similarity=final.similarity,
            hamming=final.hamming,
            matched_url=batch.urls[best_row],
            unions=unions,
            reason=reason,
            rule=passed.rule,
        )


@dataclass
class _Doc:
    """A page the decision compares with: where it is, and how close the new page is to it."""

    url: str
    host: str
    similarity: float
    hamming: int
    profile: bytes
    signature: Any


class _Rows:
    """The pages a decision compares with, by id: the candidate batch, plus cluster
    representatives fetched from the store on demand; each with its similarity to the page
    (:func:`~.verify.measured_similarity`: exact between short pages, else estimated)."""

    def __init__(self, storage: IndexStorage, sketch: Sketch, batch: DocBatch, shingle_size: int) -> None:
        self._storage = storage
        self._sketch = sketch
        self._shingle_size = shingle_size
        self._docs: dict[int, _Doc] = {}
        self._add(batch)

    def prefetch(self, doc_ids: list[int]) -> None:
        """Fetch, in one call, the pages of ``doc_ids`` not at hand."""
        missing = [d for d in doc_ids if d not in self._docs]
        if missing:
            self._add(self._storage.fetch(np.array(missing, dtype=np.int64)))

    def find(self, doc_id: int) -> _Doc:
        """Page ``doc_id``, fetched if needed."""
        if doc_id not in self._docs:
            self.prefetch([doc_id])
        return self._docs[doc_id]

    def profile(self, doc_id: int) -> bytes:
        """The profile of a page of the batch."""
        return self._docs[doc_id].profile

    def by_url(self, url: str) -> int | None:
        """The id of the page at ``url`` among those at hand, if any."""
        return next((doc_id for doc_id, doc in self._docs.items() if doc.url == url), None)

    def _add(self, batch: DocBatch) -> None:
        sims = estimate_jaccard(self._sketch.stored, batch.signatures).tolist()
        dists = hamming_many(self._sketch.simhash, batch.simhashes).tolist()
        profiles = batch.profiles or [b""] * len(batch)
        own = self._sketch.profile
        for i, doc_id in enumerate(batch.ids.tolist()):
            similarity = measured_similarity(sims[i], own, profiles[i], self._shingle_size)
            self._docs[doc_id] = _Doc(
                batch.urls[i], batch.hosts[i], similarity, dists[i], profiles[i], batch.signatures[i]
            )


def _excerpt(text: str) -> str:
    """The first ``_CACHED_CHARS`` characters of ``text`` with whitespace folded."""
    return " ".join(text[:_CACHED_CHARS].split())


def _around_first_difference(a: str, b: str) -> tuple[str, str]:
    """Cut two texts to ``_EXCERPT_CHARS`` starting a little before where they first differ."""
    same = _common_prefix_length(a, b)
    start = max(0, same - _EXCERPT_CHARS // 4)
    if start:
        start = a.rfind(" ", 0, start) + 1  # do not cut a word
    return a[start : start + _EXCERPT_CHARS], b[start : start + _EXCERPT_CHARS]


def _common_prefix_length(a: str, b: str) -> int:
    """Length of the longest common prefix of ``a`` and ``b``, by bisection on slice equality
    (``log2 n`` comparisons done in C, where ``os.path.commonprefix`` steps in Python per
    character)."""
    low, high = 0, min(len(a), len(b))
    while low < high:
        mid = (low + high + 1) // 2
        if a[low:mid] == b[low:mid]:
            low = mid
        else:
            high = mid - 1
    return low
