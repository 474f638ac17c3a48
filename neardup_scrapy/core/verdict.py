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
        revisit: the url was checked before; ``status`` and the rest are what it got then, and
            the page counts as a revisit (``neardup/revisits``), not again by its status.
        replaced: for a duplicate that replaced the page it duplicates as its cluster's
            representative (it is the original of that copy, checked before it: the address the
            copy names canonical, or a page of the host the copy's host mirrors), that page's
            url; ``None`` otherwise. Such a page keeps its status (it came after its copy) but
            is never dropped, and later pages name it.
        undecided: a duplicate of a page of another host with nothing yet telling which of the
            two is the original (no canonical link naming another address, no settled mirror
            direction between the hosts): drop mode keeps it.
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
    revisit: bool = False
    replaced: str | None = None
    undecided: bool = False

    @property
    def is_duplicate(self) -> bool:
        """True for ``exact`` and ``near``."""
        return self.status in ("exact", "near")

    @property
    def counted(self) -> str:
        """What the page adds to the counts: ``"revisits"`` for a revisit, else its status."""
        return "revisits" if self.revisit else self.status

    @property
    def droppable(self) -> bool:
        """Whether drop mode drops the page: a duplicate that is not undecided and did not
        replace its copy as the representative."""
        return self.is_duplicate and not self.undecided and self.replaced is None

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
            revisit=self.revisit,
            replaced=self.replaced,
            undecided=self.undecided,
        )
        return data
