"""``NEARDUP_SKIP_MIRRORS`` on its own (``get_crawler``, inline): requests to a mirror host are
kept aside, scheduled again when the claim is withdrawn or would not hold, given up at the end
when it holds whatever they are, bounded, and kept across a pause (``JOBDIR``)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from scrapy import Request
from scrapy.exceptions import DontCloseSpider

from neardup_scrapy.mirrorskip import HELD_FILE
from tests.components.test_scrapy_components import Env, html_response, page


class FakeEngine:
    """What the skipper asks of the engine: ``crawl`` (requests scheduled again)."""

    def __init__(self) -> None:
        self.crawled: list[Request] = []

    def crawl(self, request: Request) -> None:
        self.crawled.append(request)


def mirror_env(**settings: Any) -> tuple[Env, FakeEngine]:
    """b.test copies ten of a.test's fifteen pages: a settled mirror of it."""
    env = Env(NEARDUP_SKIP_MIRRORS=True, **settings)
    engine = FakeEngine()
    env.crawler.engine = engine  # type: ignore[assignment]
    for seed in range(15):
        env.fetch(html_response(f"http://a.test/{seed}", page(seed)))
    for seed in range(10):
        env.fetch(html_response(f"http://b.test/{seed}", page(seed)))
    assert env.runtime.mirror_of("http://b.test/x") == "a.test"
    return env, engine


def test_requests_kept_aside_are_scheduled_again_when_the_claim_is_withdrawn() -> None:
    env, engine = mirror_env()
    try:
        skipper = env.runtime.skipper
        assert skipper is not None
        requests = [Request(f"http://b.test/new/{i}") for i in range(3)]
        assert all(skipper.skip(r) for r in requests)
        assert not skipper.skip(Request("http://a.test/new")) and not engine.crawled
        assert not skipper.skip(Request("http://b.test/opt-out", meta={"dont_neardup": True}))
        env.runtime.mirrors.update({})  # the index withdraws the claim
        assert [r.url for r in engine.crawled] == [r.url for r in requests]
        assert all(r.dont_filter for r in engine.crawled)  # their urls passed the filter already
        assert env.stat("neardup/mirror_requests_skipped") == 3
        assert env.stat("neardup/mirror_requests_rescheduled") == 3
    finally:
        env.close()


def test_at_the_end_requests_are_given_up_only_when_the_claim_holds_whatever_they_are() -> None:
    env, engine = mirror_env()
    try:
        skipper = env.runtime.skipper
        assert skipper is not None
        skipper.skip(Request("http://b.test/left/1"))
        skipper._idle()  # b.test copies 10 of 10 documents: 1 page of its own would change nothing
        assert not engine.crawled and env.stat("neardup/mirror_requests_given_up") == 1
        for i in range(40):
            skipper.skip(Request(f"http://b.test/more/{i}"))
        with pytest.raises(DontCloseSpider):  # 40 pages of its own would make it no mirror
            skipper._idle()
        assert len(engine.crawled) == 40 and env.stat("neardup/mirror_requests_rescheduled") == 40
        assert not skipper.skip(engine.crawled[0])  # fetched now: the host is no longer skipped
        skipper._idle()  # nothing left: the spider may close
    finally:
        env.close()


def test_requests_beyond_the_cap_are_counted_not_kept() -> None:
    env, engine = mirror_env(NEARDUP_MIRROR_REQUESTS_KEPT=2)
    try:
        skipper = env.runtime.skipper
        assert skipper is not None
        for i in range(5):
            assert skipper.skip(Request(f"http://b.test/x/{i}"))
        assert env.stat("neardup/mirror_requests_skipped") == 5
        assert env.stat("neardup/mirror_requests_not_kept") == 3
        env.runtime.mirrors.update({})
        assert len(engine.crawled) == 2
    finally:
        env.close()


def test_kept_requests_are_saved_in_jobdir_when_the_crawl_pauses(tmp_path: Path) -> None:
    env, _ = mirror_env(JOBDIR=str(tmp_path))
    try:
        skipper = env.runtime.skipper
        assert skipper is not None
        skipper.skip(Request("http://b.test/kept", meta={"k": 1}))
        skipper._closed(reason="shutdown")
        assert (tmp_path / HELD_FILE).exists()
    finally:
        env.close()
    resumed = Env(NEARDUP_SKIP_MIRRORS=True, JOBDIR=str(tmp_path))  # the disk index in JOBDIR
    engine = FakeEngine()
    resumed.crawler.engine = engine  # type: ignore[assignment]
    try:
        assert resumed.runtime.mirror_of("http://b.test/x") == "a.test"  # known from the start
        skipper = resumed.runtime.skipper
        assert skipper is not None
        skipper._opened()
        assert not (tmp_path / HELD_FILE).exists()
        resumed.runtime.mirrors.update({})
        assert [(r.url, r.meta.get("k")) for r in engine.crawled] == [("http://b.test/kept", 1)]
    finally:
        resumed.close()
