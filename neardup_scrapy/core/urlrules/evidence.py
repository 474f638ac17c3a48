"""What the learner knows of each host, and the evidence of every rule: its own witnesses and
counter-examples, those loaded from earlier crawls or other processes, and their documents
(the state saved with the index, the report's summary, a rules file).

A rule's evidence and validity are in :mod:`.rules`; :class:`Evidence` keeps them per host and
marks the rules whose evidence changed, for the learner to check again.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from .forms import UrlForm
from .rewrite import CompiledRules
from .rules import Rule, RuleStats

RULES_FORMAT = "neardup-url-rules/1"
#: Cap of the report's lists.
MAX_RULES_PER_HOST = 50


@dataclass
class HostState:
    """What the learner knows of one host."""

    name: str
    pages: dict[str, tuple[UrlForm, int]] = field(default_factory=dict)
    stats: dict[Rule, RuleStats] = field(default_factory=dict)
    valid: frozenset[Rule] = frozenset()
    compiled: CompiledRules = field(default_factory=CompiledRules)
    keys: dict[str, str] = field(default_factory=dict)  # url -> its key in the learner's index

    def compiled_rules(self) -> list[Rule]:
        """The valid rules that rewrite this host's own urls (aliases aside)."""
        return [r for r in sorted(self.valid) if r.kind != "alias"]


class Evidence:
    """Every host's state and every rule's evidence, own and loaded."""

    def __init__(self) -> None:
        self.hosts: dict[str, HostState] = {}
        self.others: dict[tuple[str, Rule], RuleStats] = {}
        self.others_by_host: dict[str, dict[Rule, RuleStats]] = {}
        #: rules for single addresses made per host
        self.address_rules: dict[str, int] = {}
        #: hosts whose evidence changed -> the rules touched (``None``: all of them)
        self.dirty: dict[str, set[Rule] | None] = {}

    def host(self, name: str) -> HostState:
        """The state of host ``name`` (made when new)."""
        host = self.hosts.get(name)
        if host is None:
            host = self.hosts[name] = HostState(name)
        return host

    def stats(self, host: str, rule: Rule) -> RuleStats:
        """The evidence of ``rule`` of ``host``: own and loaded."""
        found = self.hosts.get(host)
        own = found.stats.get(rule) if found is not None else None
        other = self.others_by_host[host].get(rule) if host in self.others_by_host else None
        if own is None:
            return other if other is not None else RuleStats()
        return own.merged(other) if other is not None else own

    def credit(
        self, host: HostState, rule: Rule, document: int, values: tuple[str, ...], pair: tuple[str, str]
    ) -> None:
        """A witness of ``rule`` from a pair of urls of ``document``."""
        stats = host.stats.get(rule)
        if stats is None:
            stats = host.stats[rule] = RuleStats()
            if rule.scope.startswith("="):
                self.address_rules[host.name] = self.address_rules.get(host.name, 0) + 1
        if stats.witness(rule, document, values, pair):
            self.touch(host.name, rule)

    def touch(self, host: str, rule: Rule | None) -> None:
        """Mark ``rule`` of ``host`` for a validity check (``None``: every rule of the host)."""
        if host in self.dirty:
            touched = self.dirty[host]
            if touched is not None:
                if rule is None:
                    self.dirty[host] = None
                else:
                    touched.add(rule)
        else:
            self.dirty[host] = None if rule is None else {rule}

    def refute(self, host: str, rule: Rule, pair: tuple[str, str]) -> None:
        """A counter-example to ``rule`` of ``host``."""
        self.host(host).stats.setdefault(rule, RuleStats()).refute(pair)
        self.touch(host, rule)

    def note_saved(self, rules: Iterable[tuple[str, Rule]]) -> None:
        """A request was not downloaded because of ``rules`` (each with the host that holds it)."""
        for owner, rule in rules:
            if rule.kind == "alias":
                owner, second = sorted((owner, rule.name))
                rule = Rule("alias", name=second)
            stats = self.host(owner).stats.get(rule)
            if stats is None:
                stats = self.host(owner).stats[rule] = RuleStats()
            stats.saved += 1

    def saved_before(self, host: str) -> int:
        """Requests of ``host`` that loaded evidence saved."""
        return sum(stats.saved for stats in self.others_by_host.get(host, {}).values())

    def state(self, min_support: int) -> dict[str, Any]:
        """The own evidence (``neardup-url-rules/1``)."""
        hosts: dict[str, list[dict[str, Any]]] = {}
        for name, host in sorted(self.hosts.items()):
            rows = [
                {"rule": rule.to_dict(), **stats.to_dict()}
                for rule, stats in sorted(host.stats.items())
                if stats.support or stats.counter or stats.saved
            ]
            if rows:
                hosts[name] = rows
        return {"format": RULES_FORMAT, "min_support": min_support, "hosts": hosts}

    def load(self, states: Iterable[dict[str, Any]]) -> None:
        """Take ``states`` as the loaded evidence (replacing what was loaded before) and mark
        every host whose loaded evidence changed.

        Raises:
            ValueError: a state is not a ``neardup-url-rules/1`` document.
        """
        others: dict[tuple[str, Rule], RuleStats] = {}
        for state in states:
            for host, rule, stats in parse_state(state):
                key = (host, rule)
                others[key] = others[key].merged(stats) if key in others else stats
        touched = sorted({host for host, _ in set(others) | set(self.others)})
        self.others = others
        self.others_by_host = {}
        for (host, rule), stats in others.items():
            self.others_by_host.setdefault(host, {})[rule] = stats
        for host in touched:
            self.host(host)
            self.touch(host, None)

    def summary(self, min_support: int, max_hosts: int) -> dict[str, Any]:
        """Every host's rules on the whole evidence (see :meth:`UrlRuleLearner.summary`)."""
        hosts = []
        total_saved = 0
        valid_count = 0
        for name in sorted(set(self.hosts) | {h for h, _ in self.others}):
            rules = set(self.hosts[name].stats) if name in self.hosts else set()
            rules |= set(self.others_by_host.get(name, ()))
            rows = []
            for rule in sorted(rules):  # ties of the sort below keep this order
                stats = self.stats(name, rule)
                if not (stats.support or stats.counter or stats.saved):
                    continue
                valid = stats.valid(rule, min_support)
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
            "min_support": min_support,
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
