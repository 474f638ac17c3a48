"""Duplicate-url rules in real crawls: generated sites with session ids, aliases and traps
(``tests/urlrules_sites.py``), crawled by Scrapy in a subprocess, scored from the servers' logs."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from benchmark_modules import load_benchmark
from scrapy.utils.test import get_crawler

from neardup_scrapy.config import NeardupSettingsError
from neardup_scrapy.runtime import NeardupRuntime
from neardup_scrapy.urlrules import NeardupUrlRulesMiddleware

bench = load_benchmark("bench_urlrules")
pytestmark = pytest.mark.e2e
PLUGIN = {"ADDONS": {"neardup_scrapy.Addon": 100}, "NEARDUP_SKIP_PREDICTED": True}


def _crawl(sites: Any, settings: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any], set[str]]:
    stats = bench.crawl(sites, settings, cap=3000)
    score = sites.score()
    missing = {d for name, s in score.items() for d in sites.sites[name].documents() - s["reached"]}
    return stats, score, missing


@pytest.mark.parametrize("worker", ["process", "inline"])
def test_predicted_duplicates_are_skipped_and_no_document_is_lost(worker: str, tmp_path: Path) -> None:
    rules_file = tmp_path / "rules.json"
    report_file = tmp_path / "report.json"
    settings = {
        **PLUGIN,
        "NEARDUP_WORKER": worker,
        "NEARDUP_URL_RULES_FILE": str(rules_file),
        "NEARDUP_REPORT_FILE": str(report_file),
        "NEARDUP_URL_RULES_MIN_SUPPORT": 4,
    }
    sites = bench.Sites(18, names=["sessions", "statics", "control"], seed=5)
    try:
        stats, score, missing = _crawl(sites, settings)
        # a recrawl with the saved rules saves from its first requests
        again, score2, missing2 = _crawl(sites, {**settings, "NEARDUP_REPORT_FILE": None})
        hosts = {name: site.hosts for name, site in sites.sites.items()}
        documents = sites.documents()
    finally:
        sites.close()
    assert not missing, missing
    requests = sum(s["requests"] for s in score.values())
    assert stats["neardup/skipped/predicted"] > requests  # far more skipped than downloaded
    assert requests <= 2 * documents, (requests, documents)
    assert stats.get("bench/errback_tag", 0) > 0  # the errback sees the page it duplicates
    assert score["control"]["duplicates"] == 0
    report = json.loads(report_file.read_text())
    section = report["url_rules"]
    by_host = {h["host"]: h for h in section["hosts"]}
    assert section["valid"] > 0 and section["saved"] > 0
    assert hosts["control"][0] not in by_host or by_host[hosts["control"][0]]["saved"] == 0
    sid = [r for r in by_host[hosts["sessions"][0]]["rules"] if r["rule"]["name"] == "sid" and r["valid"]]
    assert sid and sid[0]["counter_examples"] == 0 and sid[0]["support"] >= 4
    assert not any(
        r["valid"] and r["rule"]["name"] in ("page", "rev") for h in section["hosts"] for r in h["rules"]
    )
    assert json.loads(rules_file.read_text())["valid"] > 0

    assert not missing2
    duplicates = sum(s["duplicates"] for s in score2.values())
    assert duplicates < sum(s["duplicates"] for s in score.values())
    assert duplicates <= 0.1 * sum(s["requests"] for s in score2.values()), duplicates
    assert again["neardup/skipped/predicted"] > 0


def test_learning_alone_skips_nothing(tmp_path: Path) -> None:
    report_file = tmp_path / "report.json"
    sites = bench.Sites(10, names=["statics"], seed=5)
    try:
        settings = {"ADDONS": {"neardup_scrapy.Addon": 100}, "NEARDUP_REPORT_FILE": str(report_file)}
        stats, _score, _missing = _crawl(sites, {**settings, "CLOSESPIDER_PAGECOUNT": 300})
    finally:
        sites.close()
    assert "neardup/skipped/predicted" not in stats
    assert json.loads(report_file.read_text())["url_rules"]["valid"] > 0


def test_settings_are_checked() -> None:
    crawler = get_crawler(settings_dict={"NEARDUP_URL_RULES": False, "NEARDUP_SKIP_PREDICTED": True})
    with pytest.raises(NeardupSettingsError, match="NEARDUP_SKIP_PREDICTED"):
        NeardupRuntime.of(crawler)
    crawler = get_crawler(settings_dict={"NEARDUP_URL_RULES_MIN_SUPPORT": 0, "NEARDUP_WORKER": "inline"})
    with pytest.raises(NeardupSettingsError, match="NEARDUP_URL_RULES_MIN_SUPPORT"):
        NeardupRuntime.of(crawler)
    crawler = get_crawler(settings_dict={"NEARDUP_URL_RULES": False, "NEARDUP_WORKER": "inline"})
    from scrapy.exceptions import NotConfigured

    with pytest.raises(NotConfigured):
        NeardupUrlRulesMiddleware.from_crawler(crawler)
    NeardupRuntime.of(crawler).close()


def test_a_paused_crawl_keeps_its_skipped_requests(tmp_path: Path) -> None:
    """With JOBDIR, the requests kept aside and the pages fetched survive a pause: the resumed crawl
    still reaches every document (Scrapy's duplicate filter remembers the skipped requests, so
    only the plugin can schedule them again) and goes on skipping."""
    settings = {**PLUGIN, "JOBDIR": str(tmp_path / "job"), "NEARDUP_URL_RULES_MIN_SUPPORT": 4}
    sites = bench.Sites(18, names=["sessions", "statics"], seed=7)
    try:
        first = bench.crawl(sites, settings, cap=60)
        reached_first = {d for s in sites.score().values() for d in s["reached"]}
        assert first.get("neardup/skipped/predicted", 0) > 0
        assert (tmp_path / "job" / "neardup-predicted.pickle").exists()
        second = bench.crawl(sites, settings, cap=3000)
        reached = reached_first | {d for s in sites.score().values() for d in s["reached"]}
        universe = {d for site in sites.sites.values() for d in site.documents()}
    finally:
        sites.close()
    assert reached == universe, sorted(universe - reached)
    assert second.get("neardup/skipped/predicted", 0) > 0


@pytest.mark.redis
def test_processes_sharing_a_redis_index_share_their_rules(redis_url: tuple[str, str]) -> None:
    """The rules a crawl learnt are in the shared index: a second crawler process on the same index
    (here, the next crawl) skips from its first requests, and the report lists them."""
    url, prefix = redis_url
    settings = {
        **PLUGIN,
        "NEARDUP_STORAGE": "redis",
        "NEARDUP_REDIS_URL": url,
        "NEARDUP_REDIS_PREFIX": prefix,
        "NEARDUP_URL_RULES_MIN_SUPPORT": 4,
    }
    sites = bench.Sites(18, names=["sessions"], seed=9)
    try:
        bench.crawl(sites, settings, cap=3000)
        first = sites.score()["sessions"]
        second_stats = bench.crawl(sites, settings, cap=3000)
        second = sites.score()["sessions"]
        missing = sites.sites["sessions"].documents() - second["reached"]
    finally:
        sites.close()
    assert not missing
    assert second_stats["neardup/skipped/predicted"] > 0
    assert second["duplicates"] < first["duplicates"]

    import redis

    client = redis.Redis.from_url(url)
    assert len(client.hgetall(f"{prefix}:urlrules")) == 2  # one state per crawler process


@pytest.mark.parametrize(
    ("skipped", "rescheduled", "fails"), [(100, 30, True), (100, 10, False), (10, 9, False), (0, 0, False)]
)
def test_spidermon_check_of_requests_scheduled_again(skipped: int, rescheduled: int, fails: bool) -> None:
    """The monitor fails when too many skipped requests had to be scheduled again (the rules keep
    changing their mind); below NEARDUP_MONITOR_MIN_PAGES skipped requests it passes."""
    from types import SimpleNamespace

    from scrapy.settings import Settings

    from neardup_scrapy.monitors import NeardupMonitor

    monitor = NeardupMonitor("test_predicted_rescheduled")
    crawler = SimpleNamespace(settings=Settings({"NEARDUP_MONITOR_MAX_RESCHEDULED_SHARE": 0.2}))
    stats = {"neardup/skipped/predicted": skipped, "neardup/predicted/rescheduled": rescheduled}
    monitor.data = SimpleNamespace(stats=stats, crawler=crawler)
    if fails:
        with pytest.raises(
            AssertionError, match=r"rescheduled share 30\.0%.*NEARDUP_MONITOR_MAX_RESCHEDULED_SHARE"
        ):
            monitor.test_predicted_rescheduled()
    else:
        monitor.test_predicted_rescheduled()


def test_an_error_while_learning_never_changes_a_verdict(caplog: pytest.LogCaptureFixture) -> None:
    from neardup_scrapy.core import Verdict

    crawler = get_crawler(settings_dict={"NEARDUP_WORKER": "inline"})
    runtime = NeardupRuntime.of(crawler)
    middleware = NeardupUrlRulesMiddleware.from_crawler(crawler)

    def broken(url: str, cluster: str) -> None:
        raise RuntimeError("learner bug")

    middleware.learner.observe = broken  # type: ignore[method-assign]
    try:
        verdict = runtime._settle(runtime.checker.here.check("http://a.test/p", text="some words " * 20))
        assert verdict.status == "unique"
        assert "learner bug" in caplog.text
        assert isinstance(verdict, Verdict)
    finally:
        runtime.close()
