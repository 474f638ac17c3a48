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

Pure Python, no framework; memory is bounded by ``max_urls`` urls per host (later urls of a
host are still rewritten, but no longer learnt from).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from .forms import UrlForm, decompose, path_difference
from .rules import DEFAULT_MIN_SUPPORT, Rule, RuleStats

__all__ = ["RULES_FORMAT", "UrlRuleLearner"]

RULES_FORMAT = "neardup-url-rules/1"
#: Members of a cluster a new member is compared with.
_MEMBERS = 8
#: Differences a witness pair may have (more tell nothing about any one of them).
_MAX_DIFFERENCES = 4
#: Rules for single addresses made per host at most.
_ADDRESS_RULES = 1000
#: Cap of the report's lists.
MAX_RULES_PER_HOST = 50


@dataclass(frozen=True, slots=True)
class _Compiled:
    """A host's valid rules, arranged for rewriting."""

    case: bool = False
    slash: bool = False
    prefixes: frozenset[str] = frozenset()
    suffixes: frozenset[str] = frozenset()
    params: dict[str, tuple[Rule, ...]] = field(default_factory=dict)

    @classmethod
    def of(cls, rules: Iterable[Rule]) -> _Compiled:
        rules = sorted(rules)
        params: dict[str, list[Rule]] = {}
        order = {"param": 0, "no-op": 1, "value": 2}
        for rule in rules:
            if rule.kind in order:
                params.setdefault(rule.name, []).append(rule)
        return cls(
            case=any(r.kind == "case" for r in rules),
            slash=any(r.kind == "slash" for r in rules),
            prefixes=frozenset(r.name for r in rules if r.kind == "prefix"),
            suffixes=frozenset(r.name for r in rules if r.kind == "suffix"),
            params={
                name: tuple(sorted(group, key=lambda r: (order[r.kind], r.scope == "", r)))
                for name, group in params.items()
            },
        )


@dataclass
class _Host:
    """What the learner knows of one host."""

    name: str
    pages: dict[str, tuple[UrlForm, int]] = field(default_factory=dict)
    stats: dict[Rule, RuleStats] = field(default_factory=dict)
    valid: frozenset[Rule] = frozenset()
    compiled: _Compiled = field(default_factory=_Compiled)
    keys: dict[str, str] = field(default_factory=dict)  # url -> its key in the learner's index

    def compiled_rules(self) -> list[Rule]:
        """The valid rules that rewrite this host's own urls (aliases aside)."""
        return [r for r in self.valid if r.kind != "alias"]


def _touches(rule: Rule, form: UrlForm) -> bool:
    """Whether ``rule`` may rewrite ``form`` (a url it cannot rewrite keeps its key)."""
    kind, path = rule.kind, form.path
    if kind in ("param", "value", "no-op"):
        return any(name == rule.name for name, _ in form.params)
    if kind == "case":
        return path != path.lower()
    if kind == "slash":
        return path != "/" and path.endswith("/")
    if kind == "prefix":
        return path.lower().startswith(f"/{rule.name.lower()}")
    if kind == "suffix":
        return path.lower().endswith(f"/{rule.name.lower()}")
    return True


class UrlRuleLearner:
    """Per-host duplicate-url rules learnt from verdicts (see the module docstring).

    Args:
        min_support: independent witnesses a rule needs to be valid.
        max_urls: urls learnt from per host.
    """

    def __init__(self, min_support: int = DEFAULT_MIN_SUPPORT, max_urls: int = 50_000) -> None:
        self.min_support = max(1, min_support)
        self.max_urls = max_urls
        self._hosts: dict[str, _Host] = {}
        self._clusters: dict[str, int] = {}
        self._members: dict[int, list[str]] = {}
        self._others: dict[tuple[str, Rule], RuleStats] = {}
        self._aliases: dict[str, str] = {}
        #: key under the valid rules -> (document, url) of the first page filed there
        self._index: dict[str, tuple[int, str]] = {}
        #: hosts whose evidence changed -> the rules touched (``None``: all of them)
        self._dirty: dict[str, set[Rule] | None] = {}
        self._others_by_host: dict[str, dict[Rule, RuleStats]] = {}
        self._address_rules: dict[str, int] = {}
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
        host = self._host(form.host)
        if url in host.pages or len(host.pages) >= self.max_urls:
            return
        document = self._clusters.setdefault(cluster, len(self._clusters))
        host.pages[url] = (form, document)
        self._file(host, url, form, document)
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
        self._host(a.host)
        self._host(b.host)
        pair = tuple(sorted((url, other)))
        document = self._clusters.setdefault("\x00same " + "\x00".join(pair), len(self._clusters))
        self._witness(url, other, document)
        self._settle()

    def _host(self, name: str) -> _Host:
        host = self._hosts.get(name)
        if host is None:
            host = self._hosts[name] = _Host(name)
        return host

    def _witness(self, url: str, other: str, document: int) -> None:
        form_u, form_v = decompose(url), decompose(other)
        if form_u is None or form_v is None:
            return
        host_u, host_v = self._host(form_u.host), self._host(form_v.host)
        a, _ = self._canon(host_u, form_u)
        b, _ = self._canon(host_v, form_v)
        if a.key == b.key or a.scheme != b.scheme:
            return
        pair = (url, other)
        if form_u.host != form_v.host:
            # the other host's url read by this host's rules: an alias serves the same address
            first, second = sorted((form_u.host, form_v.host))
            host_first = self._hosts[first]
            x, _ = self._canon(host_first, form_u.with_host(first), alias=False)
            y, _ = self._canon(host_first, form_v.with_host(first), alias=False)
            rule = Rule("alias", name=second)
            if x.key == y.key and self._stats(first, rule).counter == 0:
                self._credit(host_first, rule, document, (), pair)
            return
        path_rules = path_difference(a.path, b.path)
        if path_rules is None:
            return
        names = sorted(a.names() | b.names())
        differing = [(n, a.values(n), b.values(n)) for n in names if a.values(n) != b.values(n)]
        if len(path_rules) + len(differing) > _MAX_DIFFERENCES:
            return
        section = a.section if a.section == b.section else min(a.section, b.section, key=len)
        components: list[list[tuple[Rule, tuple[str, ...]]]] = [
            [(Rule(kind, name=literal), ())] for kind, literal in path_rules
        ]
        # the document's third copy on: rules for its one address too (bounded per host)
        repeated = (
            len(self._members.get(document, ())) >= 2
            and self._address_rules.get(host_u.name, 0) < _ADDRESS_RULES
        )
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
        host = host_u
        if any(all(self._stats(host.name, rule).counter for rule, _ in options) for options in components):
            return  # something else explains the difference
        for options in components:
            for rule, values in options:
                if self._stats(host.name, rule).counter == 0:
                    self._credit(host, rule, document, values, pair)

    def _credit(
        self, host: _Host, rule: Rule, document: int, values: tuple[str, ...], pair: tuple[str, str]
    ) -> None:
        stats = host.stats.get(rule)
        if stats is None:
            stats = host.stats[rule] = RuleStats()
            if rule.scope.startswith("="):
                self._address_rules[host.name] = self._address_rules.get(host.name, 0) + 1
        if stats.witness(rule, document, values, pair):
            self._touch(host.name, rule)

    def _touch(self, host: str, rule: Rule | None) -> None:
        """Mark ``rule`` of ``host`` for a validity check (``None``: every rule of the host)."""
        if host in self._dirty:
            touched = self._dirty[host]
            if touched is not None:
                if rule is None:
                    self._dirty[host] = None
                else:
                    touched.add(rule)
        else:
            self._dirty[host] = None if rule is None else {rule}

    def _refute(self, host: str, rule: Rule, pair: tuple[str, str]) -> None:
        self._host(host).stats.setdefault(rule, RuleStats()).refute(pair)
        self._touch(host, rule)

    # -- indexes -----------------------------------------------------------------------------------
    def _file(self, host: _Host, url: str, form: UrlForm, document: int) -> None:
        """File a url under its key by the valid rules: two documents meeting there refute the
        rules that merged them."""
        canon, used = self._canon(host, form)
        key = canon.key
        host.keys[url] = key
        seen = self._index.get(key)
        if seen is None:
            self._index[key] = (document, url)
        elif seen[0] != document and seen[1] != url:
            self._conflict(host, url, form, used, seen[1])

    def _verify(self, host: _Host, rule: Rule) -> tuple[str, str] | None:
        """A counter-example to ``rule`` among the urls seen: two urls of different documents
        that the valid rules keep apart and ``rule`` merges (checked when the rule has the
        support to become valid; afterwards the learner's index checks every new url)."""
        if rule.kind == "alias":
            first = host
            pages = [
                (u, f, d) for name in (host.name, rule.name) for u, (f, d) in self._host(name).pages.items()
            ]
            moved = [
                (u, self._canon(first, f.with_host(host.name), alias=False)[0].key, f.host, d)
                for u, f, d in pages
            ]
        else:
            compiled = _Compiled.of([*host.compiled_rules(), rule])
            moved = [
                (
                    u,
                    self._canon(host, f, compiled=compiled)[0].key
                    if _touches(rule, f)
                    else host.keys.get(u, ""),
                    host.keys.get(u, ""),
                    d,
                )
                for u, (f, d) in host.pages.items()
            ]
        seen: dict[str, tuple[str, str, int]] = {}
        for url, key, apart, document in moved:
            found = seen.get(key)
            if found is None:
                seen[key] = (url, apart, document)
            elif found[2] != document and found[1] != apart:
                return (url, found[0])
        return None

    def _conflict(
        self, host: _Host, url: str, form: UrlForm, used: list[tuple[str, Rule]], other: str
    ) -> None:
        """Two documents meet under the valid rules: refute the rules that merge them."""
        other_form = decompose(other)
        assert other_form is not None
        other_host = self._hosts[other_form.host]
        _, other_used = self._canon(other_host, other_form)
        suspects = sorted(set(used) | set(other_used))
        needed = [
            (owner, rule)
            for owner, rule in suspects
            if self._canon(host, form, skip=rule)[0].key
            != self._canon(other_host, other_form, skip=rule)[0].key
        ]
        for owner, rule in needed or suspects:
            if rule.kind != "alias":
                self._refute(owner, rule, (url, other))
                continue
            first, second = sorted((owner, rule.name))  # owner: the aliased host; name: its representative
            self._refute(first, Rule("alias", name=second), (url, other))

    # -- validity ----------------------------------------------------------------------------------
    def _stats(self, host: str, rule: Rule) -> RuleStats:
        found = self._hosts.get(host)
        own = found.stats.get(rule) if found is not None else None
        other = self._others_by_host[host].get(rule) if host in self._others_by_host else None
        if own is None:
            return other if other is not None else RuleStats()
        return own.merged(other) if other is not None else own

    def _settle(self) -> None:
        """Recheck the rules whose evidence changed (a rule about to become valid is checked
        against every url seen first); refile the hosts whose valid rules changed, until stable."""
        while self._dirty:
            aliases_changed = False
            while self._dirty:
                name, touched = self._dirty.popitem()
                host = self._host(name)
                if touched is None:
                    touched = set(host.stats) | set(self._others_by_host.get(name, ())) | set(host.valid)
                valid = set(host.valid)
                for rule in touched:
                    if not self._stats(name, rule).valid(rule, self.min_support):
                        valid.discard(rule)
                    elif rule not in host.valid:
                        counter = self._verify(host, rule)
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
                host.compiled = _Compiled.of(r for r in valid if r.kind != "alias")
                self.version += 1
                self._changed.add(name)
                self._rebuild(host)
            if aliases_changed:
                for changed in self._relink_aliases():
                    self._changed.add(changed)
                    self._rebuild(self._host(changed))

    def _relink_aliases(self) -> set[str]:
        """Union the hosts of valid alias rules (representative: the smallest name)."""
        parent: dict[str, str] = {}

        def find(h: str) -> str:
            while parent.get(h, h) != h:
                h = parent[h]
            return h

        for host in self._hosts.values():
            for rule in host.valid:
                if rule.kind == "alias":
                    a, b = find(host.name), find(rule.name)
                    if a != b:
                        parent[max(a, b)] = min(a, b)
        aliases = {h: find(h) for h in set(parent) | set(parent.values()) if find(h) != h}
        changed = set(aliases) ^ set(self._aliases) | {
            h for h in aliases if self._aliases.get(h) != aliases[h]
        }
        self._aliases = aliases
        if changed:
            self.version += 1
        return changed

    def _rebuild(self, host: _Host) -> None:
        """File the host's urls again under its new rules."""
        for url, key in host.keys.items():
            if self._index.get(key, (0, ""))[1] == url:
                del self._index[key]
        host.keys = {}
        for url, (form, document) in list(host.pages.items()):
            self._file(host, url, form, document)

    # -- rewriting ---------------------------------------------------------------------------------
    def _canon(
        self,
        host: _Host,
        form: UrlForm,
        skip: Rule | None = None,
        alias: bool = True,
        compiled: _Compiled | None = None,
    ) -> tuple[UrlForm, list[tuple[str, Rule]]]:
        """``form`` rewritten by the host's valid rules (less ``skip``), and the rules used, each
        with the host that holds it (an alias's address is rewritten by its representative's)."""
        rules = host.compiled if compiled is None else compiled
        used: list[Rule] = []
        path = form.path
        if rules.case and path != path.lower() and not (skip and skip.kind == "case"):
            path = path.lower()
            used.append(Rule("case"))
        if rules.prefixes:
            end = path.find("/", 1)
            first = path[1:] if end < 0 else path[1:end]
            if first in rules.prefixes and not (skip and skip.kind == "prefix" and skip.name == first):
                path = path[len(first) + 1 :] or "/"
                used.append(Rule("prefix", name=first))
        if rules.suffixes:
            last = path[path.rfind("/") + 1 :]
            if last in rules.suffixes and not (skip and skip.kind == "suffix" and skip.name == last):
                path = path[: len(path) - len(last)]
                used.append(Rule("suffix", name=last))
        if rules.slash and path != "/" and path.endswith("/") and not (skip and skip.kind == "slash"):
            path = path.rstrip("/") or "/"
            used.append(Rule("slash"))
        params = form.params
        if rules.params and params:
            section = form.with_path(path).section
            kept: list[tuple[str, str]] = []
            for name, value in params:
                rewritten: str | None = value
                for rule in rules.params.get(name, ()):
                    if rule == skip or (rule.scope and rule.scope != section and rule.scope != "=" + path):
                        continue
                    if rule.kind == "param" or (rule.kind == "no-op" and form.values(name) == rule.value):
                        rewritten = None
                    elif rule.kind == "value":
                        rewritten = "*"
                    else:
                        continue
                    if rule not in used:
                        used.append(rule)
                    break
                if rewritten is not None and (name, rewritten) not in kept:
                    kept.append((name, rewritten))
            params = tuple(kept)
        host_name = form.host
        if alias and self._aliases:
            target = self._aliases.get(host_name)
            if target is not None and not (skip and skip.kind == "alias"):
                # an alias's address is read as the representative host reads it
                canon, more = self._canon(self._host(target), form.with_host(target), alias=False)
                return canon, [(form.host, Rule("alias", name=target)), *more]
        owned = [(host.name, rule) for rule in used]
        if path == form.path and params is form.params:
            return form, owned
        return UrlForm(form.scheme, host_name, path, params), owned

    def canonical(self, url: str) -> tuple[str, str, tuple[tuple[str, Rule], ...]] | None:
        """``(host, key, rules used)``: the key of ``url`` rewritten by its host's valid rules
        (urls naming one document by those rules share a key), and each rule used with the host
        that holds it; ``None`` for a url without host."""
        form = decompose(url)
        if form is None:
            return None
        host = self._hosts.get(form.host)
        if host is None:
            return form.host, form.key, ()
        canon, used = self._canon(host, form)
        return form.host, canon.key, tuple(used)

    def valid_rules(self, host: str) -> frozenset[Rule]:
        """The host's valid rules."""
        found = self._hosts.get(host)
        return found.valid if found is not None else frozenset()

    def is_valid(self, host: str, rule: Rule) -> bool:
        """Whether ``rule``, used to rewrite a url of ``host``, is valid now (an alias rule names
        the host the url's host is rewritten to)."""
        if rule.kind == "alias":
            return self._aliases.get(host) == rule.name
        return rule in self.valid_rules(host)

    def saved_before(self, host: str) -> int:
        """Requests of ``host`` that loaded evidence (earlier crawls, other processes) saved."""
        return sum(stats.saved for stats in self._others_by_host.get(host, {}).values())

    def take_changed(self) -> set[str]:
        """Hosts whose valid rules (or aliases) changed since the last call."""
        changed, self._changed = self._changed, set()
        return changed

    def hosts(self) -> list[str]:
        """Hosts the learner knows."""
        return list(self._hosts)

    def note_saved(self, rules: Iterable[tuple[str, Rule]]) -> None:
        """A request was not downloaded because of ``rules`` (as :meth:`canonical` gives them)."""
        for owner, rule in rules:
            if rule.kind == "alias":
                owner, second = sorted((owner, rule.name))
                rule = Rule("alias", name=second)
            stats = self._host(owner).stats.get(rule)
            if stats is None:
                stats = self._host(owner).stats[rule] = RuleStats()
            stats.saved += 1

    # -- persistence -------------------------------------------------------------------------------
    def state(self) -> dict[str, Any]:
        """This learner's own evidence (``neardup-url-rules/1``), to be saved and merged."""
        hosts: dict[str, list[dict[str, Any]]] = {}
        for name, host in sorted(self._hosts.items()):
            rows = [
                {"rule": rule.to_dict(), **stats.to_dict()}
                for rule, stats in sorted(host.stats.items())
                if stats.support or stats.counter or stats.saved
            ]
            if rows:
                hosts[name] = rows
        return {"format": RULES_FORMAT, "min_support": self.min_support, "hosts": hosts}

    def load(self, states: Iterable[dict[str, Any]]) -> None:
        """Take the evidence of other processes, earlier crawls or a rules file (replacing what
        was loaded before); the rules valid on the whole evidence apply at once.

        Raises:
            ValueError: a state is not a ``neardup-url-rules/1`` document.
        """
        others: dict[tuple[str, Rule], RuleStats] = {}
        for state in states:
            for host, rule, stats in parse_state(state):
                key = (host, rule)
                others[key] = others[key].merged(stats) if key in others else stats
        touched = {host for host, _ in set(others) | set(self._others)}
        self._others = others
        self._others_by_host = {}
        for (host, rule), stats in others.items():
            self._others_by_host.setdefault(host, {})[rule] = stats
        for host in touched:
            self._host(host)
            self._touch(host, None)
        self._settle()

    def summary(self, max_hosts: int = 1000) -> dict[str, Any]:
        """Every host's rules on the whole evidence (own and loaded): the report's section, and
        a file :meth:`load` reads for a recrawl."""
        hosts = []
        total_saved = 0
        valid_count = 0
        for name in sorted(set(self._hosts) | {h for h, _ in self._others}):
            rules = set(self._hosts[name].stats) if name in self._hosts else set()
            rules |= set(self._others_by_host.get(name, ()))
            rows = []
            for rule in rules:
                stats = self._stats(name, rule)
                if not (stats.support or stats.counter or stats.saved):
                    continue
                valid = stats.valid(rule, self.min_support)
                valid_count += valid
                total_saved += stats.saved
                rows.append(
                    {"rule": rule.to_dict(), "text": rule.describe(), "valid": valid, **stats.to_dict()}
                )
            if rows:
                rows.sort(key=lambda r: (not r["valid"], -r["saved"], -r["support"], r["text"]))
                hosts.append(
                    {"host": name, "saved": sum(r["saved"] for r in rows), "rules": rows[:MAX_RULES_PER_HOST]}
                )
        hosts.sort(key=lambda h: (-h["saved"], h["host"]))
        return {
            "format": RULES_FORMAT,
            "min_support": self.min_support,
            "valid": valid_count,
            "saved": total_saved,
            "hosts_total": len(hosts),
            "hosts": hosts[:max_hosts],
        }


def parse_state(state: dict[str, Any]) -> list[tuple[str, Rule, RuleStats]]:
    """The ``(host, rule, evidence)`` rows of a saved state or a :meth:`UrlRuleLearner.summary`
    (also found under a report's ``url_rules`` key).

    Raises:
        ValueError: not a ``neardup-url-rules/1`` document.
    """
    if isinstance(state, dict) and "url_rules" in state and "format" not in state.get("url_rules", {}):
        raise ValueError("the report's url_rules section is malformed")
    if isinstance(state, dict) and isinstance(state.get("url_rules"), dict):
        state = state["url_rules"]
    if not isinstance(state, dict) or state.get("format") != RULES_FORMAT:
        raise ValueError(f"not a {RULES_FORMAT} document")
    hosts = state.get("hosts", {})
    if isinstance(hosts, list):  # a summary
        items = [(h.get("host"), h.get("rules")) for h in hosts if isinstance(h, dict)]
    elif isinstance(hosts, dict):
        items = list(hosts.items())
    else:
        raise ValueError("hosts must be a list or an object")
    out = []
    for host, rows in items:
        if not isinstance(host, str) or not isinstance(rows, list):
            raise ValueError("each host needs a name and a list of rules")
        for row in rows:
            if not isinstance(row, dict) or not isinstance(row.get("rule"), dict):
                raise ValueError(f"malformed rule of host {host}")
            out.append((host, Rule.from_dict(row["rule"]), RuleStats.from_dict(row)))
    return out
