"""#10, #35: a real crawl that fetches a mirror host and its origin at once names the mirror
right, never skips or drops the origin's pages, and skips the mirror once the pair is settled.

Two loopback hosts serve the same articles, each in its own template; the copy's pages name the
origin's as canonical (the evidence of direction: arrival order is none). A link-following
spider starts on both hosts at once, many requests in flight, in both worker modes; every run
must report exactly one pair, mirror -> origin.
"""

from __future__ import annotations

import json

import pytest
from e2e_crawl import run_crawl
from e2e_mirror_site import crawl_both, mirror_paths, origin_paths
from e2e_server import Site, article, html_page, loopback_available, serve

pytestmark = pytest.mark.e2e

if not loopback_available("127.0.0.2"):  # pragma: no cover - macOS without the alias
    pytest.skip("127.0.0.2 is not available on this machine", allow_module_level=True)

N = 30
RUNS = 5


def _other_template(title: str, paragraphs: list[str], links: list[str], head: str) -> str:
    """The mirror's own template: other chrome, other markup around the same article."""
    menu = " | ".join(f"<a href='{href}'>{href}</a>" for href in links)
    body = "".join(f"<div class='para'>{p}</div>" for p in paragraphs)
    return (
        f"<html><head><title>{title} - Mirror Portal</title>{head}</head><body>"
        "<div id='top'><span class='logo'>Mirror Portal</span><div class='menu'>"
        f"{menu}</div></div><div id='layout'><div id='sidebar'><ul><li>Archive</li><li>Tags</li>"
        f"<li>About us</li></ul></div><div id='content'><h2 class='headline'>{title}</h2>{body}</div></div>"
        "<div id='bottom'>Copyright Mirror Portal. All rights reserved.</div></body></html>"
    )


def _sites(origin: Site, mirror: Site, origin_url: str, mirror_url: str) -> None:
    paths = [f"/story/{i}" for i in range(N)]
    origin.add("/", html_page("Origin front", ["The latest stories."], [*paths, mirror_url + "/"]))
    mirror.add("/", _other_template("Front", ["Stories from elsewhere."], paths, ""))
    for i, path in enumerate(paths):
        links = ["/", paths[(i + 1) % N], paths[(i + 5) % N]]
        origin.add(path, html_page(f"Story {i}", article(100 + i, 300), links))
        canonical = f"<link rel='canonical' href='{origin_url}{path}'>"
        mirror.add(path, _other_template(f"Story {i}", article(100 + i, 300), links, canonical))


@pytest.mark.timeout(900)
@pytest.mark.parametrize("mode", ["inline", "process"])
def test_a_mirror_crawled_with_its_origin_is_named_right_every_time(mode: str) -> None:
    outcomes = []
    for _ in range(RUNS):
        origin, mirror = Site(), Site()
        with serve({"127.0.0.1": origin, "127.0.0.2": mirror}) as urls:
            a, b = urls["127.0.0.1"], urls["127.0.0.2"]
            _sites(origin, mirror, a, b)
            result = run_crawl(
                "LinkSpider",
                {
                    "NEARDUP_WORKER": mode,
                    "NEARDUP_REPORT_FILE": "report.json",
                    "CONCURRENT_REQUESTS": 16,
                    "CONCURRENT_REQUESTS_PER_DOMAIN": 16,
                    "LOG_LEVEL": "INFO",
                },
                start=f"{a}/,{b}/",
            )
        assert result.returncode == 0, result.log[-3000:]
        report = json.loads((result.out / "report.json").read_text())
        pairs = sorted((m["host"], m["mirror_of"]) for m in report["mirrors"])
        outcomes.append(pairs)
        host_a, host_b = a.split("//")[1], b.split("//")[1]
        assert pairs == [(host_b, host_a)], (len(outcomes), pairs)
        assert "no longer looks like a mirror" not in result.log
        items = result.by_url()
        # never the reverse, not even for a while: no page of the origin is tagged as a mirror's
        assert not [url for url, item in items.items() if url.startswith(a) and item["neardup"]["mirror_of"]]
        assert result.stat("neardup/mirror_hosts") in (0, 1)
    assert len(outcomes) == RUNS


# -- #35: crawl-time decisions that never cost the original ---------------------------------------
#: Crawls per worker mode here; ``benchmarks/bench_mirror_crawl.py`` runs 20 of each.
RUNS_PER_MODE = 3


@pytest.mark.timeout(900)
@pytest.mark.parametrize("mode", ["inline", "process"])
def test_skipping_mirrors_never_skips_the_origin(mode: str) -> None:
    """The crawl of the issue: a template mirror without canonical links, smaller than its
    origin, so a crawl that starts on both is ahead on the copy for a while. No request to the
    origin is skipped, every origin page is fetched and reaches the spider untagged as a mirror,
    and no log line names the origin a mirror."""
    for _ in range(RUNS_PER_MODE):
        run = crawl_both({"NEARDUP_WORKER": mode, "NEARDUP_SKIP_MIRRORS": True})
        assert run.result.returncode == 0, run.result.log[-3000:]
        assert run.origin_skipped == 0 and run.reversed_claims == 0, (run.skipped_urls, run.claims)
        assert run.origin_fetched == set(origin_paths())
        assert run.origin_items() == set(origin_paths())
        assert not [i for i in run.result.items if run.origin_host in i["url"] and i["neardup"]["mirror_of"]]
        report = json.loads((run.result.out / "report.json").read_text())
        assert [(m["host"], m["mirror_of"]) for m in report["mirrors"]] == [
            (run.mirror_host, run.origin_host)
        ]


@pytest.mark.timeout(900)
@pytest.mark.parametrize("mode", ["inline", "process"])
def test_a_settled_mirror_is_skipped_and_its_requests_given_up(mode: str) -> None:
    """A mirror whose copies name the origin's pages canonical, paged one story at a time: the
    pair is settled on the first copies and the rest of the mirror is skipped (the chain of its
    pages is cut), while the origin is fetched whole; the skipped requests are given up at the
    end, the pair holding whatever they are."""
    for _ in range(RUNS_PER_MODE):
        run = crawl_both({"NEARDUP_WORKER": mode, "NEARDUP_SKIP_MIRRORS": True}, canonical=True, nav="chain")
        assert run.result.returncode == 0, run.result.log[-3000:]
        assert run.origin_skipped == 0 and run.reversed_claims == 0
        assert run.origin_fetched == set(origin_paths())
        assert run.mirror_skipped >= 1 and len(run.mirror_fetched) < len(mirror_paths())
        assert run.claims == [(run.mirror_host, run.origin_host)]
        stats = run.result.stats
        assert stats["neardup/mirror_requests_skipped"] == run.mirror_skipped
        assert stats.get("neardup/mirror_requests_given_up", 0) == run.mirror_skipped


@pytest.mark.timeout(900)
@pytest.mark.parametrize("mode", ["inline", "process"])
@pytest.mark.parametrize("canonical", [False, True], ids=["fast-mirror", "declared-slow-mirror"])
def test_drop_mode_keeps_every_origin_page(mode: str, canonical: bool) -> None:
    """In drop mode no page of the origin is dropped as a duplicate of its copy, whichever came
    first: a page named canonical or on a settled mirror's origin replaces its copy as the
    representative, and a cross-host duplicate with nothing telling which is the original is
    kept (``neardup/not_dropped``). The mirror whose copies declare their origin and come after
    it has its copies dropped."""
    for _ in range(RUNS_PER_MODE):
        nav = "chain" if canonical else "index"
        run = crawl_both({"NEARDUP_WORKER": mode, "NEARDUP_ACTION": "drop"}, canonical=canonical, nav=nav)
        assert run.result.returncode == 0, run.result.log[-3000:]
        assert run.origin_items() == set(origin_paths())
        dropped = [e["url"] for e in run.result.errbacks if e["exception"] == "DuplicatePage"]
        assert all(run.mirror_host in url for url in dropped), dropped
        if canonical:  # the copies declare their origin and come after it: dropped
            assert dropped
