"""A site and its template mirror on two loopback hosts, for the crawls of tests and benchmarks.

The origin has 47 pages: a front page, 25 stories, 5 section pages, an about page and 15
archive notes of its own. The mirror copies 20 of the stories into its own template (other
chrome, other markup around the same article) and has a front page and two pages of its own: 20
of its 23 documents are the origin's.

How a crawl that starts on both hosts at once meets them depends on the mirror's navigation:

* ``"index"``: its front page links every page, as the origin's does. The mirror, smaller, is
  fetched faster than the origin, so for a while it holds more of the stories than the origin
  does (what made crawls take the origin for the copy);
* ``"chain"``: its front page links the first story and each story the next, as an archive
  paged one story at a time: the origin is fetched faster, and most of the mirror is still to
  come when the pair is settled (what skipping a mirror saves).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from e2e_crawl import CrawlResult, run_crawl
from e2e_server import Site, article, html_page, serve

STORIES = 25
COPIED = 20
SECTIONS = 5
NOTES = 15


def mirror_template(title: str, paragraphs: list[str], links: list[str], head: str = "") -> str:
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


def origin_paths() -> list[str]:
    """Every path of the origin (47)."""
    return (
        ["/", "/about"]
        + [f"/story/{i}" for i in range(STORIES)]
        + [f"/section/{k}" for k in range(SECTIONS)]
        + [f"/notes/{k}" for k in range(NOTES)]
    )


def mirror_paths() -> list[str]:
    """Every path of the mirror (23)."""
    return ["/", "/contact", "/team"] + [f"/story/{i}" for i in range(COPIED)]


def build(
    origin: Site, mirror: Site, origin_url: str, *, canonical: bool = False, nav: str = "index"
) -> None:
    """Fill ``origin`` and ``mirror``; with ``canonical`` the mirror's copies name the origin's
    pages as canonical (``<link rel=canonical>``); ``nav``: the mirror's navigation (see the
    module docstring)."""
    stories = [f"/story/{i}" for i in range(STORIES)]
    sections = [f"/section/{k}" for k in range(SECTIONS)]
    notes = [f"/notes/{k}" for k in range(NOTES)]
    origin.add(
        "/",
        html_page("Harbour Gazette", ["The latest stories of the town."], ["/about", *sections, *stories]),
    )
    origin.add("/about", html_page("About the Gazette", article(900, 120), ["/"]))
    for i, path in enumerate(stories):
        links = ["/", stories[(i + 1) % STORIES], sections[i % SECTIONS]]
        origin.add(path, html_page(f"Story {i}", article(100 + i, 300), links))
    for k, path in enumerate(sections):
        listed = [s for j, s in enumerate(stories) if j % SECTIONS == k]
        origin.add(
            path, html_page(f"Section {k}", article(700 + k, 90), ["/", *listed, *notes[3 * k : 3 * k + 3]])
        )
    for k, path in enumerate(notes):
        origin.add(path, html_page(f"Note {k}", article(500 + k, 200), ["/", notes[(k + 1) % NOTES]]))
    copied = stories[:COPIED]
    front = ["/contact", "/team", *copied] if nav == "index" else ["/contact", "/team", copied[0]]
    mirror.add("/", mirror_template("Front", ["Stories from elsewhere."], front))
    mirror.add("/contact", mirror_template("Contact", article(950, 120), ["/"]))
    mirror.add("/team", mirror_template("Our team", article(960, 120), ["/"]))
    for i, path in enumerate(copied):
        links = ["/", copied[(i + 1) % COPIED]]
        head = f"<link rel='canonical' href='{origin_url}{path}'>" if canonical else ""
        mirror.add(path, mirror_template(f"Story {i}", article(100 + i, 300), links, head))


@dataclass
class MirrorCrawl:
    """What one crawl of the two sites did."""

    origin_host: str
    mirror_host: str
    origin_fetched: set[str]  # paths of the origin's pages fetched
    mirror_fetched: set[str]
    skipped_urls: list[str]  # requests skipped as mirror requests (from the DEBUG log)
    claims: list[tuple[str, str]]  # "host X is a mirror of Y", in log order
    withdrawn: list[str]  # "host X is no longer taken for a mirror"
    result: CrawlResult

    @property
    def origin_skipped(self) -> int:
        """Requests to the origin skipped as mirror requests."""
        return sum(1 for url in self.skipped_urls if url.split("//", 1)[1].startswith(self.origin_host + "/"))

    @property
    def mirror_skipped(self) -> int:
        return len(self.skipped_urls) - self.origin_skipped

    @property
    def reversed_claims(self) -> int:
        """Log lines naming the origin a mirror."""
        return sum(1 for host, _ in self.claims if host == self.origin_host)

    def origin_items(self) -> set[str]:
        """Paths of the origin's pages that reached the spider (items)."""
        prefix = f"http://{self.origin_host}"
        return {
            item["url"][len(prefix) :] for item in self.result.items if item["url"].startswith(prefix + "/")
        }


def crawl_both(
    settings: dict[str, Any], *, canonical: bool = False, nav: str = "index", timeout: float = 120
) -> MirrorCrawl:
    """Serve the two sites (origin on 127.0.0.1, mirror on 127.0.0.2) and crawl them at once with
    :class:`e2e_spiders.SiteCrawlSpider` (add-on enabled, DEBUG log, ``settings`` on top)."""
    origin, mirror = Site(), Site()
    with serve({"127.0.0.1": origin, "127.0.0.2": mirror}) as urls:
        a, b = urls["127.0.0.1"], urls["127.0.0.2"]
        build(origin, mirror, a, canonical=canonical, nav=nav)
        result = run_crawl(
            "SiteCrawlSpider",
            {"LOG_LEVEL": "DEBUG", "NEARDUP_REPORT_FILE": "report.json", **settings},
            timeout=timeout,
            start=f"{a}/,{b}/",
        )
    log = result.log
    return MirrorCrawl(
        origin_host=a.split("//")[1],
        mirror_host=b.split("//")[1],
        origin_fetched=set(origin.hits) & set(origin_paths()),
        mirror_fetched=set(mirror.hits) & set(mirror_paths()),
        skipped_urls=re.findall(r"request to a mirror host skipped: (\S+)", log),
        claims=re.findall(r"host (\S+) is a mirror of (\S+)", log),
        withdrawn=re.findall(r"host (\S+) is no longer taken for a mirror", log),
        result=result,
    )
