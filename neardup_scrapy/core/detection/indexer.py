"""The index half of a check: a sketched page's keys and candidates (:mod:`.lookup`), the
decision (:mod:`.decide`), the commit and the verdict (:mod:`.commit`), then the counts, the
report's examples (:mod:`neardup_scrapy.core.excerpts`) and the mirror hosts named so far
(:mod:`.mirror_state`), read again when the counts say it is due."""

from __future__ import annotations

from neardup_scrapy.core.excerpts import Examples
from neardup_scrapy.core.params import DetectorParams
from neardup_scrapy.core.sketch import Sketch
from neardup_scrapy.core.storage.base import Commit, IndexStorage
from neardup_scrapy.core.urls import canonical_address
from neardup_scrapy.core.verdict import Verdict
from neardup_scrapy.core.verify import PairRule

from .commit import EMPTY_KEYS, Committer, revisit_verdict, verdict
from .decide import Decider, Match
from .lookup import Lookup
from .mirror_state import MirrorState


class Indexer:
    """Decides, commits and counts sketched pages; keeps the texts and pairs of the report's
    examples (``keep_excerpts`` texts; ``url_identity`` as in :class:`~.lookup.Lookup`)."""

    def __init__(
        self,
        params: DetectorParams,
        storage: IndexStorage,
        mirror_state: MirrorState,
        keep_excerpts: int,
        url_identity: bool,
    ) -> None:
        self.params = params
        self._storage = storage
        self._mirror_state = mirror_state
        self.rule = PairRule(params)
        self.lookup = Lookup(params, storage, url_identity)
        self.decider = Decider(params, self.rule, storage, url_identity)
        self.committer = Committer(params, storage, self.lookup, self.decider, url_identity)
        self.examples = Examples(keep_excerpts)
        #: Pages recorded by what they added to the counts (``Verdict.counted``): ``pages`` is
        #: the sum of the other five.
        self.counts: dict[str, int] = dict.fromkeys(
            ("pages", "unique", "exact", "near", "skipped", "revisits"), 0
        )
        #: Skipped pages by reason.
        self.skip_reasons: dict[str, int] = {}

    def skip(self, url: str, host: str, reason: str) -> Verdict:
        """Count a page as skipped for ``reason``."""
        self._storage.commit(Commit(record=None, keys=EMPTY_KEYS, token=None, host=host, status="skipped"))
        self.counts["pages"] += 1
        self.counts["skipped"] += 1
        self.skip_reasons[reason] = self.skip_reasons.get(reason, 0) + 1
        return Verdict(
            url=url, host=host, status="skipped", reason=reason, mirror_of=self._mirror_state.mirror_of(host)
        )

    def check_sketch(
        self, url: str, host: str, sketch: Sketch, raw: str, nbytes: int, *, canonical: str = ""
    ) -> Verdict:
        """Decide and commit a page of main text ``raw`` by its sketch, and count it.

        Raises:
            StorageError: the store failed (after its own retries).
        """
        address = canonical_address(url, canonical or sketch.canonical)
        exact_only = sketch.tokens < self.params.min_tokens
        match, result = self.committer.index(
            url, host, sketch, nbytes, address=address, exact_only=exact_only
        )
        if result is None:  # a revisit
            self.counts["pages"] += 1
            self.counts["revisits"] += 1
            return revisit_verdict(
                url, host, sketch, match, exact_only=exact_only, mirror_of=self._mirror_state.mirror_of(host)
            )
        replaced = self.committer.original_of(url, host, match, result, address)
        self._count(host, match)
        if match.status == "near":
            self.examples.add_pair(
                url,
                raw,
                root=match.root,
                root_url=match.root_url,
                similarity=match.similarity,
                hamming=match.hamming,
            )
        if match.status == "unique" or replaced:
            self.examples.keep_text(result.doc_id, raw)
        mirror_of = self._mirror_state.mirror_of(host)
        return verdict(url, host, sketch, match, result, exact_only, address, replaced, mirror_of)

    def _count(self, host: str, match: Match) -> None:
        """Count a committed page and read the mirror evidence again when due."""
        self.counts["pages"] += 1
        self.counts[match.status] += 1
        if match.status != "unique" or host in self._mirror_state:
            # a duplicate is new evidence; so is a page of its own on a host named a mirror (the
            # share of its documents that are copies falls)
            self._mirror_state.evidence_changed = True
        self._mirror_state.refresh(self.counts["pages"])
