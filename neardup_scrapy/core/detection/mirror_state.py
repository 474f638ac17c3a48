"""The mirror hosts a detector has named so far, from its store's evidence (the decision on
the evidence itself is :mod:`.mirrors`)."""

from __future__ import annotations

import logging

from neardup_scrapy.core.mirrors import (
    MirrorPair,
    copies,
    copies_most,
    mirror_pairs,
    settled,
    survives,
    undecided_pairs,
)
from neardup_scrapy.core.params import DetectorParams
from neardup_scrapy.core.storage.base import IndexStorage

logger = logging.getLogger(__name__)

#: A confirmed mirror pair stays while it passes at this share of ``mirror_share`` (hysteresis).
_MIRROR_KEEP = 0.5
#: The mirror evidence is read again after a duplicate changed it, at most once per this many
#: pages: ``min(500, max(1, pages // 50))`` -- counted, not timed, so verdicts never depend on
#: how fast pages arrive; prompt on small crawls, amortised on large ones.
_MIRROR_REFRESH_MAX = 500


class MirrorState:
    """The confirmed mirror pairs and the map ``{mirror host: origin host}`` of those whose
    direction is settled, kept up to date from the store's mirror evidence."""

    def __init__(self, params: DetectorParams, storage: IndexStorage) -> None:
        self.params = params
        self._storage = storage
        self._mirrors: dict[str, str] = {}
        #: Increases whenever :attr:`mirrors` changes (for processes that keep a copy of it).
        self.version = 0
        self._confirmed: set[tuple[str, str]] = set()
        #: confirmed pairs whose direction is settled (``mirrors``, the map the crawl acts on)
        self._settled: set[tuple[str, str]] = set()
        self._undecided: set[tuple[str, str]] = set()
        self._checked = 0
        #: set when a page changed the evidence since it was last read
        self.evidence_changed = False

    def mirror_of(self, host: str) -> str | None:
        """The origin host that ``host`` has been confirmed to mirror (its strongest), if any,
        once the direction is settled (:func:`~.mirrors.settled`)."""
        return self._mirrors.get(host)

    @property
    def mirrors(self) -> dict[str, str]:
        """``{mirror host: strongest origin host}`` of the pairs confirmed so far whose direction
        is settled."""
        return dict(self._mirrors)

    def __contains__(self, host: str) -> bool:
        return host in self._mirrors

    def settle(self, pages: int) -> int:
        """Decide the mirror pairs on the whole index as it is now (``pages`` checked so far) and
        make, in every cluster represented on a mirror host, the mirror's origin's page the
        representative; returns the clusters changed."""
        self.refresh(pages, force=True)
        rounds: list[dict[str, str]] = []  # a mirror of several origins: one origin per round
        for pair in self.pairs():  # strongest first: its origin's pages go first
            free = next((r for r in rounds if pair.host not in r), None)
            if free is None:
                rounds.append(free := {})
            free[pair.host] = pair.mirror_of
        return sum(self._storage.promote_origins(origins) for origins in rounds)

    def surviving(self, unseen: dict[str, int], pages: int) -> dict[str, str]:
        """Of the mirror hosts in ``unseen`` (``{host: pages a crawl gave up on it}``), those
        whose pair holds whatever those pages turn out to be (:func:`~.mirrors.survives`), with
        their origin. Reads the evidence afresh (``pages`` checked so far)."""
        self.refresh(pages, force=True)
        min_pages, share = self.params.mirror_min_pages, self.params.mirror_share
        ev = self._storage.mirror_evidence(min_pages, _MIRROR_KEEP * share)
        return {
            host: origin
            for host, count in unseen.items()
            if (origin := self._mirrors.get(host)) is not None
            and survives(ev, host, origin, count, min_pages=min_pages, share=share, keep=_MIRROR_KEEP)
        }

    def pairs(self) -> list[MirrorPair]:
        """Every (mirror host, origin host) pair the index's evidence supports now."""
        min_pages, share = self.params.mirror_min_pages, self.params.mirror_share
        return mirror_pairs(self._storage.mirror_evidence(min_pages, share), min_pages, share)

    def refresh(self, pages: int, force: bool = False) -> None:
        """Name mirror hosts from the store's evidence (see ``_MIRROR_REFRESH_MAX``), ``pages``
        checked so far (``force``: whatever the interval).

        :attr:`mirrors` holds the confirmed pairs whose direction is settled
        (:func:`~.mirrors.settled`). A pair once confirmed stays while the two still share
        ``mirror_min_pages`` documents, the mirror's copies are at least half of
        ``mirror_share`` of its documents and no evidence reverses the direction: a mirror is
        named on a majority of its documents, and
        the pages of its own that a crawl happens to reach before the rest of its copies do not
        withdraw it; a host whose copies fall to a small share of what it serves is withdrawn.
        """
        interval = min(_MIRROR_REFRESH_MAX, max(1, pages // 50))
        if not force and not (self.evidence_changed and pages - self._checked >= interval):
            return
        self._checked = pages
        self.evidence_changed = False
        min_pages, share = self.params.mirror_min_pages, self.params.mirror_share
        ev = self._storage.mirror_evidence(min_pages, _MIRROR_KEEP * share)  # the lowest share used
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
            self.version += 1
