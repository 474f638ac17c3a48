"""Duplicate-url rules, the evidence each one keeps, and when a rule is valid.

A rule says that two urls of a host that differ only in one thing name the same document:

==============  ==========================================================================
kind            the urls differ in
==============  ==========================================================================
``param``       parameter ``name`` (any value, or its absence): ``?sid=``, ``;jsessionid=``
``value``       the value of parameter ``name``, present on both (``?sort=a`` / ``?sort=b``)
``no-op``       parameter ``name`` with value ``value`` against no such parameter
                (``?lang=en`` where English is the default)
``prefix``      a leading path segment ``name`` (``/print/a`` and ``/a``, ``/m/a`` and ``/a``)
``suffix``      a last path segment ``name`` (``/a/index.html`` and ``/a/``)
``slash``       a trailing slash
``case``        the letter case of the path
``alias``       the host: ``name`` serves the same pages at the same addresses
==============  ==========================================================================

Parameter rules hold for the whole host (``scope`` ``""``), for the pages of one section
(``scope`` ``/news``: the path's first segment), so a parameter that selects content in one
part of a site (``sort`` of a list) can still be learnt as noise in another (``sort`` on
articles), or for one address (``scope`` ``=/path``: a page fetched again and again under
fresh values, e.g. a front page whose own share link carries a new click id at every view).
For one address, support counts new *values* (each is a new test of that one page).

**Evidence.** A *witness* is a pair of crawled urls that differ only in what the rule covers
(given the rules already valid) and whose pages the detector found to be one document; a
*counter-example* is such a pair whose pages are different documents. Support counts
*independent* witnesses: one per document (the copies of one page are one observation of the
rule, not many). The kinds that generalise over values (``param``, ``value``) also count the
distinct values their witnesses showed: a rule for every value of a parameter needs witnesses
over at least three values, so a default value (``?lang=en`` against no ``lang``) yields a
``no-op`` rule for that one value, never a rule for every value.

**Validity** (:meth:`RuleStats.valid`): at least ``min_support`` independent witnesses and no
counter-example; rules over values also need witnesses over at least three values (the absent
value counting as one for ``param``). The principle: a parameter that selects content (``page``,
``lang``, a revision id however random it looks) differs between two of its values on a
document with probability ``q``; if the two values of ``n`` independent witnesses had shown
the same page by chance only, each with probability at most ``1 - q``, that happens with
probability ``(1 - q)^n``: at ``q ≥ 1/2`` and the default ``n = 6``, under 1.6%; and it is
not enough to make a rule, which also needs the pair that would refute it never to have been
seen. A single counter-example withdraws a rule for good.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from typing import Any

__all__ = ["DEFAULT_MIN_SUPPORT", "MIN_VALUES", "Rule", "RuleStats", "value_token"]

#: Independent witnesses a rule needs (see the module docstring).
DEFAULT_MIN_SUPPORT = 6
#: Distinct values a rule over a parameter's values must have been shown.
MIN_VALUES = 3
#: Values remembered per rule (hashed); more are never needed to tell ``MIN_VALUES`` apart.
_MAX_VALUES = 64
#: Example pairs kept per rule, for the report.
MAX_EXAMPLES = 3

KINDS = ("param", "value", "no-op", "prefix", "suffix", "slash", "case", "alias")
_OVER_VALUES = ("param", "value")


@dataclass(frozen=True, order=True, slots=True)
class Rule:
    """One rule of one host (the host is the key it is kept under).

    Attributes:
        kind: one of ``param``, ``value``, ``no-op``, ``prefix``, ``suffix``, ``slash``,
            ``case``, ``alias`` (see the module docstring).
        scope: ``""`` (the whole host) or a section (``/news``) for parameter rules.
        name: the parameter, the path segment, or the other host of an alias.
        value: the parameter's value of a ``no-op`` rule.
    """

    kind: str
    scope: str = ""
    name: str = ""
    value: str = ""

    def describe(self) -> str:
        """The rule in words, as the report shows it."""
        if self.scope.startswith("="):
            where = f" at {self.scope[1:]}"
        else:
            where = (
                f" under {self.scope}/"
                if self.scope not in ("", "/")
                else " on top-level pages"
                if self.scope
                else ""
            )
        if self.kind == "param":
            return f"parameter {self.name} does not change the page{where}"
        if self.kind == "value":
            return f"the value of parameter {self.name} does not change the page{where}"
        if self.kind == "no-op":
            return f"{self.name}={self.value} is the page without it{where}"
        if self.kind == "prefix":
            return f"/{self.name}/... is the page at ..."
        if self.kind == "suffix":
            return f".../{self.name} is the page at .../"
        if self.kind == "slash":
            return "a trailing slash does not change the page"
        if self.kind == "case":
            return "the letter case of the path does not change the page"
        return f"host {self.name} serves the same pages at the same addresses"

    def to_dict(self) -> dict[str, str]:
        """``{kind, scope, name, value}``."""
        return {"kind": self.kind, "scope": self.scope, "name": self.name, "value": self.value}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Rule:
        """The rule of :meth:`to_dict`.

        Raises:
            ValueError: not a rule.
        """
        kind = data.get("kind")
        if kind not in KINDS:
            raise ValueError(f"unknown rule kind {kind!r}")
        parts = [data.get(k, "") for k in ("scope", "name", "value")]
        if not all(isinstance(p, str) for p in parts):
            raise ValueError("rule fields must be strings")
        return cls(str(kind), *parts)


def _kept_values(values: set[str], limit: int = 8) -> list[str]:
    """The first ``limit`` value digests in a fixed order: the absent value's (validity asks
    for it), then the others sorted (never the set's order, which varies between processes)."""
    absent = value_token("")
    head = [absent] if absent in values else []
    return head + sorted(values - {absent})[: limit - len(head)]


def value_token(value: str) -> str:
    """A short digest of a parameter value: rules count distinct values without keeping them
    (session ids and click ids stay out of reports and stores)."""
    return hashlib.blake2b(value.encode("utf-8", "surrogatepass"), digest_size=6).hexdigest()


@dataclass
class RuleStats:
    """The evidence of one rule.

    Attributes:
        support: independent witnesses (see the module docstring).
        counter: counter-examples seen.
        values: digests of the values its witnesses showed (at most 64).
        saved: requests not downloaded because of it.
        examples: witness url pairs (at most 3).
        counter_examples: counter-example url pairs (at most 3).
        documents: ids of the documents (clusters) that witnessed it, this process only.
    """

    support: int = 0
    counter: int = 0
    values: set[str] = field(default_factory=set)
    saved: int = 0
    examples: list[tuple[str, str]] = field(default_factory=list)
    counter_examples: list[tuple[str, str]] = field(default_factory=list)
    documents: set[int] = field(default_factory=set)

    def witness(self, rule: Rule, document: int, values: tuple[str, ...], pair: tuple[str, str]) -> bool:
        """Count a witness from ``document`` showing ``values``; True when it is independent
        (the first from that document)."""
        tokens = {value_token(v) for v in values} if rule.kind in _OVER_VALUES else set()
        new_value = not tokens <= self.values
        if len(self.values) < _MAX_VALUES:
            self.values |= tokens
        if rule.scope.startswith("="):  # one address: each new value is a new test of it
            if not new_value:
                return False
        elif document in self.documents:
            return False
        self.documents.add(document)
        self.support += 1
        if len(self.examples) < MAX_EXAMPLES:
            self.examples.append(pair)
        return True

    def refute(self, pair: tuple[str, str]) -> None:
        """Count a counter-example."""
        self.counter += 1
        if len(self.counter_examples) < MAX_EXAMPLES:
            self.counter_examples.append(pair)

    def valid(self, rule: Rule, min_support: int) -> bool:
        """Enough independent witnesses (over enough values) and no counter-example."""
        if self.counter or self.support < min_support:
            return False
        if rule.kind == "param":
            return len(self.values) >= MIN_VALUES and value_token("") in self.values
        if rule.kind == "value":
            return len(self.values) >= MIN_VALUES
        return True

    def merged(self, other: RuleStats) -> RuleStats:
        """This evidence plus another process's (supports and counts add up)."""
        values = (
            set(_kept_values(self.values | other.values, _MAX_VALUES)) if other.values else set(self.values)
        )
        return RuleStats(
            support=self.support + other.support,
            counter=self.counter + other.counter,
            values=values,
            saved=self.saved + other.saved,
            examples=(self.examples + other.examples)[:MAX_EXAMPLES],
            counter_examples=(self.counter_examples + other.counter_examples)[:MAX_EXAMPLES],
            documents=self.documents,
        )

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready evidence (documents are not kept: their ids are this process's)."""
        return {
            "support": self.support,
            "counter_examples": self.counter,
            "values": _kept_values(self.values),
            "saved": self.saved,
            "examples": [list(p) for p in self.examples],
            "counter_example_urls": [list(p) for p in self.counter_examples],
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> RuleStats:
        """The evidence of :meth:`to_dict`.

        Raises:
            ValueError: malformed.
        """

        def count(key: str) -> int:
            value = data.get(key, 0)
            if not isinstance(value, int) or isinstance(value, bool) or value < 0:
                raise ValueError(f"{key} must be an integer >= 0")
            return value

        def pairs(key: str) -> list[tuple[str, str]]:
            raw = data.get(key, [])
            if not isinstance(raw, list):
                raise ValueError(f"{key} must be a list")
            out = []
            for pair in raw[:MAX_EXAMPLES]:
                if not (isinstance(pair, list) and len(pair) == 2 and all(isinstance(u, str) for u in pair)):
                    raise ValueError(f"{key} must hold pairs of urls")
                out.append((pair[0], pair[1]))
            return out

        values = data.get("values", [])
        if not isinstance(values, list) or not all(isinstance(v, str) for v in values):
            raise ValueError("values must be a list of strings")
        return cls(
            support=count("support"),
            counter=count("counter_examples"),
            values=set(values[:_MAX_VALUES]),
            saved=count("saved"),
            examples=pairs("examples"),
            counter_examples=pairs("counter_example_urls"),
        )
