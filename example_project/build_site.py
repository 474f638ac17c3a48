# ruff: noqa: E501
# (HTML templates and prose are kept on their natural lines.)
"""Generate the demo site served by the example crawl (``example_project/demo_site/``).

Run ``python example_project/build_site.py`` to rebuild it; the output is committed, so the
example runs without this step. Everything here -- the town, the papers, the stories -- is
made up for the demo.

Two sites come out of it:

* ``demo_site/gazette/``: *The Port Wenlow Gazette*, a local paper in a heavy template (long
  navigation, a "most read" sidebar with teasers, a newsletter box, a long footer): distinct
  stories, print versions (``/print/...``), links carrying session ids (``?sid=...``), an
  updated story that differs by a paragraph, an RSS feed, a logo and a PDF. The example serves
  this directory twice, on two hosts: the second one is an exact mirror.
* ``demo_site/digest/``: *Harbour Light Digest*, an aggregator that republishes some Gazette
  stories in its own, different template -- a mirror that no byte comparison would catch.

``{{MIRROR_URL}}`` and ``{{DIGEST_URL}}`` in the pages are replaced by the servers' urls when
the pages are served (the ports are chosen at run time).
"""

from __future__ import annotations

import html
import struct
import zlib
from pathlib import Path

OUT = Path(__file__).resolve().parent / "demo_site"

STORIES = [
    {
        "slug": "winter-ferry-timetable",
        "section": "Transport",
        "title": "Winter ferry timetable cuts the late crossing to Skerrow",
        "byline": "Alys Penhallow",
        "date": "2024-10-14",
        "paragraphs": [
            "The last evening sailing to Skerrow Island will not run between November and March, the "
            "ferry operator confirmed on Monday, leaving islanders who work late shifts in Port Wenlow "
            "with a choice between the half past five boat and a night in town.",
            "Managers at Wenlow Sound Ferries said the 21:40 crossing carried an average of eleven "
            "passengers last winter, against more than two hundred on the morning runs. Fuel and crew "
            "costs, they argued, could no longer be justified for so few tickets.",
            "The island's community council disagrees. Its chair, Morwenna Treloar, said the figures "
            "hide the people who have already given up on evening work because the timetable was "
            "unreliable. A nurse at the cottage hospital told the council she now sleeps on a friend's "
            "sofa twice a week.",
            "The operator has offered a bookable water taxi on Thursdays and Fridays, at the ordinary "
            "fare, if at least four passengers reserve a seat by noon. Islanders say that is better "
            "than nothing but far from a service.",
            "The summer timetable, with the late crossing restored, is due to start on the first "
            "Saturday in April.",
        ],
    },
    {
        "slug": "library-reopens",
        "section": "Community",
        "title": "Quay Street library reopens after eighteen months under scaffolding",
        "byline": "Tom Hendra",
        "date": "2024-10-12",
        "paragraphs": [
            "Children queued along Quay Street on Saturday morning as the town library opened its doors "
            "for the first time since a winter storm tore a hole in its slate roof the year before last.",
            "The repairs took far longer than planned. Once the scaffolding went up, surveyors found rot "
            "in two of the oak beams that carry the reading room ceiling, and a specialist carpenter had "
            "to be brought from the mainland to splice in new timber without removing the plasterwork.",
            "Inside, little looks different, which is what most regulars wanted. The long tables are "
            "back under the tall windows, the local history room has its maps again, and the old card "
            "catalogue, long unused, now holds a seed library run by the allotment society.",
            "The one real change is at the back, where a former store room has become a quiet room for "
            "people working from home. It has six desks, fast internet and, the librarian pointed out, "
            "a very strict rule about telephone calls.",
            "Opening hours are now ten until six on weekdays and ten until one on Saturdays.",
        ],
    },
    {
        "slug": "mackerel-season",
        "section": "Business",
        "title": "Fishing co-operative reports its best mackerel season in a decade",
        "byline": "Jenna Rowse",
        "date": "2024-10-10",
        "paragraphs": [
            "Boats of the Wenlow Fishermen's Co-operative landed more mackerel between June and "
            "September than in any season since 2014, according to figures presented at the "
            "co-operative's autumn meeting in the fish market loft.",
            "Skippers put the catch down to cooler water in early summer, which kept the shoals close "
            "to the headland for weeks, and to the new ice plant on the north quay, which means a boat "
            "no longer has to turn back early to keep its fish fresh.",
            "Prices were less cheerful. A glut along the whole coast pushed the auction price down by "
            "almost a fifth in August, and several members said their earnings barely moved despite "
            "the heavier boxes.",
            "The co-operative now wants to sell more of its fish directly. Its secretary said talks "
            "were under way with two restaurants in the county town and with the school catering "
            "service, which currently buys frozen fillets from a wholesaler two hundred miles away.",
            "Members also voted to fund a second-hand smoker, so that part of a heavy week's catch can "
            "be kept and sold through the winter.",
        ],
    },
    {
        "slug": "canal-cycle-path",
        "section": "Council",
        "title": "Council approves cycle path along the old canal towpath",
        "byline": "Alys Penhallow",
        "date": "2024-10-09",
        "paragraphs": [
            "A three-mile cycle and walking path between Port Wenlow and the village of Trevanion will "
            "be built along the towpath of the disused canal, after the district council approved the "
            "plan by nine votes to four on Wednesday evening.",
            "The towpath is already popular with dog walkers, but much of it turns to mud after rain and "
            "two sections have slipped into the water. The plan provides a compacted gravel surface, "
            "three new footbridges and solar-powered lights at the two road crossings.",
            "Opponents on the council did not object to the path itself. Their concern was the cost of "
            "maintaining it once the grant money runs out, and a promise, made in the bid, that the "
            "district would keep the surface in repair for twenty years.",
            "Residents of the canal cottages asked for a speed limit for bicycles and for the lights to "
            "be switched off at midnight. Both requests were accepted as conditions.",
            "Work is expected to begin in the spring and to take about eight months, with the stretch "
            "closest to town finished first.",
        ],
    },
    {
        "slug": "lighthouse-lens",
        "section": "Heritage",
        "title": "Volunteers bring the old Gull Point lens back to life",
        "byline": "Tom Hendra",
        "date": "2024-10-08",
        "paragraphs": [
            "For the first time in forty years, the great glass lens of the Gull Point lighthouse turned "
            "on Sunday night, throwing its beam across the bay while a crowd watched from the car park "
            "below.",
            "The lighthouse was automated in 1983, when a small electric lamp on the gallery replaced "
            "the lens and its clockwork. The lens stayed in the lantern room, covered in dust and "
            "pigeon feathers, until a group of volunteers began restoring it three winters ago.",
            "Each of its hundreds of glass prisms was removed, numbered, washed and put back. The "
            "clockwork, which has to be wound by hand every few hours, needed new bearings that a "
            "retired engineer from the boatyard turned on his own lathe.",
            "The working light at sea remains the modern lamp, and the old lens will only be lit on a "
            "few evenings each summer, with permission from the lighthouse authority so that no ship "
            "mistakes it for a signal.",
            "The volunteers will run guided visits to the lantern room on Saturdays until the end of "
            "the month.",
        ],
    },
    {
        "slug": "school-choir",
        "section": "Community",
        "title": "St Piran's school choir wins the regional festival",
        "byline": "Jenna Rowse",
        "date": "2024-10-05",
        "paragraphs": [
            "Forty-two pupils from St Piran's Primary School came home from the regional music festival "
            "with the trophy for junior choirs, beating eleven other schools, several of them far "
            "larger.",
            "The choir sang a setting of an old fishing song, arranged by their teacher, Mr Kitto, and "
            "a round in three languages that the children learned from families who have moved to the "
            "town in recent years.",
            "The adjudicator praised the choir's diction and singled out the soloist, a ten-year-old "
            "who, her mother said, practised the opening verse in the bath every evening for a month.",
            "The school now hopes to take the choir to the national final in the spring, which will "
            "mean a long coach journey and two nights away. A sponsored swim is planned to raise the "
            "fare.",
            "The trophy, a silver cup first awarded in 1952, will stand in the school hall until next "
            "year's festival.",
        ],
    },
    {
        "slug": "sea-wall-storm",
        "section": "News",
        "title": "Storm leaves a breach in the harbour sea wall",
        "byline": "Alys Penhallow",
        "date": "2024-10-03",
        "paragraphs": [
            "High tides and a south-westerly gale opened a gap of several metres in the harbour sea wall "
            "on Wednesday night, flooding the car park behind the fish market and washing stones across "
            "the slipway.",
            "Nobody was hurt. Harbour staff moved the boats on the inner moorings before the peak of the "
            "tide, and the lifeboat crew spent the night checking that nothing had broken loose.",
            "Engineers who inspected the wall on Thursday said the breach is in a section rebuilt after "
            "a similar storm in the 1960s, where the mortar behind the facing stones has been washed out "
            "over the years.",
            "Until the wall is repaired, the car park will stay closed and the slipway may only be used "
            "at low water. The harbour office asked boat owners to check their mooring lines before "
            "every high tide.",
            "The harbour commissioners will meet next week to decide how to pay for the work, which "
            "they expect to cost more than their annual maintenance budget.",
        ],
    },
    {
        "slug": "market-station-yard",
        "section": "Business",
        "title": "Saturday market moves to the old station yard",
        "byline": "Tom Hendra",
        "date": "2024-10-01",
        "paragraphs": [
            "The Saturday market will leave the square outside the town hall next month and set up in "
            "the old railway station yard, where traders will have twice the space and, for the first "
            "time, a roof.",
            "The move follows years of complaints from stallholders about wind, from shopkeepers about "
            "blocked doorways and from drivers about the Saturday road closure. The station yard, "
            "empty since the branch line closed, was bought by the town council last year.",
            "The old goods shed has been cleaned out and will hold twenty stalls under cover, with room "
            "for another fifteen outside. The former booking office is to become a small cafe run by "
            "the community trust.",
            "Not everyone is pleased. Two cafe owners on the square fear that they will lose the "
            "Saturday trade that keeps them open in winter, and the council has promised to review the "
            "move after six months.",
            "The first market in the new yard is planned for the second Saturday of November.",
        ],
    },
]

#: The updated sea-wall story: the same article with a sentence added (a near-duplicate).
UPDATE = {
    "slug": "sea-wall-storm-update",
    "of": "sea-wall-storm",
    "headline": "Sea wall: commissioners agree repair funding",
    "last": "Update: the harbour commissioners have agreed to borrow against the harbour dues to pay "
    "for the repair, and contractors are expected on site within three weeks.",
}

#: Stories the Harbour Light Digest republishes.
DIGEST_STORIES = [
    "winter-ferry-timetable",
    "library-reopens",
    "lighthouse-lens",
    "school-choir",
    "canal-cycle-path",
]

SECTIONS = [
    "News",
    "Council",
    "Transport",
    "Business",
    "Community",
    "Heritage",
    "Sport",
    "Weather",
    "Tides",
    "What's on",
    "Letters",
    "Obituaries",
    "Property",
    "Jobs",
    "Notices",
    "Puzzles",
    "Podcasts",
    "Photo galleries",
    "Archive",
    "Contact us",
]

MOST_READ = [
    (
        "Harbour master retires after thirty-one years",
        "Captain Bray hands over the keys of the harbour office and plans to spend his first free summer sailing the boat he has been restoring.",
    ),
    (
        "Planning inquiry into the headland hotel adjourned",
        "The inspector asked both sides for more evidence on traffic along the coast road before the hearing resumes in January.",
    ),
    (
        "Lifeboat crew called out twice in one night",
        "A yacht with a fouled propeller and a kayaker blown offshore kept the volunteers busy until dawn.",
    ),
    (
        "New owners for the Anchor Inn",
        "The pub on the quay, closed since the spring, will reopen before Christmas with the same name and a new kitchen.",
    ),
    (
        "Rugby club appeals for volunteer coaches",
        "The junior section has grown to ninety players and needs at least four more adults with safeguarding training.",
    ),
    (
        "Bus company trials a Sunday service",
        "A six-week trial will run buses between Port Wenlow and the county town on Sundays for the first time in years.",
    ),
]

FOOTER = (
    "The Port Wenlow Gazette is published by Wenlow Community Media Ltd, registered in England, "
    "company number 00000000, registered office The Old Net Loft, North Quay, Port Wenlow. We follow "
    "the Editors' Code of Practice. If you think we have got something wrong, write to the editor at "
    "the address above and we will look into it. Photographs are the Gazette's own unless stated "
    "otherwise and may not be reproduced without permission. Advertising enquiries are welcome from "
    "local businesses; our rates are available on request. The Gazette is printed on recycled paper "
    "and delivered by volunteers to every house in the parish on Thursday mornings."
)


def esc(text: str) -> str:
    return html.escape(text, quote=True)


def gazette_page(title: str, main: str, sid: str = "", related: str = "") -> str:
    """A Gazette page: heavy header, navigation, sidebar and footer around ``main``.

    ``related`` is HTML put at the top of the sidebar (chrome, so not part of the story's text).
    """
    nav = "\n".join(
        f'      <li><a href="/section/{esc(s.lower().replace(" ", "-").replace(chr(39), ""))}.html">{esc(s)}</a></li>'
        for s in SECTIONS
    )
    query = f"?sid={sid}" if sid else ""
    most_read = "\n".join(
        f'      <li><a href="/news/{STORIES[i % len(STORIES)]["slug"]}.html{query}">{esc(h)}</a><p>{esc(t)}</p></li>'
        for i, (h, t) in enumerate(MOST_READ)
    )
    return f"""<!DOCTYPE html>
<html lang="en-GB">
<head>
  <meta charset="utf-8">
  <title>{esc(title)} | The Port Wenlow Gazette</title>
  <meta name="viewport" content="width=device-width, initial-scale=1">
  <link rel="alternate" type="application/rss+xml" href="/feed.xml">
  <style>body{{font-family:Georgia,serif;margin:0}}header,footer{{background:#123;color:#eee;padding:1em}}
  .layout{{display:flex;gap:2em;padding:1em}}main{{flex:3}}aside{{flex:1;font-size:.9em}}</style>
</head>
<body>
  <header>
    <a class="logo" href="/"><img src="/images/logo.png" alt="The Port Wenlow Gazette"></a>
    <p class="tagline">News from the harbour, the island and the valley since 1887</p>
    <p class="ticker">Tides today: high water 06:12 and 18:40. Ferry: normal service.</p>
  </header>
  <nav>
    <ul>
{nav}
    </ul>
  </nav>
  <div class="layout">
    <main>
{main}
    </main>
    <aside>
{related}      <h2>Most read</h2>
      <ol>
{most_read}
      </ol>
      <div class="newsletter">
        <h2>The Gazette by email</h2>
        <p>Get the week's stories, the tide tables and the events listings every Thursday morning.
        We never share your address and you can unsubscribe at any time.</p>
        <form action="/subscribe" method="post"><input name="email"><button>Subscribe</button></form>
      </div>
      <p><a href="/files/annual-report.pdf">Read our annual report (PDF)</a></p>
    </aside>
  </div>
  <footer>
    <p>{esc(FOOTER)}</p>
    <p><a href="/about.html">About the Gazette</a> | <a href="/feed.xml">RSS</a> | <a href="/images/logo.png">Our logo</a> | <a href="/">Home</a></p>
  </footer>
</body>
</html>
"""


def article_html(story: dict[str, object], paragraphs: list[str]) -> str:
    body = "\n".join(f"        <p>{esc(p)}</p>" for p in paragraphs)
    slug = story["slug"]
    return f"""      <article>
        <p class="section">{esc(str(story["section"]))}</p>
        <h1>{esc(str(story["title"]))}</h1>
        <p class="byline">By {esc(str(story["byline"]))} | <time datetime="{story["date"]}">{story["date"]}</time></p>
{body}
        <p class="tools"><a href="/print/{slug}.html">Print this story</a></p>
      </article>"""


def print_page(story: dict[str, object]) -> str:
    body = "\n".join(f"<p>{esc(p)}</p>" for p in story["paragraphs"])  # type: ignore[union-attr]
    return f"""<!DOCTYPE html>
<html><head><meta charset="utf-8"><title>{esc(str(story["title"]))} (print)</title>
<style>body{{font-family:serif;max-width:40em;margin:2em auto}}</style></head>
<body>
<h1>{esc(str(story["title"]))}</h1>
<p>By {esc(str(story["byline"]))}, {story["date"]}</p>
{body}
<p><small>Printed from The Port Wenlow Gazette.</small></p>
</body></html>
"""


def digest_page(title: str, main: str) -> str:
    """A page of the Harbour Light Digest: a light, quite different template."""
    return f"""<!doctype html>
<html lang="en">
<head><meta charset="utf-8"><title>{esc(title)} - Harbour Light Digest</title>
<style>body{{background:#fdfaf3;font:16px/1.5 sans-serif}}.wrap{{max-width:44em;margin:auto}}</style></head>
<body>
<div class="wrap">
  <div class="masthead"><a href="/">Harbour Light Digest</a> &middot; the best of the coast's local press</div>
  <div class="story">
{main}
  </div>
  <div class="colophon">Harbour Light Digest collects stories from community papers along the coast.
  <a href="/about.html">About</a></div>
</div>
</body></html>
"""


def png_logo() -> bytes:
    """A small valid PNG (a navy rectangle), built with zlib alone."""
    width, height = 48, 16
    raw = b"".join(b"\x00" + b"\x12\x22\x33" * width for _ in range(height))

    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack("!I", len(data)) + kind + data + struct.pack("!I", zlib.crc32(kind + data))

    header = struct.pack("!IIBBBBB", width, height, 8, 2, 0, 0, 0)
    return (
        b"\x89PNG\r\n\x1a\n"
        + chunk(b"IHDR", header)
        + chunk(b"IDAT", zlib.compress(raw))
        + chunk(b"IEND", b"")
    )


def build() -> list[Path]:
    written: list[Path] = []

    def write(path: str, content: str | bytes) -> None:
        target = OUT / path
        target.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, str):
            target.write_text(content, encoding="utf-8")
        else:
            target.write_bytes(content)
        written.append(target)

    by_slug = {str(s["slug"]): s for s in STORIES}

    # -- the Gazette -------------------------------------------------------------------------------
    listing = "\n".join(
        f'        <li><a href="/news/{s["slug"]}.html">{esc(str(s["title"]))}</a> '
        f'<span class="date">{s["date"]}</span></li>'
        for s in STORIES
    )
    front = f"""      <h1>Latest stories</h1>
      <ul class="latest">
{listing}
      </ul>"""
    write("gazette/index.html", gazette_page("Home", front))
    for number, story in enumerate(STORIES):
        paragraphs = list(story["paragraphs"])  # type: ignore[call-overload]
        # Every story page's sidebar carries a session id: /news/x.html?sid=... is the same page.
        sid = f"{(number * 7919 + 104729) % 65536:04x}a1" if number % 3 == 0 else ""
        # The update is linked from the story it updates only, so a crawl always meets the
        # original first and tags the update as its near duplicate.
        related = (
            f'      <p class="update">Update: <a href="/news/{UPDATE["slug"]}.html">{esc(UPDATE["headline"])}</a></p>\n'
            if story["slug"] == UPDATE["of"]
            else ""
        )
        write(
            f"gazette/news/{story['slug']}.html",
            gazette_page(str(story["title"]), article_html(story, paragraphs), sid, related),
        )
        write(f"gazette/print/{story['slug']}.html", print_page(story))
    for section in SECTIONS:
        slug = section.lower().replace(" ", "-").replace("'", "")
        stories = [st for st in STORIES if st["section"] == section]
        if stories:
            entries = "\n".join(
                f'        <li><a href="/news/{st["slug"]}.html">{esc(str(st["title"]))}</a></li>'
                for st in stories
            )
            main = f"      <h1>{esc(section)}</h1>\n      <ul>\n{entries}\n      </ul>"
        else:  # an empty section: the same short text on every such page (soft duplicates)
            main = f"      <h1>{esc(section)}</h1>\n      <p>There are no stories in this section yet. Please check back soon.</p>"
        write(f"gazette/section/{slug}.html", gazette_page(section, main))
    original = by_slug[UPDATE["of"]]
    updated = dict(original, slug=UPDATE["slug"])
    *head, last = list(original["paragraphs"])  # type: ignore[call-overload]
    paragraphs = [*head, f"{last} {UPDATE['last']}"]
    write(
        f"gazette/news/{UPDATE['slug']}.html",
        gazette_page(str(original["title"]), article_html(updated, paragraphs)),
    )
    write(f"gazette/print/{UPDATE['slug']}.html", print_page(dict(updated, paragraphs=paragraphs)))
    about = """      <article>
        <h1>About the Gazette</h1>
        <p>The Port Wenlow Gazette has reported on the harbour, the island and the valley since 1887.
        It is owned by a community benefit society and written by a staff of four with the help of
        correspondents in every village of the parish.</p>
        <p>Our stories are also available from our mirror at <a href="{{MIRROR_URL}}">{{MIRROR_URL}}</a>,
        and a selection is republished by our partners at the
        <a href="{{DIGEST_URL}}">Harbour Light Digest</a>.</p>
      </article>"""
    write("gazette/about.html", gazette_page("About the Gazette", about))
    items = "\n".join(
        f"<item><title>{esc(str(s['title']))}</title><link>/news/{s['slug']}.html</link></item>"
        for s in STORIES
    )
    write(
        "gazette/feed.xml",
        f'<?xml version="1.0"?>\n<rss version="2.0"><channel><title>The Port Wenlow Gazette</title>\n{items}\n</channel></rss>\n',
    )
    write("gazette/images/logo.png", png_logo())
    write(
        "gazette/files/annual-report.pdf",
        b"%PDF-1.4\n% Port Wenlow Gazette annual report (placeholder for the demo)\n%%EOF\n",
    )

    # -- the Digest --------------------------------------------------------------------------------
    entries = "\n".join(
        f'    <p><a href="/stories/{slug}.html">{esc(str(by_slug[slug]["title"]))}</a></p>'
        for slug in DIGEST_STORIES
    )
    write("digest/index.html", digest_page("Front page", f"    <h1>This week on the coast</h1>\n{entries}"))
    for slug in DIGEST_STORIES:
        story = by_slug[slug]
        body = "\n".join(f"    <p>{esc(p)}</p>" for p in story["paragraphs"])  # type: ignore[union-attr]
        main = (
            f"    <h1>{esc(str(story['title']))}</h1>\n"
            f'    <div class="credit">{esc(str(story["byline"]))} &middot; {story["date"]}</div>\n'
            f'{body}\n    <p class="via">Via The Port Wenlow Gazette.</p>'
        )
        write(f"digest/stories/{slug}.html", digest_page(str(story["title"]), main))
    write(
        "digest/about.html",
        digest_page(
            "About",
            "    <h1>About the Digest</h1>\n    <p>Harbour Light Digest is a hobby project that gathers "
            "stories from the small papers of the coast, with their permission, so that readers can "
            "follow several towns in one place. Corrections go to the original paper.</p>",
        ),
    )
    return written


if __name__ == "__main__":
    files = build()
    print(f"wrote {len(files)} files under {OUT}")
