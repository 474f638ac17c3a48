"""Before a download: does the request name a document the crawl already has?

:class:`SkipPlanner` keeps the pages fetched (and the requests being downloaded) under their
keys by the learner's rules. A request whose key names another url's page is a *predicted
duplicate*: the caller does not download it but keeps it aside with :meth:`SkipPlanner.keep`.
A kept request goes back to the caller to be scheduled again when the prediction no longer
holds: the rules that rewrote it are withdrawn (a counter-example), the page it named was
being downloaded and failed, or, when the crawl runs out of requests, that page never came.
So a wrong rule costs a download, never a page; a request that cannot be kept (the limit is
reached) is downloaded.

**Exploration.** The ``k``-th predicted duplicate of a host (counting the saves of earlier
crawls whose rules were loaded) is downloaded anyway with probability ``1 / (k + 2)``, decided
by a seeded digest of its url (the same url, the same decision, in every run and process). The
expected number of such downloads after ``m`` predictions is ``H(m + 1) - 1 ≈ ln m``: rules keep
being tested for as long as they are used, at a cost that grows with the logarithm of their use.
"""

from __future__ import annotations

import hashlib
import itertools
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from .learner import UrlRuleLearner
from .rules import Rule

__all__ = ["Prediction", "SkipPlanner"]

T = TypeVar("T")


@dataclass(frozen=True, slots=True)
class Prediction:
    """A request predicted to name a document already fetched or being fetched.

    Attributes:
        url: the request's url.
        host: its host.
        key: its key by the host's rules.
        duplicate_of: the url of the page it names.
        tag: that page's tag, or ``None`` while it is being downloaded.
        rules: the rules that rewrote the url, each with the host that holds it.
        explore: download it anyway (exploration).
    """

    url: str
    host: str
    key: str
    duplicate_of: str
    tag: Any
    rules: tuple[tuple[str, Rule], ...]
    explore: bool


@dataclass
class _Kept(Generic[T]):
    item: T
    url: str
    host: str
    key: str
    rules: tuple[tuple[str, Rule], ...]


class SkipPlanner(Generic[T]):
    """Predicted duplicates and the requests kept aside for them (see the module docstring).

    Args:
        learner: the rules.
        seed: seed of the exploration digest.
        keep: requests kept aside at most (more predicted duplicates are downloaded).
    """

    def __init__(self, learner: UrlRuleLearner, *, seed: int = 1, keep: int = 100_000) -> None:
        self.learner = learner
        self.keep_limit = keep
        self._seed = seed.to_bytes(8, "little", signed=False)
        self._fetched: dict[str, tuple[str, Any]] = {}
        self._pages: dict[str, dict[str, Any]] = {}
        self._page_keys: dict[str, str] = {}
        self._inflight: dict[str, str] = {}
        self._inflight_keys: dict[str, str] = {}
        self._kept: dict[int, _Kept[T]] = {}
        self._by_key: dict[str, set[int]] = {}
        self._ids = itertools.count()
        self._predictions: dict[str, int] = {}
        self._resumed: set[str] = set()  # keys of pages an earlier run of the crawl fetched
        self._version = learner.version
        #: Predicted duplicates downloaded anyway / requests handed back to be scheduled again.
        self.explored = 0
        self.rescheduled = 0

    # -- pages and downloads -----------------------------------------------------------------------
    def fetched(self, url: str, tag: Any) -> None:
        """A page was checked: requests may now name it (``tag``: the tag its errback sees)."""
        self._done(url)
        found = self.learner.canonical(url)
        if found is None:
            return
        host, key, _ = found
        self._pages.setdefault(host, {})[url] = tag
        self._page_keys[url] = key
        self._fetched.setdefault(key, (url, tag))

    def fetching(self, url: str) -> None:
        """A request goes to the downloader: requests naming its document may wait for it."""
        found = self.learner.canonical(url)
        if found is not None and found[1] not in self._inflight:
            self._inflight[found[1]] = url
            self._inflight_keys[url] = found[1]

    def failed(self, url: str) -> list[T]:
        """A download gave no page (an error, not HTML...): the requests kept for it are handed
        back when nothing else fetched holds their document."""
        key = self._done(url)
        if key is None or key in self._fetched:
            return []
        return self._release(key)

    def _done(self, url: str) -> str | None:
        key = self._inflight_keys.pop(url, None)
        if key is not None and self._inflight.get(key) == url:
            del self._inflight[key]
        return key

    # -- predictions -------------------------------------------------------------------------------
    def predict(self, url: str) -> Prediction | None:
        """The prediction for a request to ``url``, or ``None`` when it must be downloaded."""
        found = self.learner.canonical(url)
        if found is None:
            return None
        host, key, rules = found
        hit = self._fetched.get(key)
        if hit is not None and hit[0] != url:
            target, tag = hit
        elif self._inflight.get(key, url) != url:
            target, tag = self._inflight[key], None
        else:
            return None
        rules = self._with_target(rules, target)
        if not rules:
            return None  # the same address written another way: the duplicate filter's business
        count = self._predictions.get(host, 0)
        self._predictions[host] = count + 1
        explore = self._unit(url) * (count + self.learner.saved_before(host) + 2) < 1.0
        if explore:
            self.explored += 1
        return Prediction(url, host, key, target, tag, rules, explore)

    def _with_target(self, rules: tuple[tuple[str, Rule], ...], target: str) -> tuple[tuple[str, Rule], ...]:
        """The rules that rewrote a url and the page it names to one key."""
        found = self.learner.canonical(target)
        if found is None or not found[2]:
            return rules
        return rules + tuple(r for r in found[2] if r not in rules)

    def _unit(self, url: str) -> float:
        digest = hashlib.blake2b(url.encode("utf-8", "surrogatepass"), digest_size=8, key=self._seed).digest()
        return int.from_bytes(digest, "little") / 2.0**64

    def keep(self, prediction: Prediction, item: T) -> bool:
        """Keep ``item`` (the request) aside for ``prediction``; False when the limit is reached
        (the request must then be downloaded)."""
        if len(self._kept) >= self.keep_limit:
            return False
        ident = next(self._ids)
        self._kept[ident] = _Kept(item, prediction.url, prediction.host, prediction.key, prediction.rules)
        self._by_key.setdefault(prediction.key, set()).add(ident)
        self.learner.note_saved(prediction.rules)
        return True

    def kept_items(self) -> list[tuple[T, bool]]:
        """Every kept request, and whether the page it names has come (a paused crawl saves
        them; see :meth:`keep_resumed`)."""
        return [
            (k.item, k.key in self._fetched or k.key in self._resumed) for _, k in sorted(self._kept.items())
        ]

    def pages(self) -> list[tuple[str, Any]]:
        """Every page fetched, with its tag (a paused crawl saves them; see :meth:`fetched`)."""
        return [(url, tag) for host in self._pages.values() for url, tag in host.items()]

    def keep_resumed(self, item: T, url: str) -> bool:
        """Keep again a request an earlier run of the crawl kept aside for a page that came; False
        when the rules no longer rewrite it (it must be scheduled again)."""
        found = self.learner.canonical(url)
        if found is None or not found[2]:
            return False
        host, key, rules = found
        self._resumed.add(key)
        ident = next(self._ids)
        self._kept[ident] = _Kept(item, url, host, key, rules)
        self._by_key.setdefault(key, set()).add(ident)
        return True

    @property
    def kept(self) -> int:
        """Requests kept aside now."""
        return len(self._kept)

    def _release(self, key: str) -> list[T]:
        items = [self._kept.pop(i) for i in sorted(self._by_key.pop(key, ()))]
        self.rescheduled += len(items)
        return [k.item for k in items]

    # -- rules changing ----------------------------------------------------------------------------
    def withdrawn(self) -> list[T]:
        """After the rules changed: the kept requests no longer predicted (to be scheduled
        again). Pages and downloads are filed again under their hosts' new rules."""
        if self.learner.version == self._version:
            return []
        self._version = self.learner.version
        changed = self.learner.take_changed()
        if not changed:
            return []
        self._refile(changed)
        out: list[T] = []
        for ident, kept in list(self._kept.items()):
            if not changed & ({owner for owner, _ in kept.rules} | {kept.host}):
                continue
            still = self._still_predicted(kept)
            if still is None:
                del self._kept[ident]
                self._forget(kept.key, ident)
                out.append(kept.item)
            elif still != kept.key:
                self._forget(kept.key, ident)
                kept.key = still
                self._by_key.setdefault(still, set()).add(ident)
        self.rescheduled += len(out)
        return out

    def _still_predicted(self, kept: _Kept[T]) -> str | None:
        found = self.learner.canonical(kept.url)
        if found is None:
            return None
        _, key, rules = found
        hit = self._fetched.get(key)
        if hit is not None and hit[0] != kept.url:
            target = hit[0]
        elif self._inflight.get(key, kept.url) != kept.url:
            target = self._inflight[key]
        elif key in self._resumed:
            return key if rules and all(self.learner.is_valid(o, r) for o, r in rules) else None
        else:
            return None
        rules = self._with_target(rules, target)
        if not rules or not all(self.learner.is_valid(owner, rule) for owner, rule in rules):
            return None
        kept.rules = rules
        return key

    def _forget(self, key: str, ident: int) -> None:
        idents = self._by_key.get(key)
        if idents is not None:
            idents.discard(ident)
            if not idents:
                del self._by_key[key]

    def _refile(self, hosts: Iterable[str]) -> None:
        # sorted: pages of aliased hosts share keys, and the first page filed under a key is
        # the one predictions name
        for host in sorted(hosts):
            pages = self._pages.get(host, {})
            for url in pages:
                old = self._page_keys.get(url)
                if old is not None and self._fetched.get(old, ("",))[0] == url:
                    del self._fetched[old]
            for url, tag in pages.items():
                found = self.learner.canonical(url)
                if found is not None:
                    self._page_keys[url] = found[1]
                    self._fetched.setdefault(found[1], (url, tag))
        for url, old in list(self._inflight_keys.items()):
            found = self.learner.canonical(url)
            if found is not None and found[1] != old:
                self._done(url)
                if found[1] not in self._inflight:
                    self._inflight[found[1]] = url
                    self._inflight_keys[url] = found[1]

    def idle(self) -> list[T]:
        """The crawl ran out of requests: nothing is being downloaded any more; the kept
        requests whose document never came are handed back."""
        self._inflight.clear()
        self._inflight_keys.clear()
        out: list[T] = []
        for key in [k for k in self._by_key if k not in self._fetched and k not in self._resumed]:
            out.extend(self._release(key))
        return out
