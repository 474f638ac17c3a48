"""Rewriting a url by its host's valid rules, and the hosts joined by alias rules.

:func:`rewrite` applies a host's rules (arranged by :class:`CompiledRules`) to a url's form:
the urls that name one document by those rules come out with one key. Pure functions.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from .forms import UrlForm
from .rules import Rule


@dataclass(frozen=True, slots=True)
class CompiledRules:
    """A host's valid rules, arranged for rewriting."""

    case: bool = False
    slash: bool = False
    prefixes: frozenset[str] = frozenset()
    suffixes: frozenset[str] = frozenset()
    params: dict[str, tuple[Rule, ...]] = field(default_factory=dict)

    @classmethod
    def of(cls, rules: Iterable[Rule]) -> CompiledRules:
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


def touches(rule: Rule, form: UrlForm) -> bool:
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


def rewrite(form: UrlForm, rules: CompiledRules, skip: Rule | None = None) -> tuple[UrlForm, list[Rule]]:
    """``form`` rewritten by ``rules`` (less ``skip``; aliases aside), and the rules used;
    ``form`` itself when nothing changed."""
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
    if path == form.path and params is form.params:
        return form, used
    return UrlForm(form.scheme, form.host, path, params), used


def link_aliases(
    valid: Iterable[tuple[str, frozenset[Rule]]], before: Mapping[str, str]
) -> tuple[dict[str, str], set[str]]:
    """The hosts joined by valid alias rules, each with its representative (the smallest name),
    from every host's ``(name, valid rules)``; and the hosts whose representative differs from
    ``before``."""
    parent: dict[str, str] = {}

    def find(h: str) -> str:
        while parent.get(h, h) != h:
            h = parent[h]
        return h

    for name, rules in valid:
        for rule in sorted(rules):
            if rule.kind == "alias":
                a, b = find(name), find(rule.name)
                if a != b:
                    parent[max(a, b)] = min(a, b)
    aliases = {h: find(h) for h in sorted(set(parent) | set(parent.values())) if find(h) != h}
    changed = set(aliases) ^ set(before) | {h for h in aliases if before.get(h) != aliases[h]}
    return aliases, changed
