"""Learns each host's duplicate-url rules from the detector's verdicts, and rewrites urls by them.

The learner is fed what the detector already knows: each checked page's url and the cluster
(document) it belongs to (:meth:`UrlRuleLearner.observe`), and urls the site itself says name a
page (a redirect's source, a ``<link rel=canonical>``: :meth:`UrlRuleLearner.observe_same`).

* **Witnesses** come from the members of one cluster: two urls of a document are compared by
  their forms under the host's valid rules, and what still differs (a parameter, a path
  segment, the letter case, a trailing slash, the host) is credited to the candidate rules
  that would remove it, when no more than four things differ and none of them is already
  refuted (so two fresh session parameters on every link are learnt together).
* **Counter-examples.** A rule with the support to become valid is first checked against every
  url of its host (both hosts for an alias): two urls of different documents that the valid
  rules keep apart and the rule would merge refute it. Once valid, every new url is filed under
  its key by the host's valid rules: two documents meeting there refute the rules needed for
  that merge (a single rule or a combination). Checking at validation and then per url costs
  one key per url, not one per candidate.
* A rule's evidence and validity are in :mod:`.rules`. When a host's valid rules change, its
  urls are filed again under the new keys (which may refute more: repeated until stable).

Collaborators: :mod:`.evidence` keeps each host's state and every rule's evidence (and what is
saved and reported), :mod:`.keys` the urls under their keys (rewritten by :mod:`.rewrite`).

Pure Python, no framework; memory is bounded by ``max_urls`` urls per host (later urls of a
host are still rewritten, but no longer learnt from).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from .evidence import Evidence
from .forms import UrlForm, decompose, path_difference
from .keys import UrlKeys
from .rewrite import CompiledRules
from .rules import DEFAULT_MIN_SUPPORT, Rule, RuleStats

__all__ = ["UrlRuleLearner"]

#: Members of a cluster a new member is compared with.
_MEMBERS = 8
#: Differences a witness pair may have (more tell nothing about any one of them).
_MAX_DIFFERENCES = 4
#: Rules for single addresses made per host at most.
_ADDRESS_RULES = 1000


class UrlRuleLearner:
    """Per-host duplicate-url rules learnt from verdicts (see the module docstring).

    Args:
        min_support: independent witnesses a rule needs to be valid.
        max_urls: urls learnt from per host.
    """

    def __init__(self, min_support: int = DEFAULT_MIN_SUPPORT, max_urls: int = 50_000) -> None:
        self.min_support = max(1, min_support)
        self.max_urls = max_urls
        self._evidence = Evidence()
        self._keys = UrlKeys(self._evidence)
        self._clusters: dict[str, int] = {}
        self._members: dict[int, list[str]] = {}
        #: Increases whenever any host's valid rules change.
        self.version = 0
        #: Hosts whose valid rules changed since :meth:`take_changed`.
        self._changed: set[str] = set()
        #: Rules that became valid / were withdrawn, over the learner's life.
        self.learned = 0
        self.withdrawn = 0

    # -- evidence ----------------------------------------------------------------------------------
    def observe(self, url: str, cluster: str) -> None:
        """A checked page: ``url`` belongs to document ``cluster`` (its cluster id)."""
        form = decompose(url)
        if form is None:
            return
        host = self._evidence.host(form.host)
        if url in host.pages or len(host.pages) >= self.max_urls:
            return
        document = self._clusters.setdefault(cluster, len(self._clusters))
        host.pages[url] = (form, document)
        self._keys.file(host, url, form, document)
        members = self._members.setdefault(document, [])
        for other in members:
            self._witness(url, other, document)
        if len(members) < _MEMBERS:
            members.append(url)
        self._settle()

    def observe_same(self, url: str, other: str) -> None:
        """The site says ``url`` and ``other`` name one page (a redirect, a canonical link):
        a witness for the rules that tell them apart, never a counter-example."""
        a, b = decompose(url), decompose(other)
        if a is None or b is None or a == b:
            return
        self._evidence.host(a.host)
        self._evidence.host(b.host)
        pair = tuple(sorted((url, other)))
        document = self._clusters.setdefault("\x00same " + "\x00".join(pair), len(self._clusters))
        self._witness(url, other, document)
        self._settle()

    def _witness(self, url: str, other: str, document: int) -> None:
        form_u, form_v = decompose(url), decompose(other)
        if form_u is None or form_v is None:
            return
        evidence, canon = self._evidence, self._keys.canon
        host_u, host_v = evidence.host(form_u.host), evidence.host(form_v.host)
        a, _ = canon(host_u, form_u)
        b, _ = canon(host_v, form_v)
        if a.key == b.key or a.scheme != b.scheme:
            return
        pair = (url, other)
        if form_u.host != form_v.host:
            # the other host's url read by this host's rules: an alias serves the same address
            first, second = sorted((form_u.host, form_v.host))
            host_first = evidence.hosts[first]
            x, _ = canon(host_first, form_u.with_host(first), alias=False)
            y, _ = canon(host_first, form_v.with_host(first), alias=False)
            rule = Rule("alias", name=second)
            if x.key == y.key and evidence.stats(first, rule).counter == 0:
                evidence.credit(host_first, rule, document, (), pair)
            return
        # the document's third copy on: rules for its one address too (bounded per host)
        repeated = (
            len(self._members.get(document, ())) >= 2
            and evidence.address_rules.get(host_u.name, 0) < _ADDRESS_RULES
        )
        components = _explanations(a, b, repeated)
        if components is None:
            return
        host = host_u
        if any(all(evidence.stats(host.name, rule).counter for rule, _ in options) for options in components):
            return  # something else explains the difference
        for options in components:
            for rule, values in options:
                if evidence.stats(host.name, rule).counter == 0:
                    evidence.credit(host, rule, document, values, pair)

    # -- validity ----------------------------------------------------------------------------------
    def _settle(self) -> None:
        """Recheck the rules whose evidence changed (a rule about to become valid is checked
        against every url seen first); refile the hosts whose valid rules changed, until stable."""
        evidence, keys = self._evidence, self._keys
        while evidence.dirty:
            aliases_changed = False
            while evidence.dirty:
                name, touched = evidence.dirty.popitem()
                host = evidence.host(name)
                if touched is None:
                    touched = set(host.stats) | set(evidence.others_by_host.get(name, ())) | set(host.valid)
                valid = set(host.valid)
                for rule in sorted(touched):
                    if not evidence.stats(name, rule).valid(rule, self.min_support):
                        valid.discard(rule)
                    elif rule not in host.valid:
                        counter = keys.verify(host, rule)
                        if counter is None:
                            valid.add(rule)
                        else:
                            host.stats.setdefault(rule, RuleStats()).refute(counter)
                if valid == host.valid:
                    continue
                self.learned += len(valid - host.valid)
                self.withdrawn += len(host.valid - valid)
                aliases_changed |= any(r.kind == "alias" for r in valid ^ host.valid)
                host.valid = frozenset(valid)
                host.compiled = CompiledRules.of(r for r in valid if r.kind != "alias")
                self.version += 1
                self._changed.add(name)
                keys.rebuild(host)
            if aliases_changed:
                changed = keys.relink_aliases()
                if changed:
                    self.version += 1
                for name in sorted(changed):  # refiling order decides which urls conflict
                    self._changed.add(name)
                    keys.rebuild(evidence.host(name))

    # -- rewriting ---------------------------------------------------------------------------------
    def canonical(self, url: str) -> tuple[str, str, tuple[tuple[str, Rule], ...]] | None:
        """``(host, key, rules used)``: the key of ``url`` rewritten by its host's valid rules
        (urls naming one document by those rules share a key), and each rule used with the host
        that holds it; ``None`` for a url without host."""
        form = decompose(url)
        if form is None:
            return None
        host = self._evidence.hosts.get(form.host)
        if host is None:
            return form.host, form.key, ()
        canon, used = self._keys.canon(host, form)
        return form.host, canon.key, tuple(used)

    def valid_rules(self, host: str) -> frozenset[Rule]:
        """The host's valid rules."""
        found = self._evidence.hosts.get(host)
        return found.valid if found is not None else frozenset()

    def is_valid(self, host: str, rule: Rule) -> bool:
        """Whether ``rule``, used to rewrite a url of ``host``, is valid now (an alias rule names
        the host the url's host is rewritten to)."""
        if rule.kind == "alias":
            return self._keys.aliases.get(host) == rule.name
        return rule in self.valid_rules(host)

    def saved_before(self, host: str) -> int:
        """Requests of ``host`` that loaded evidence (earlier crawls, other processes) saved."""
        return self._evidence.saved_before(host)

    def take_changed(self) -> set[str]:
        """Hosts whose valid rules (or aliases) changed since the last call."""
        changed, self._changed = self._changed, set()
        return changed

    def hosts(self) -> list[str]:
        """Hosts the learner knows."""
        return list(self._evidence.hosts)

    def note_saved(self, rules: Iterable[tuple[str, Rule]]) -> None:
        """A request was not downloaded because of ``rules`` (as :meth:`canonical` gives them)."""
        self._evidence.note_saved(rules)

    # -- persistence -------------------------------------------------------------------------------
    def state(self) -> dict[str, Any]:
        """This learner's own evidence (``neardup-url-rules/1``), to be saved and merged."""
        return self._evidence.state(self.min_support)

    def load(self, states: Iterable[dict[str, Any]]) -> None:
        """Take the evidence of other processes, earlier crawls or a rules file (replacing what
        was loaded before); the rules valid on the whole evidence apply at once.

        Raises:
            ValueError: a state is not a ``neardup-url-rules/1`` document.
        """
        self._evidence.load(states)
        self._settle()

    def summary(self, max_hosts: int = 1000) -> dict[str, Any]:
        """Every host's rules on the whole evidence (own and loaded): the report's section, and
        a file :meth:`load` reads for a recrawl."""
        return self._evidence.summary(self.min_support, max_hosts)


def _explanations(a: UrlForm, b: UrlForm, repeated: bool) -> list[list[tuple[Rule, tuple[str, ...]]]] | None:
    """What may explain the differences of two urls of one host (rewritten by its valid rules):
    per difference, the candidate rules with the values they cover; ``None`` when the paths
    differ in a way no rule covers or the urls differ in too many things. ``repeated``: rules
    for the urls' one address too."""
    path_rules = path_difference(a.path, b.path)
    if path_rules is None:
        return None
    names = sorted(a.names() | b.names())
    differing = [(n, a.values(n), b.values(n)) for n in names if a.values(n) != b.values(n)]
    if len(path_rules) + len(differing) > _MAX_DIFFERENCES:
        return None
    section = a.section if a.section == b.section else min(a.section, b.section, key=len)
    components: list[list[tuple[Rule, tuple[str, ...]]]] = [
        [(Rule(kind, name=literal), ())] for kind, literal in path_rules
    ]
    for name, left, right in differing:
        scopes: tuple[str, ...] = ("", section)
        if repeated and a.path == b.path:
            scopes += ("=" + a.path,)
        if left and right:
            rules = [Rule(kind, scope, name) for kind in ("value", "param") for scope in scopes]
        else:
            present = left or right
            rules = [Rule("no-op", s, name, present) for s in scopes if not s.startswith("=")]
            rules += [Rule("param", s, name) for s in scopes]
        components.append([(rule, (left, right)) for rule in rules])
    return components
