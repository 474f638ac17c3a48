"""The decision over a page's candidates: which cluster, if any, the page joins and by which rule.

:class:`Decider` verifies the candidates the lookup returned by the rule of :mod:`.verify` (a
bucket hit alone never makes a duplicate), deduplicated by cluster, and applies the guard
against chaining (see :mod:`.detector`, step 3). It reads the store (cluster representatives
not in the batch) and never writes it.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from neardup_scrapy.core.minhash import estimate_jaccard
from neardup_scrapy.core.native.sketch import heads_agree
from neardup_scrapy.core.params import DetectorParams
from neardup_scrapy.core.simhash import hamming_many
from neardup_scrapy.core.sketch import Sketch
from neardup_scrapy.core.storage.base import DocBatch, IndexStorage
from neardup_scrapy.core.verify import RULE_EXACT, RULE_MEMBER_COPY, PairRule, Passed, measured_similarity


@dataclass
class Match:
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
    known: Rows | None = None


class Decider:
    """Decides a page's verdict from its candidates (``url_identity``: a url checked again is the
    same page, a ``revisit``)."""

    def __init__(
        self, params: DetectorParams, rule: PairRule, storage: IndexStorage, url_identity: bool
    ) -> None:
        self.params = params
        self._rule = rule
        self._storage = storage
        self._url_identity = url_identity

    def no_candidate(self, exact_only: bool) -> Match:
        """The decision for a page with no candidate at all."""
        return Match("unique", reason=self.exact_only_reason() if exact_only else "no candidate in the index")

    def exact_only_reason(self) -> str:
        """Why a page too short for shingles was only matched exactly."""
        return f"fewer than {self.params.min_tokens} tokens: matched exactly only"

    def _judge_view(
        self, similarity: float, _hamming: int, *, profiles: tuple[bytes, bytes], urls: tuple[str, str]
    ) -> Passed | None:
        return self._rule.view(similarity, profiles=profiles, urls=urls)

    def decide(self, url: str, sketch: Sketch, batch: DocBatch | None, exact_only: bool) -> Match:
        """The decision for page ``url`` over its candidates ``batch`` (``exact_only``: the page is
        too short for shingles)."""
        if batch is None or not len(batch):
            return self.no_candidate(exact_only)
        if self.params.ttl is not None:
            alive = (batch.added >= time.time() - self.params.ttl).tolist()
        else:
            alive = [True] * len(batch)
        known = Rows(self._storage, sketch, batch, self.params.shingle_size)
        roots, ids = batch.roots.tolist(), batch.ids.tolist()
        sims = [known.find(doc_id).similarity for doc_id in ids]
        dists = [known.find(doc_id).hamming for doc_id in ids]

        for i, other in enumerate(batch.urls):
            if other == url and alive[i] and self._url_identity:
                rep = known.find(roots[i])
                return Match(
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
                return Match(
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
            return Match(
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
                return Match("unique", reason=self.exact_only_reason())
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
                return Match("unique", reason=self.exact_only_reason())
            return Match("unique", reason=f"{len(batch)} candidate(s), none similar enough")
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
            return Match(
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
        return Match(
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
class Doc:
    """A page the decision compares with: where it is, and how close the new page is to it."""

    url: str
    host: str
    similarity: float
    hamming: int
    profile: bytes
    signature: Any


class Rows:
    """The pages a decision compares with, by id: the candidate batch, plus cluster
    representatives fetched from the store on demand; each with its similarity to the page
    (:func:`~.verify.measured_similarity`: exact between short pages, else estimated)."""

    def __init__(self, storage: IndexStorage, sketch: Sketch, batch: DocBatch, shingle_size: int) -> None:
        self._storage = storage
        self._sketch = sketch
        self._shingle_size = shingle_size
        self._docs: dict[int, Doc] = {}
        self._add(batch)

    def prefetch(self, doc_ids: list[int]) -> None:
        """Fetch, in one call, the pages of ``doc_ids`` not at hand."""
        missing = [d for d in doc_ids if d not in self._docs]
        if missing:
            self._add(self._storage.fetch(np.array(missing, dtype=np.int64)))

    def find(self, doc_id: int) -> Doc:
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
            self._docs[doc_id] = Doc(
                batch.urls[i], batch.hosts[i], similarity, dists[i], profiles[i], batch.signatures[i]
            )
