"""#12 finding 10: with JOBDIR and NEARDUP_SKIP_MIRRORS, a known mirror stays skipped.

The crawl's process kept its map of mirror hosts from the verdicts of each host's own pages, so
a resumed crawl (its index on disk already naming the mirror) fetched the mirror's queued
requests until one of its pages came back checked: 16 of the 24 left in this setup. The map is
now the index's own, sent whole after the open and whenever it changes.

When the first crawl confirmed the mirror on few of its pages (the crawl's scheduling decides how
many), the resumed crawl may, once idle, fetch the kept requests after all: the claim would not
hold whatever those pages are (#35, ``neardup.mirrorskip``). Those fetches are counted in
``neardup/mirror_requests_rescheduled`` and logged; any other fetch of the mirror is the defect.
"""

from __future__ import annotations

import tempfile

import pytest
from e2e_crawl import run_crawl
from e2e_server import Site, article, html_page, loopback_available, serve

pytestmark = pytest.mark.e2e

if not loopback_available("127.0.0.2"):  # pragma: no cover - macOS without the alias
    pytest.skip("127.0.0.2 is not available on this machine", allow_module_level=True)

N = 40


def _populate(site: Site, other_front: str | None, canonical_base: str) -> None:
    def head(path: str) -> str:
        return f"<link rel='canonical' href='{canonical_base}{path}'>" if canonical_base else ""

    links = [f"/a/{i}" for i in range(N)] + ["/more"]
    site.add("/", html_page("Front", ["Front page of the site."], links, head=head("/")))
    for i in range(N):
        neighbours = ["/", f"/a/{(i + 1) % N}", f"/a/{(i + 7) % N}"]
        site.add(f"/a/{i}", html_page(f"Story {i}", article(i, 300), neighbours, head=head(f"/a/{i}")))
    site.add("/more", html_page("More", ["Partner sites."], [other_front] if other_front else []))


@pytest.mark.timeout(300)
@pytest.mark.parametrize("mode", ["inline", "process"])
def test_a_resumed_crawl_skips_the_mirror_its_index_knows(mode: str) -> None:
    origin, mirror = Site(), Site()
    with serve({"127.0.0.1": origin, "127.0.0.2": mirror}) as urls:
        _populate(origin, urls["127.0.0.2"] + "/", "")
        _populate(mirror, None, urls["127.0.0.1"])  # the copy names the origin's pages canonical
        settings = {
            "JOBDIR": tempfile.mkdtemp(prefix="neardup-jobdir-"),
            "NEARDUP_SKIP_MIRRORS": True,
            "NEARDUP_WORKER": mode,
            "CONCURRENT_REQUESTS": 16,
            "LOG_LEVEL": "INFO",
        }
        start = urls["127.0.0.1"] + "/"
        first = run_crawl("LinkSpider", {**settings, "CLOSESPIDER_PAGECOUNT": 45}, start=start)
        assert first.returncode == 0, first.log[-3000:]
        assert first.stats["_finish_reason_"] == "closespider_pagecount"
        assert first.stat("neardup/mirror_hosts") == 1
        before = len(mirror.hits)
        unfetched = len(set(mirror.pages) - set(mirror.hits))
        second = run_crawl("LinkSpider", settings, start=start)
        assert second.returncode == 0, second.log[-3000:]
        fetched = len(mirror.hits) - before
    assert unfetched > 0  # the mirror had pages left to fetch when the crawl was paused
    rescheduled = second.stat("neardup/mirror_requests_rescheduled")
    assert fetched == rescheduled, f"the resumed crawl fetched {fetched} pages of the known mirror"
    if rescheduled:  # only after the crawl went idle, on a claim too thin for the pages it left
        assert "its claim would not hold whatever they are" in second.log
    assert second.stat("neardup/mirror_hosts") == 1
    assert "no longer" not in second.log
