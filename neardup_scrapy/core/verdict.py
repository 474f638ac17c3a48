"""The verdict of one page and its tag object (the same in CLI output, items and ``meta``)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

Status = Literal["unique", "exact", "near", "skipped"]
STATUSES: tuple[Status, ...] = ("unique", "exact", "near", "skipped")


@dataclass(frozen=True)
class Verdict:
    """What the detector decided about one page, and why.

    Attributes:
        url: the page.
        host: its host (lower-cased).
        status: ``unique``, ``exact``, ``near`` or ``skipped``.
        duplicate_of: url of the representative of the cluster the page joined (duplicates only).
        similarity: estimated Jaccard with the representative (duplicates only).
        hamming: SimHash distance to the representative (duplicates only).
        cluster: id of the page's cluster: the representative's url (``None`` when skipped).
        mirror_of: host that this page's host mirrors, if it has been confirmed as a mirror.
        reason: one short sentence explaining the verdict.
        rule: for a duplicate, the verification rule the page passed (``exact``,
            ``member-copy``, ``near-identical``, ``release``, ``resemblance``, ``edited``,
            ``revised`` or ``view``: see :mod:`~.verify`); ``""`` otherwise.
        matched: url of the page the candidate check matched (may be a cluster member, not
            the representative).
        tokens: number of main-content tokens.
        exact_only: the page had fewer than ``min_tokens`` tokens and was matched exactly only
            (or as another view of its own address: verification rule 6).
        doc_id: position of the page in the index (``None`` when skipped or not stored).
        canonical: the absolute url of the page's ``<link rel=canonical>``, if it has one.
    """

    url: str
    host: str
    status: Status
    duplicate_of: str | None = None
    similarity: float | None = None
    hamming: int | None = None
    cluster: str | None = None
    mirror_of: str | None = None
    reason: str = ""
    rule: str = ""
    matched: str | None = None
    tokens: int = 0
    exact_only: bool = False
    doc_id: int | None = None
    canonical: str | None = None

    @property
    def is_duplicate(self) -> bool:
        """True for ``exact`` and ``near``."""
        return self.status in ("exact", "near")

    def to_dict(self) -> dict[str, Any]:
        """The tag object: ``status, duplicate_of, similarity, hamming, cluster, mirror_of``."""
        return {
            "status": self.status,
            "duplicate_of": self.duplicate_of,
            "similarity": None if self.similarity is None else round(self.similarity, 4),
            "hamming": self.hamming,
            "cluster": self.cluster,
            "mirror_of": self.mirror_of,
        }

    def explain(self) -> dict[str, Any]:
        """The tag object plus the explanation fields (``reason``, ``matched``, ``tokens``, ...)."""
        data = self.to_dict()
        data.update(
            reason=self.reason,
            rule=self.rule,
            matched=self.matched,
            tokens=self.tokens,
            exact_only=self.exact_only,
        )
        return data
