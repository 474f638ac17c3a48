"""The learner's index: every url learnt from, filed under its key by its host's valid rules.

Two documents meeting under one key refute the rules needed for that merge
(:meth:`UrlKeys.file`); a rule about to become valid is first checked against every url of its
host (:meth:`UrlKeys.verify`). Checking at validation and then per url costs one key per url,
not one per candidate. An alias's address is read as its representative host reads it.
"""

from __future__ import annotations

from .evidence import Evidence, HostState
from .forms import UrlForm, decompose
from .rewrite import CompiledRules, link_aliases, rewrite, touches
from .rules import Rule


class UrlKeys:
    """Keys of urls by their hosts' valid rules, and the index of the urls learnt from."""

    def __init__(self, evidence: Evidence) -> None:
        self.evidence = evidence
        #: host -> its representative, for the hosts joined by valid alias rules
        self.aliases: dict[str, str] = {}
        #: key under the valid rules -> (document, url) of the first page filed there
        self._index: dict[str, tuple[int, str]] = {}

    def canon(
        self,
        host: HostState,
        form: UrlForm,
        skip: Rule | None = None,
        alias: bool = True,
        compiled: CompiledRules | None = None,
    ) -> tuple[UrlForm, list[tuple[str, Rule]]]:
        """``form`` rewritten by the host's valid rules (less ``skip``), and the rules used, each
        with the host that holds it (an alias's address is rewritten by its representative's)."""
        if alias and self.aliases:
            target = self.aliases.get(form.host)
            if target is not None and not (skip and skip.kind == "alias"):
                # an alias's address is read as the representative host reads it
                canon, more = self.canon(self.evidence.host(target), form.with_host(target), alias=False)
                return canon, [(form.host, Rule("alias", name=target)), *more]
        canon, used = rewrite(form, host.compiled if compiled is None else compiled, skip)
        return canon, [(host.name, rule) for rule in used]

    def file(self, host: HostState, url: str, form: UrlForm, document: int) -> None:
        """File a url under its key by the valid rules: two documents meeting there refute the
        rules that merged them."""
        canon, used = self.canon(host, form)
        key = canon.key
        host.keys[url] = key
        seen = self._index.get(key)
        if seen is None:
            self._index[key] = (document, url)
        elif seen[0] != document and seen[1] != url:
            self._conflict(host, url, form, used, seen[1])

    def verify(self, host: HostState, rule: Rule) -> tuple[str, str] | None:
        """A counter-example to ``rule`` among the urls seen: two urls of different documents
        that the valid rules keep apart and ``rule`` merges (checked when the rule has the
        support to become valid; afterwards the index checks every new url)."""
        if rule.kind == "alias":
            first = host
            pages = [
                (u, f, d)
                for name in (host.name, rule.name)
                for u, (f, d) in self.evidence.host(name).pages.items()
            ]
            moved = [
                (u, self.canon(first, f.with_host(host.name), alias=False)[0].key, f.host, d)
                for u, f, d in pages
            ]
        else:
            compiled = CompiledRules.of([*host.compiled_rules(), rule])
            moved = [
                (
                    u,
                    self.canon(host, f, compiled=compiled)[0].key
                    if touches(rule, f)
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
        self, host: HostState, url: str, form: UrlForm, used: list[tuple[str, Rule]], other: str
    ) -> None:
        """Two documents meet under the valid rules: refute the rules that merge them."""
        other_form = decompose(other)
        assert other_form is not None
        other_host = self.evidence.hosts[other_form.host]
        _, other_used = self.canon(other_host, other_form)
        suspects = sorted(set(used) | set(other_used))
        needed = [
            (owner, rule)
            for owner, rule in suspects
            if self.canon(host, form, skip=rule)[0].key
            != self.canon(other_host, other_form, skip=rule)[0].key
        ]
        for owner, rule in needed or suspects:
            if rule.kind != "alias":
                self.evidence.refute(owner, rule, (url, other))
                continue
            first, second = sorted((owner, rule.name))  # owner: the aliased host; name: its representative
            self.evidence.refute(first, Rule("alias", name=second), (url, other))

    def rebuild(self, host: HostState) -> None:
        """File the host's urls again under its new rules."""
        for url, key in host.keys.items():
            if self._index.get(key, (0, ""))[1] == url:
                del self._index[key]
        host.keys = {}
        for url, (form, document) in list(host.pages.items()):
            self.file(host, url, form, document)

    def relink_aliases(self) -> set[str]:
        """Join the hosts of valid alias rules (representative: the smallest name); the hosts
        whose representative changed."""
        valid = [(host.name, host.valid) for host in self.evidence.hosts.values()]
        self.aliases, changed = link_aliases(valid, self.aliases)
        return changed
