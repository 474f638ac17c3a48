"""Mirror hosts from evidence that does not depend on the order pages arrive in.

A page's arrival order decides which page of a cluster is its representative, so "pages of A
that duplicate pages first seen on B" splits a mirror pair when both hosts are crawled at once.
The evidence here counts **documents** (clusters of duplicates) instead, the same both ways:

* ``documents[A]``: clusters holding a page of host A (its distinct documents);
* ``duplicated[A]``: of them, clusters that also hold a page of another host;
* ``shared[A][B]``: clusters holding pages of both A and B (symmetric);
* ``canonical[A][B]``: pages of A whose ``<link rel=canonical>`` names host B.

Documents, not pages: a host's own variants (print views, session urls) of one article are one
document, so they do not inflate its evidence. Each counter is kept up to date as pages join
clusters and clusters merge (:class:`MirrorLedger`); :func:`mirror_pairs` decides from them:

* A **copies most** of what it has when ``duplicated[A] >= min_pages`` and
  ``duplicated[A] >= share * documents[A]``;
* such a host A **mirrors** B when they share at least ``min_pages`` documents, unless B is
  itself a copy of a host that does not copy (two archives of one origin share documents
  without copying each other), and the **direction** points from A to B. The direction is
  decided by evidence, never by arrival: canonical links naming the other host; else a B that
  does not also copy most of what it has is the origin; else the host whose copies spread over
  more hosts is the aggregator; else the host more completely made of the other's documents is
  the copy. Two hosts that serve the same documents with no such evidence are left undecided.

An archive or aggregator copies several origins: it gets one pair per origin. A copy is never
named as the origin of a host that also copies that copy's own origin.

**Settled directions.** A crawl acts on a pair (skips the mirror's requests, keeps the origin's
page as its documents' representative) only once its direction is *settled* (:func:`settled`):
decided on evidence that the order in which pages arrive cannot flip. Counts of what has arrived
can always be flipped by what has not arrived yet -- a copy crawled faster than its origin holds,
for a while, "documents of its own" that are only its origin's pages not fetched yet -- so:

* a **declaration** settles it: the copy's pages name the other host's pages as canonical, in at
  least ``min_pages`` more pages than the other names it. A canonical link says the same
  whenever its page is read; arrival order only changes how many have been read;
* **counts** settle it only with a margin of ``min_pages`` documents on both sides of the
  claim: the mirror copies most of what it has by ``min_pages`` documents (that many more
  documents of its own would not change it), and the origin has ``min_pages`` more documents
  of its own (on no other host) than the mirror has. A crawl that is merely ahead on one host
  flips a comparison of small counts, not one with a margin of the size it takes to pair two
  hosts at all.

When a crawl has given requests up on a settled pair, :func:`survives` tells, at its end,
whether the pair would hold whatever those requests turn out to be.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field


@dataclass
class MirrorEvidence:
    """Counters :func:`mirror_pairs` decides from (see the module docstring).

    ``shared`` and ``canonical`` may hold only the hosts that decisions at some thresholds
    read (:func:`read_evidence`); ``pages``, ``documents`` and ``duplicated`` hold every host.
    """

    pages: dict[str, int] = field(default_factory=dict)
    documents: dict[str, int] = field(default_factory=dict)
    duplicated: dict[str, int] = field(default_factory=dict)
    shared: dict[str, dict[str, int]] = field(default_factory=dict)
    canonical: dict[str, dict[str, int]] = field(default_factory=dict)


@dataclass(frozen=True)
class MirrorPair:
    """One (mirror host, origin host) pair, as the report lists it.

    ``pages`` counts the documents the two share; ``duplicate_share`` is that count over the
    mirror's documents.
    """

    host: str
    mirror_of: str
    pages: int
    duplicate_share: float


#: ``{host: {other host: count}}``: rows of ``shared`` or ``canonical``.
Rows = dict[str, dict[str, int]]


def _bump(row: dict[str, int], key: str, n: int) -> None:
    value = row.get(key, 0) + n
    if value:
        row[key] = value
    else:
        row.pop(key, None)


class MirrorLedger:
    """Per-cluster host counts and the counters of :class:`MirrorEvidence`, kept incrementally.

    Clusters are named by their root page id. A cluster of one page is not stored: the caller
    names its host when it grows. ``dirty_clusters``, ``dropped_clusters`` and ``dirty_hosts``
    record what changed since :meth:`clear_dirty`, for stores that persist the ledger.
    """

    def __init__(self) -> None:
        self.cluster_hosts: dict[int, dict[str, int]] = {}
        self.documents: dict[str, int] = {}
        self.duplicated: dict[str, int] = {}
        self.shared: dict[str, dict[str, int]] = {}
        self.canonical: dict[str, dict[str, int]] = {}
        self.dirty_clusters: set[int] = set()
        self.dropped_clusters: set[int] = set()
        self.dirty_hosts: set[str] = set()

    def _hosts(self, root: int, root_host: str) -> dict[str, int]:
        return self.cluster_hosts.get(root) or {root_host: 1}

    def _count(self, table: dict[str, int], host: str, n: int) -> None:
        _bump(table, host, n)
        self.dirty_hosts.add(host)

    def _share(self, a: str, b: str, n: int) -> None:
        _bump(self.shared.setdefault(a, {}), b, n)
        _bump(self.shared.setdefault(b, {}), a, n)
        self.dirty_hosts.update((a, b))

    def new_document(self, host: str) -> None:
        """A page of ``host`` starts a cluster of its own."""
        self._count(self.documents, host, 1)

    def join(self, root: int, root_host: str, host: str) -> None:
        """A page of ``host`` joins the cluster ``root`` (whose root page is on ``root_host``)."""
        counts = dict(self._hosts(root, root_host))
        if host not in counts:
            self._count(self.documents, host, 1)
            self._count(self.duplicated, host, 1)
            if len(counts) == 1:
                self._count(self.duplicated, next(iter(counts)), 1)  # the cluster now spans hosts
            for other in counts:
                self._share(host, other, 1)
        counts[host] = counts.get(host, 0) + 1
        self.cluster_hosts[root] = counts
        self.dirty_clusters.add(root)

    def union(self, root: int, root_host: str, into: int, into_host: str) -> None:
        """Cluster ``root`` joins cluster ``into`` (each named with its root page's host)."""
        if root == into:
            return
        first, second = self._hosts(root, root_host), self._hosts(into, into_host)
        merged = dict(second)
        for host, n in first.items():
            merged[host] = merged.get(host, 0) + n
        hosts = sorted(merged)
        for host in hosts:
            if host in first and host in second:
                self._count(self.documents, host, -1)  # two of its documents became one
            before = (host in first and len(first) > 1) + (host in second and len(second) > 1)
            self._count(self.duplicated, host, int(len(merged) > 1) - before)
        for i, a in enumerate(hosts):
            for b in hosts[i + 1 :]:
                before = (a in first and b in first) + (a in second and b in second)
                if before != 1:
                    self._share(a, b, 1 - before)
        self.cluster_hosts.pop(root, None)
        self.cluster_hosts[into] = merged
        self.dropped_clusters.add(root)
        self.dirty_clusters.discard(root)
        self.dirty_clusters.add(into)

    def rename(self, root: int, new_root: int) -> None:
        """Cluster ``root`` is now named by ``new_root`` (its representative changed)."""
        hosts = self.cluster_hosts.pop(root, None)
        if hosts is None or root == new_root:
            if hosts is not None:
                self.cluster_hosts[root] = hosts
            return
        self.cluster_hosts[new_root] = hosts
        self.dropped_clusters.add(root)
        self.dirty_clusters.discard(root)
        self.dirty_clusters.add(new_root)

    def canonical_link(self, host: str, target: str) -> None:
        """A page of ``host`` names ``target`` (another host) as its canonical location."""
        _bump(self.canonical.setdefault(host, {}), target, 1)
        self.dirty_hosts.add(host)

    def evidence(self, pages: Mapping[str, int], min_pages: int = 0, share: float = 0.0) -> MirrorEvidence:
        """The current evidence, with ``pages`` the counted pages of every host; the rows that
        decisions at ``min_pages`` and ``share`` read (:func:`read_evidence`)."""

        def rows(hosts: list[str]) -> tuple[Rows, Rows]:
            shared = {h: dict(self.shared[h]) for h in hosts if self.shared.get(h)}
            return shared, {h: dict(self.canonical[h]) for h in hosts if self.canonical.get(h)}

        documents, duplicated = dict(self.documents), dict(self.duplicated)
        return read_evidence(documents, duplicated, rows, min_pages=min_pages, share=share, pages=dict(pages))

    def clear_dirty(self) -> None:
        """Forget what changed (after a store persisted it)."""
        self.dirty_clusters.clear()
        self.dropped_clusters.clear()
        self.dirty_hosts.clear()


def read_evidence(
    documents: dict[str, int],
    duplicated: dict[str, int],
    read_tables: Callable[[list[str]], tuple[Rows, Rows]],
    *,
    min_pages: int = 0,
    share: float = 0.0,
    pages: dict[str, int] | None = None,
) -> MirrorEvidence:
    """The evidence with the ``shared`` and ``canonical`` rows that decisions at ``min_pages``
    and at any share of at least ``share`` read, fetched with ``read_tables(hosts)`` (the rows
    of those hosts that have any).

    Every decision starts from a host that copies most of what it has (:func:`copies_most`, from
    the per-host counters alone) and reads its rows, then the rows of the hosts it shares at
    least ``min_pages`` documents with (their spread and canonical links). No other row is
    read, so a crawl of many hosts reads the rows of the few that copy, in two requests, not
    those of every host. ``min_pages = 0`` and ``share = 0`` read every host's rows.
    """
    ev = MirrorEvidence(pages=dict(pages or {}), documents=documents, duplicated=duplicated)

    def fetch(hosts: list[str]) -> None:
        if hosts:
            shared, canonical = read_tables(hosts)
            ev.shared.update(shared)
            ev.canonical.update(canonical)

    copying = sorted(h for h in set(documents) | set(duplicated) if copies_most(ev, h, min_pages, share))
    fetch(copying)
    partners = {other for h in copying for other, n in ev.shared.get(h, {}).items() if n >= min_pages}
    fetch(sorted(partners - set(copying)))
    return ev


def copies_most(ev: MirrorEvidence, host: str, min_pages: int, share: float) -> bool:
    """Whether most of ``host``'s documents are also on other hosts."""
    duplicated = ev.duplicated.get(host, 0)
    return duplicated >= min_pages and duplicated >= share * max(ev.documents.get(host, 0), 1)


def copies(ev: MirrorEvidence, host: str, origin: str, min_pages: int, share: float) -> bool | None:
    """Whether ``host`` is the copy of ``origin`` (``None``: no evidence either way).

    Assumes ``host`` copies most of what it has and shares documents with ``origin``.
    """
    c_to = ev.canonical.get(host, {}).get(origin, 0)
    c_from = ev.canonical.get(origin, {}).get(host, 0)
    if c_to != c_from:
        return c_to > c_from
    if not copies_most(ev, origin, min_pages, share):
        return True  # the origin has documents of its own beyond what the two share
    spread_host, spread_origin = len(ev.shared.get(host, {})), len(ev.shared.get(origin, {}))
    if spread_host != spread_origin:
        return spread_host > spread_origin  # an aggregator copies from many hosts
    shared = ev.shared[host][origin]
    own = shared / max(ev.documents.get(host, 0), 1)
    other = shared / max(ev.documents.get(origin, 0), 1)
    if abs(own - other) >= 0.1:
        return own > other
    return None


def _copy_of_another(ev: MirrorEvidence, host: str, but: str, min_pages: int, share: float) -> bool:
    """Whether ``host`` copies most of what it has and shares documents with a host (other than
    ``but``) that does not: a copy, not an origin."""
    if not copies_most(ev, host, min_pages, share):
        return False
    return any(
        other != but and not copies_most(ev, other, min_pages, share) for other in ev.shared.get(host, {})
    )


def _candidates(
    ev: MirrorEvidence, min_pages: int, share: float, hosts: Iterable[str] | None
) -> list[tuple[str, str]]:
    out = []
    for host in sorted(hosts if hosts is not None else ev.shared):
        if not copies_most(ev, host, min_pages, share):
            continue
        for origin, n in sorted(ev.shared.get(host, {}).items()):
            if n >= min_pages and not _copy_of_another(ev, origin, host, min_pages, share):
                out.append((host, origin))
    return out


def mirror_pairs(
    ev: MirrorEvidence,
    min_pages: int,
    share: float,
    hosts: Iterable[str] | None = None,
) -> list[MirrorPair]:
    """(mirror, origin) pairs the evidence supports (see the module docstring), strongest first.

    Args:
        ev: the evidence.
        min_pages: documents a pair must share, and a mirror must have duplicated, at least.
        share: share of a mirror's documents that must also be on other hosts.
        hosts: only pairs whose mirror is one of these (default: all hosts).
    """
    decided = {
        (host, origin)
        for host, origin in _candidates(ev, min_pages, share, None)
        if copies(ev, host, origin, min_pages, share)
    }
    wanted = None if hosts is None else set(hosts)
    out = []
    for host, origin in sorted(decided):
        if wanted is not None and host not in wanted:
            continue
        # A copy is not an origin: when ``origin`` is itself a copy of a third host that ``host``
        # also copies, the pair names the first-hand source only.
        if any(m == origin and o != host and (host, o) in decided for m, o in decided):
            continue
        n = ev.shared[host][origin]
        out.append(MirrorPair(host, origin, n, round(n / max(ev.documents.get(host, 0), 1), 4)))
    out.sort(key=lambda p: (-p.pages, p.host, p.mirror_of))
    return out


def undecided_pairs(ev: MirrorEvidence, min_pages: int, share: float) -> list[tuple[str, str]]:
    """Host pairs that serve the same documents with no evidence of which copies the other."""
    return sorted(
        (host, origin)
        for host, origin in _candidates(ev, min_pages, share, None)
        if host < origin and copies(ev, host, origin, min_pages, share) is None
    )


def _own(ev: MirrorEvidence, host: str) -> int:
    """Documents of ``host`` that no other host has (so far)."""
    return ev.documents.get(host, 0) - ev.duplicated.get(host, 0)


def _declared(ev: MirrorEvidence, host: str, origin: str) -> int:
    """Pages of ``host`` naming ``origin`` canonical, less the pages of ``origin`` naming ``host``."""
    return ev.canonical.get(host, {}).get(origin, 0) - ev.canonical.get(origin, {}).get(host, 0)


def settled(ev: MirrorEvidence, host: str, origin: str, min_pages: int, share: float) -> bool:
    """Whether the direction "``host`` copies ``origin``" is settled (see the module docstring).

    Assumes the pair is confirmed (:func:`mirror_pairs`). Either ``host``'s pages name
    ``origin`` canonical in ``min_pages`` more pages than the reverse, or (no canonical link
    pointing the other way) ``host`` copies most of what it has with ``min_pages`` documents
    to spare -- ``duplicated >= share * documents + min_pages`` -- and ``origin`` has
    ``min_pages`` more documents on no other host than ``host`` has.
    """
    declared = _declared(ev, host, origin)
    if declared >= min_pages:
        return True
    if declared < 0:
        return False
    surplus = ev.duplicated.get(host, 0) - share * ev.documents.get(host, 0)
    return surplus >= min_pages and _own(ev, origin) - _own(ev, host) >= min_pages


def survives(
    ev: MirrorEvidence, host: str, origin: str, unseen: int, *, min_pages: int, share: float, keep: float
) -> bool:
    """Whether the pair "``host`` mirrors ``origin``" holds whatever ``unseen`` more pages of
    ``host`` turn out to be (the requests a crawl gave up on it, when nothing else is left to
    come).

    Each unseen page may be a document of ``host``'s own (the copy copies less) or a copy of one
    of ``origin``'s own documents (the origin looks more like a copy); every split of them is
    tried, with no canonical link among them. The pair holds when, in every case, ``host`` still
    copies at least ``keep * share`` of its documents (the share a confirmed pair keeps) and the
    direction is still decided for it (:func:`copies` is ``True``: not reversed, nor left
    undecided).
    """
    own_host = ev.duplicated.get(host, 0)
    if own_host < max(min_pages, keep * share * (ev.documents.get(host, 0) + unseen)):
        return False  # every unseen page a document of its own
    origin_own = max(0, _own(ev, origin))
    for copied in range(min(unseen, origin_own) + 1):
        if copies(_with_unseen(ev, host, origin, unseen, copied), host, origin, min_pages, share) is not True:
            return False
    return True


def _with_unseen(ev: MirrorEvidence, host: str, origin: str, unseen: int, copied: int) -> MirrorEvidence:
    """The evidence had ``host``'s ``unseen`` pages been ``copied`` copies of ``origin``'s own
    documents and the rest documents of ``host``'s own."""
    documents, duplicated = dict(ev.documents), dict(ev.duplicated)
    documents[host] = documents.get(host, 0) + unseen
    duplicated[host] = duplicated.get(host, 0) + copied
    duplicated[origin] = duplicated.get(origin, 0) + copied
    shared = dict(ev.shared)
    shared[host] = {**shared.get(host, {}), origin: shared.get(host, {}).get(origin, 0) + copied}
    shared[origin] = {**shared.get(origin, {}), host: shared.get(origin, {}).get(host, 0) + copied}
    return MirrorEvidence(ev.pages, documents, duplicated, shared, ev.canonical)
