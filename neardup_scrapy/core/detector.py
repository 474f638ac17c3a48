"""The near-duplicate detector: page -> main text -> sketches -> candidates -> verified verdict.

Per page, :meth:`NearDupDetector.check`:

1. extracts and normalises the main-content text (``core.text``) and tokenises it;
2. sketches it (``core.sketch``): a 128-bit digest, a MinHash signature, a 64-bit SimHash and
   the bucket keys of the exact table, the MinHash bands and the SimHash block tables;
3. asks the store for every page sharing a bucket, then **verifies** each candidate -- a
   bucket hit alone never makes a duplicate:

   * ``exact``: same digest (identical normalised main text);
   * ``near``: by algorithm, ``minhash``: estimated Jaccard ``J >= threshold``; ``simhash``:
     Hamming distance ``H <= simhash_distance``; ``both``: either;
   * pages with fewer than ``min_tokens`` tokens are matched exactly only;

4. joins the cluster of the best verified candidate, with a guard against chaining: the page
   must pass the test against the cluster's representative (its first page), or be very
   similar to the member it matched (``J >= (1 + threshold) / 2``) and still fairly similar to
   the representative (``J >= threshold - 0.2``). Clusters whose representatives the page
   passes directly are merged (union-find); the earliest representative stays;
5. commits the page atomically (a shared store re-runs the check if another process changed
   a bucket meanwhile) and updates the per-host and mirror counters.
"""

from __future__ import annotations

import logging
import os
import time
from collections import OrderedDict
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from .hosts import host_of, mirror_target
from .minhash import estimate_jaccard
from .params import DetectorParams, describe_banding
from .report_data import build_report
from .simhash import hamming_many
from .sketch import Sketch, Sketcher
from .storage.base import (
    Commit,
    CommitResult,
    DocBatch,
    DocRecord,
    IndexStorage,
    LookupOrInsert,
    StorageError,
)
from .storage.memory import MemoryStorage
from .text import char_tokens, extract_main_text, html_to_text, normalize_text, tokenize
from .verdict import Status, Verdict

logger = logging.getLogger(__name__)

_MAX_COMMIT_ATTEMPTS = 20
_EXCERPT_CHARS = 2000  # per side of a report example
_CACHED_CHARS = 8000  # per cached text, so the window can move to where two texts differ
_MAX_EXAMPLES = 50
_EMPTY_KEYS = np.empty(0, dtype=np.uint64)


@dataclass
class _Match:
    """A verified decision before commit."""

    status: Status
    root: int = -1
    root_url: str | None = None
    root_host: str | None = None
    similarity: float | None = None
    hamming: int | None = None
    matched_url: str | None = None
    unions: list[tuple[int, int]] = field(default_factory=list)
    reason: str = ""


class NearDupDetector:
    """Crawl-time exact and near-duplicate detection over main content.

    Args:
        threshold: Jaccard similarity for a near-duplicate (default 0.8).
        algorithm: ``"both"`` (default), ``"minhash"`` or ``"simhash"``.
        storage: ``None``/``"memory"`` for the in-memory store, another kind understood by
            :func:`neardup_scrapy.core.storage.open_storage`, or an :class:`IndexStorage`.
        keep_excerpts: how many recent unique pages' main texts to keep (8,000 characters each,
            at most) so the report can show near-duplicate pairs side by side, cut around
            their first difference. 0 keeps none.
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
        **params: Any,
    ) -> None:
        self._init(DetectorParams(threshold=threshold, algorithm=algorithm, **params), storage, keep_excerpts)

    @classmethod
    def from_params(
        cls, params: DetectorParams, storage: IndexStorage | str | None = None, keep_excerpts: int = 2000
    ) -> NearDupDetector:
        """Build a detector from an existing :class:`DetectorParams`."""
        detector = cls.__new__(cls)
        detector._init(params, storage, keep_excerpts)
        return detector

    def _init(self, params: DetectorParams, storage: IndexStorage | str | None, keep_excerpts: int) -> None:
        self.params = params
        self._sketcher = Sketcher(params)
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
        self.counts: dict[str, int] = dict.fromkeys(("pages", "unique", "exact", "near", "skipped"), 0)
        self.skip_reasons: dict[str, int] = {}
        self.started = time.time()
        logger.debug("neardup detector: %s", describe_banding(params))

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
    ) -> Verdict:
        """Decide whether a page duplicates one seen before, and index it.

        Exactly one of ``html``, ``tree`` (an lxml root, e.g. Scrapy's ``response.selector.root``;
        never modified) or ``text`` (plain text) is used, in that order of preference for
        ``text`` > ``tree`` > ``html``. Bad input never raises: it gives a ``skipped`` verdict.

        Args:
            url: the page's url (its host drives per-host stats and mirrors).
            html: the page body, bytes or str.
            text: plain text instead of HTML (e.g. item fields).
            tree: an already parsed lxml tree of the page.
            encoding: the body's encoding when known (bytes ``html`` only).
            nbytes: the body size for the bytes-saved figure (default: ``len(html)``).

        Raises:
            StorageError: the store failed (after its own retries).
        """
        host = host_of(url)
        if nbytes is None:
            nbytes = len(html) if html is not None else len(text or "")
        try:
            if text is not None:
                raw = text[: self.params.max_text_chars]
            elif tree is not None:
                raw = extract_main_text(tree, self.params.max_text_chars)
            elif html is not None:
                raw = html_to_text(html, encoding, self.params.max_text_chars)
            else:
                return self._skip(url, host, "no content")
            normalized = normalize_text(raw, self.params.mask_digits)
            tokens = tokenize(normalized) if self.params.shingle_kind == "word" else char_tokens(normalized)
        except (ValueError, TypeError, UnicodeError, MemoryError, RecursionError) as exc:
            logger.debug("neardup: cannot read %s: %r", url, exc)
            return self._skip(url, host, f"unreadable ({type(exc).__name__})")
        if not tokens:
            return self._skip(url, host, "no text")
        sketch = self._sketcher.sketch(tokens, host)
        return self._check_sketch(url, host, sketch, raw, nbytes)

    def skip(self, url: str, reason: str) -> Verdict:
        """Count a page as skipped (not HTML, too large, opted out...) without checking it."""
        return self._skip(url, host_of(url), reason)

    def mirror_of(self, host: str) -> str | None:
        """The host ``host`` has been confirmed to mirror, if any (as seen by this process)."""
        return self._mirrors.get(host)

    @property
    def mirrors(self) -> dict[str, str]:
        """``{host: mirrored host}`` confirmed so far by this process."""
        return dict(self._mirrors)

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
        """The JSON-serialisable report (format ``neardup-report/1``; see README)."""
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
        parts = [sketch.exact_key]
        if algorithm in ("minhash", "both"):
            parts.append(sketch.band_keys)
        if algorithm in ("simhash", "both"):
            parts.append(sketch.simhash_keys)
        return np.concatenate(parts)

    def _check_sketch(self, url: str, host: str, sketch: Sketch, raw: str, nbytes: int) -> Verdict:
        keys = self._lookup_keys(sketch)
        exact_only = sketch.tokens < self.params.min_tokens
        lookup_or_insert: LookupOrInsert | None = getattr(self.storage, "lookup_or_insert", None)
        for _attempt in range(_MAX_COMMIT_ATTEMPTS):
            if lookup_or_insert is not None:
                # A page without candidate is unique: the store commits it in the lookup's step.
                match = self._no_candidate(exact_only)
                provisional = self._commit_for(url, host, sketch, match, None, nbytes, keys=keys)
                ids, token, result = lookup_or_insert(keys, provisional)
                if result is not None:
                    break
            else:
                ids, token = self.storage.lookup(keys)
            match = self._decide(sketch, self.storage.fetch(ids) if len(ids) else None, exact_only)
            result = self.storage.commit(self._commit_for(url, host, sketch, match, token, nbytes, keys=keys))
            if result is not None:
                break
        else:
            raise StorageError(
                f"index kept changing under page {url}; gave up after {_MAX_COMMIT_ATTEMPTS} tries"
            )
        return self._finish(url, host, sketch, raw, match, result=result, exact_only=exact_only)

    def _commit_for(  # noqa: PLR0917 (benchmarks/bench_core.py passes token and nbytes positionally)
        self,
        url: str,
        host: str,
        sketch: Sketch,
        match: _Match,
        token: object,
        nbytes: int,
        *,
        keys: np.ndarray[Any, np.dtype[np.uint64]] | None = None,
    ) -> Commit:
        """The store changes for one decided page (exact duplicates add no bucket entries).

        ``keys`` are the page's lookup keys when already computed.
        """
        if match.status == "exact":
            commit_keys = _EMPTY_KEYS
        else:
            commit_keys = self._lookup_keys(sketch) if keys is None else keys
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
        )
        return Commit(
            record=record,
            keys=commit_keys,
            token=token,
            unions=match.unions,
            host=host,
            status=match.status,
            duplicate_host=match.root_host,
            nbytes=nbytes,
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
    ) -> Verdict:
        self.counts["pages"] += 1
        self.counts[match.status] += 1
        target = mirror_target(
            host, result.host_pages, result.host_pairs, self.params.mirror_min_pages, self.params.mirror_share
        )
        if target is not None:
            self._mirrors[host] = target[0]
        else:
            self._mirrors.pop(host, None)
        cached = " ".join(raw[: _CACHED_CHARS * 2].split())[:_CACHED_CHARS]
        if match.status == "near" and len(self._examples) < _MAX_EXAMPLES and match.root in self._excerpts:
            left, right = _around_first_difference(self._excerpts[match.root], cached)
            self._examples.append(
                {
                    "status": "near",
                    "similarity": match.similarity,
                    "hamming": match.hamming,
                    "a": {"url": match.root_url, "text": left},
                    "b": {"url": url, "text": right},
                }
            )
        if self._keep_excerpts and match.status == "unique":
            self._excerpts[result.doc_id] = cached
            while len(self._excerpts) > self._keep_excerpts:
                self._excerpts.popitem(last=False)
        return Verdict(
            url=url,
            host=host,
            status=match.status,
            duplicate_of=match.root_url,
            similarity=match.similarity,
            hamming=match.hamming,
            cluster=url if match.status == "unique" else match.root_url,
            mirror_of=self._mirrors.get(host),
            reason=match.reason,
            matched=match.matched_url,
            tokens=sketch.tokens,
            exact_only=exact_only,
            doc_id=result.doc_id,
        )

    def _passes(
        self, similarity: np.ndarray[Any, Any], distance: np.ndarray[Any, Any]
    ) -> np.ndarray[Any, Any]:
        algorithm = self.params.algorithm
        by_minhash = similarity >= self.params.threshold
        by_simhash = distance <= self.params.simhash_distance
        if algorithm == "minhash":
            return by_minhash
        if algorithm == "simhash":
            return by_simhash
        return by_minhash | by_simhash

    def _no_candidate(self, exact_only: bool) -> _Match:
        """The decision for a page with no candidate at all."""
        return _Match(
            "unique", reason=self._exact_only_reason() if exact_only else "no candidate in the index"
        )

    def _exact_only_reason(self) -> str:
        return f"fewer than {self.params.min_tokens} tokens: matched exactly only"

    def _decide(self, sketch: Sketch, batch: DocBatch | None, exact_only: bool) -> _Match:
        short = self._exact_only_reason() if exact_only else ""
        if batch is None or not len(batch):
            return self._no_candidate(exact_only)
        alive = np.ones(len(batch), dtype=bool)
        if self.params.ttl is not None:
            alive = batch.added >= time.time() - self.params.ttl
        similarity = estimate_jaccard(sketch.stored, batch.signatures)
        distance = hamming_many(sketch.simhash, batch.simhashes)

        exact_rows = [i for i, d in enumerate(batch.digests) if d == sketch.digest and alive[i]]
        if exact_rows:
            row = min(exact_rows, key=lambda i: (int(batch.roots[i]), int(batch.ids[i])))
            root = int(batch.roots[row])
            rep, rep_row = self._row_of(batch, root)
            return _Match(
                "exact",
                root=root,
                root_url=rep.urls[rep_row],
                root_host=rep.hosts[rep_row],
                similarity=float(estimate_jaccard(sketch.stored, rep.signatures[rep_row])[0]),
                hamming=int(hamming_many(sketch.simhash, rep.simhashes[rep_row : rep_row + 1])[0]),
                matched_url=batch.urls[row],
                reason="identical main text",
            )
        if exact_only:
            return _Match("unique", reason=short)

        passing = np.flatnonzero(self._passes(similarity, distance) & alive).tolist()
        if not len(passing):
            return _Match("unique", reason=f"{len(batch)} candidate(s), none similar enough")
        roots = sorted({int(batch.roots[i]) for i in passing})
        missing = np.array([r for r in roots if r not in set(batch.ids.tolist())], dtype=np.int64)
        root_batch = self.storage.fetch(missing) if len(missing) else None

        member_bar = (1.0 + self.params.threshold) / 2.0
        floor = self.params.threshold - 0.2
        accepted: list[tuple[float, int, int, int, bool]] = []  # (similarity, -root, root, best_row, direct)
        for root in roots:
            src, src_row = self._row_of(batch, root, root_batch)
            root_sim = float(estimate_jaccard(sketch.stored, src.signatures[src_row])[0])
            root_dist = int(hamming_many(sketch.simhash, src.simhashes[src_row : src_row + 1])[0])
            direct = bool(self._passes(np.array([root_sim]), np.array([root_dist]))[0])
            rows = [i for i in passing if int(batch.roots[i]) == root]
            best_row = max(rows, key=lambda i: (similarity[i], -int(batch.ids[i])))
            via_member = similarity[best_row] >= member_bar and root_sim >= floor
            if direct or via_member:
                accepted.append((root_sim, -root, root, best_row, direct))
        if not accepted:
            return _Match(
                "unique", reason="similar only to members of clusters it does not fit (chaining guard)"
            )
        accepted.sort(reverse=True)
        _, _, best_root, best_row, _ = accepted[0]
        direct_roots = sorted({root for *_, root, _, direct in accepted if direct} | {best_root})
        final_root = direct_roots[0]
        unions = [(r, final_root) for r in direct_roots[1:]]
        final, final_row = self._row_of(batch, final_root, root_batch)
        final_sim = float(estimate_jaccard(sketch.stored, final.signatures[final_row])[0])
        final_dist = int(hamming_many(sketch.simhash, final.simhashes[final_row : final_row + 1])[0])
        reason = f"J~{similarity[best_row]:.2f}, H={int(distance[best_row])} with {batch.urls[best_row]}" + (
            f"; merged {len(unions)} cluster(s)" if unions else ""
        )
        return _Match(
            "near",
            root=final_root,
            root_url=final.urls[final_row],
            root_host=final.hosts[final_row],
            similarity=final_sim,
            hamming=final_dist,
            matched_url=batch.urls[best_row],
            unions=unions,
            reason=reason,
        )

    def _row_of(self, batch: DocBatch, doc_id: int, extra: DocBatch | None = None) -> tuple[DocBatch, int]:
        """Find ``doc_id`` in ``batch`` or ``extra``, fetching it when in neither."""
        for source in (batch, extra):
            if source is not None and len(source):
                hits = np.flatnonzero(source.ids == doc_id)
                if len(hits):
                    return source, int(hits[0])
        fetched = self.storage.fetch(np.array([doc_id], dtype=np.int64))
        return fetched, 0


def _around_first_difference(a: str, b: str) -> tuple[str, str]:
    """Cut two texts to ``_EXCERPT_CHARS`` starting a little before where they first differ."""
    same = len(os.path.commonprefix([a, b]))  # noqa: RUF071 (a character prefix is what is wanted)
    start = max(0, same - _EXCERPT_CHARS // 4)
    if start:
        start = a.rfind(" ", 0, start) + 1  # do not cut a word
    return a[start : start + _EXCERPT_CHARS], b[start : start + _EXCERPT_CHARS]
