"""Builds the JSON report (format ``neardup-report/1``) from a store's counters and clusters."""

from __future__ import annotations

import datetime as dt
import json
import math
from importlib import metadata
from typing import Any

from neardup_scrapy.core.mirrors import mirror_pairs
from neardup_scrapy.core.params import DetectorParams
from neardup_scrapy.core.storage.base import IndexStorage
from neardup_scrapy.core.urls import redact_url

REPORT_FORMAT = "neardup-report/1"


def _version() -> str:
    try:
        return metadata.version("neardup-scrapy")
    except metadata.PackageNotFoundError:  # pragma: no cover - running from a source tree
        return "0+unknown"


def build_report(
    storage: IndexStorage,
    params: DetectorParams,
    *,
    examples: list[dict[str, Any]],
    max_clusters: int,
    max_members: int,
    max_hosts: int,
    dropped: int = 0,
    storage_errors: int = 0,
) -> dict[str, Any]:
    """Assemble the report; every list is capped so a million-page crawl stays a few MB.

    A page is every response the index counted: ``pages = unique + exact + near + skipped +
    revisits`` (totals and per host); a host's ``duplicate_share`` is ``(exact + near)`` over its
    checked pages (``unique + exact + near``).

    Args:
        storage: the detector's store (counters, clusters).
        params: the detector's parameters (recorded in the report).
        examples: near-duplicate pairs with text excerpts, already capped.
        max_clusters: largest clusters listed.
        max_members: members listed per cluster (representative first).
        max_hosts: hosts listed (most pages first); ``hosts_total`` gives the full count.
        dropped: pages or items the crawl dropped (filled by the Scrapy glue).
        storage_errors: pages passed through because the store failed.
    """
    counts = storage.host_counts()
    mirrors: list[dict[str, Any]] = []
    mirror_of: dict[str, str] = {}
    min_pages, share = params.mirror_min_pages, params.mirror_share
    for pair in mirror_pairs(storage.mirror_evidence(min_pages, share), min_pages, share):
        mirror_of.setdefault(pair.host, pair.mirror_of)  # strongest origin first
        mirrors.append(
            {
                "host": pair.host,
                "mirror_of": pair.mirror_of,
                "pages": counts[pair.host].pages if pair.host in counts else 0,
                "duplicate_pages": pair.pages,
                "duplicate_share": pair.duplicate_share,
            }
        )

    hosts: list[dict[str, Any]] = []
    for host, c in counts.items():
        checked = c.pages
        hosts.append(
            {
                "host": host,
                "pages": c.pages + c.skipped + c.revisits,
                "unique": c.unique,
                "exact": c.exact,
                "near": c.near,
                "skipped": c.skipped,
                "revisits": c.revisits,
                "duplicate_share": round((c.exact + c.near) / checked, 4) if checked else 0.0,
                "mirror_of": mirror_of.get(host),
            }
        )
    hosts.sort(key=lambda h: (-h["pages"], h["host"]))

    size_hist, clusters = storage.clusters(max_clusters, max_members)
    for cluster in clusters:  # crawled urls may carry credentials: never print a password
        for key in ("id", "representative"):
            cluster[key] = redact_url(cluster[key])
        for member in cluster["members"]:
            member["url"] = redact_url(member["url"])
    examples = [
        {**example, "a": _redacted(example["a"]), "b": _redacted(example["b"])} for example in examples
    ]
    totals = {
        "pages": sum(c.pages + c.skipped + c.revisits for c in counts.values()),
        "unique": sum(c.unique for c in counts.values()),
        "exact": sum(c.exact for c in counts.values()),
        "near": sum(c.near for c in counts.values()),
        "skipped": sum(c.skipped for c in counts.values()),
        "revisits": sum(c.revisits for c in counts.values()),
        "dropped": dropped,
        "clusters": sum(size_hist.values()),
        "mirror_hosts": len(mirrors),
        "bytes": sum(c.bytes for c in counts.values()),
        "bytes_saved": sum(c.duplicate_bytes for c in counts.values()),
        "storage_errors": storage_errors,
    }
    return {
        "format": REPORT_FORMAT,
        "generated_at": dt.datetime.now(dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "tool": {"name": "neardup-scrapy", "version": _version()},
        "params": {k: _json_number(v) for k, v in params.as_dict().items()},
        "totals": totals,
        "hosts": hosts[:max_hosts],
        "hosts_total": len(hosts),
        "cluster_sizes": {str(k): v for k, v in sorted(size_hist.items())},
        "clusters": clusters,
        "mirrors": mirrors,
        "examples": examples,
        "url_rules": url_rules_section(storage, max_hosts),
    }


def url_rules_section(storage: IndexStorage, max_hosts: int) -> dict[str, Any]:
    """The duplicate-url rules every process saved with the index, merged (see
    :meth:`~neardup_scrapy.core.urlrules.UrlRuleLearner.summary`); a state that cannot be read
    is left out."""
    from neardup_scrapy.core.urlrules.learner import UrlRuleLearner
    from neardup_scrapy.core.urlrules.rules import DEFAULT_MIN_SUPPORT

    states = []
    for blob in storage.url_rules().values():
        try:
            state = json.loads(blob)
        except ValueError:
            continue
        if isinstance(state, dict):
            states.append(state)
    min_support = max(
        (s.get("min_support", 0) for s in states if isinstance(s.get("min_support"), int)), default=0
    )
    learner = UrlRuleLearner(min_support=min_support or DEFAULT_MIN_SUPPORT)
    try:
        learner.load(states)
    except ValueError:
        learner.load([])
    summary = learner.summary(max_hosts)
    for host in summary["hosts"]:
        for rule in host["rules"]:
            for key in ("examples", "counter_example_urls"):
                rule[key] = [[redact_url(u) for u in pair] for pair in rule[key]]
    return summary


def _redacted(page: dict[str, Any]) -> dict[str, Any]:
    url = page.get("url")
    return {**page, "url": redact_url(url)} if isinstance(url, str) else dict(page)


def _json_number(value: Any) -> Any:
    """``None`` for a float that JSON cannot hold (``ttl = inf`` means "never", like ``None``)."""
    return None if isinstance(value, float) and not math.isfinite(value) else value
