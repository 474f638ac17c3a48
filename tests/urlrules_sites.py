"""Generated sites with the url habits real sites have, for duplicate-url rule tests and benchmarks.

Each :class:`HabitSite` serves documents (``Doc``) under one or two host names and renders every
link afresh on every page view, by its *habits*:

=============  ================================================================================
habit          what the links look like
=============  ================================================================================
``session``    ``?sid=<random>`` on every link, new at every page view (an unbounded url space)
``jsession``   ``;jsessionid=<random>`` in every path, new at every view
``tracking``   share links ``?utm_source=<4 values>&utm_medium=share&fbclid=<random>``
``print``      a print view ``/print/<path>`` (another template, the same text)
``mobile``     ``/m/<path>`` links (another template, the same text)
``index``      ``/dir/``, ``/dir`` and ``/dir/index.html`` for one page
``case``       paths with capitals now and then (the server ignores case)
``alias``      two host names for one site, links to either
``sort``       ``?sort=<newest|oldest>`` on article links (changes nothing on an article)
=============  ================================================================================

Traps (documents a wrong rule would lose): ``pages`` (``/list?page=N``, one list per page),
``lang`` (``?lang=fr`` / ``?lang=de``: translations, distinct documents; ``lang=en`` is the page
without it), ``revision`` (``?rev=<12 hex digits>``, as random-looking as a session id: old
revisions, distinct documents), ``only-alias`` (documents linked only through the mobile prefix
or the second host name, whose plain address is a 404).

Every view carries a rotating block and a view counter outside the main text, so two views of
one document are near, not byte-identical. The server logs every request with the document it
served (``HabitSite.log``), from which a benchmark counts requests and documents reached.
"""

from __future__ import annotations

import random
import threading
from dataclasses import dataclass, field

from e2e_server import Page, Site

_WORDS = (
    "harbour",
    "ferry",
    "council",
    "market",
    "bridge",
    "river",
    "school",
    "library",
    "festival",
    "garden",
    "station",
    "winter",
    "summer",
    "teacher",
    "farmer",
    "baker",
    "painter",
    "museum",
    "concert",
    "weather",
    "storm",
    "island",
    "village",
    "street",
    "tower",
    "engine",
    "letter",
    "budget",
    "report",
    "season",
    "harvest",
    "orchard",
    "lantern",
    "meadow",
    "valley",
    "forest",
    "mountain",
    "canal",
    "quay",
    "train",
    "ticket",
    "gallery",
    "bakery",
    "cheese",
    "apple",
    "copper",
    "silver",
    "timber",
    "stone",
    "glass",
    "paper",
    "cotton",
    "wool",
    "marble",
    "saddle",
    "anchor",
    "compass",
    "signal",
    "beacon",
    "ladder",
    "pocket",
    "basket",
    "kettle",
    "candle",
    "mirror",
    "window",
    "carpet",
    "curtain",
    "blanket",
    "pillow",
    "ribbon",
    "button",
    "needle",
    "thread",
    "hammer",
    "chisel",
    "shovel",
    "bucket",
    "barrel",
    "wagon",
    "cart",
    "sledge",
    "rowing",
    "sailing",
    "climbing",
    "reading",
    "writing",
    "singing",
    "dancing",
    "cooking",
    "baking",
    "fishing",
    "hunting",
    "trading",
    "building",
    "mending",
    "painting",
)
_QUOTES = [f"Quote of the day number {i}: {' '.join(_WORDS[i : i + 6])}." for i in range(12)]
UTM_SOURCES = ("twitter", "facebook", "newsletter", "mastodon")


def _text(rng: random.Random, paragraphs: int = 4, words: int = 45) -> list[str]:
    return [" ".join(rng.choice(_WORDS) for _ in range(words)).capitalize() + "." for _ in range(paragraphs)]


@dataclass
class Doc:
    """One document: its id, title, paragraphs and the documents it links to."""

    ident: str
    path: str
    title: str
    paragraphs: list[str]
    links: list[str] = field(default_factory=list)
    extra_links: list[str] = field(default_factory=list)  # literal hrefs (traps)


class HabitSite(Site):
    """A site of ``n_docs`` articles with the given habits and traps (see the module docstring).

    Args:
        name: the site's name (documents are ``name:...``).
        habits: url habits of its links.
        traps: content-selecting urls it also has.
        n_docs: articles.
        seed: seeds the documents, their links, and (per view) the session ids.
    """

    def __init__(
        self, name: str, habits: frozenset[str], traps: frozenset[str], n_docs: int = 60, seed: int = 0
    ) -> None:
        super().__init__()
        self.name = name
        self.habits = habits
        self.traps = traps
        self.hosts: list[str] = []  # "127.0.0.2:port", filled by the caller
        self.log: list[tuple[str, str, str | None, int]] = []  # (host, target, doc, status)
        self._log_lock = threading.Lock()
        self._views = 0
        self._rng = random.Random(seed * 7919 + 17)
        rng = random.Random(seed)
        self.docs: dict[str, Doc] = {}
        sections = ("news", "guides", "notes")
        for i in range(n_docs):
            section = sections[i % len(sections)]
            path = f"/{section}/item-{i}"
            if "index" in habits:
                path += "/"
            doc = Doc(f"{name}:a{i}", path, f"{name.title()} article {i} {rng.choice(_WORDS)}", _text(rng))
            self.docs[doc.ident] = doc
        idents = list(self.docs)
        for doc in list(self.docs.values()):
            doc.links = rng.sample(idents, 5)
        self.home = Doc(f"{name}:home", "/", f"{name.title()} front page", _text(rng, 2))
        self.home.links = idents[:: max(1, len(idents) // 12)]
        if "pages" in traps:
            per = 10
            pages = (len(idents) + per - 1) // per
            self.lists = [
                Doc(
                    f"{name}:list{p}",
                    "/list",
                    f"{name.title()} list page {p}",
                    [f"Entries {p * per} to {p * per + per - 1} of the archive."],
                    idents[p * per : p * per + per],
                    [f"/list?page={p + 2}"] if p + 1 < pages else [],
                )
                for p in range(pages)
            ]
            self.home.extra_links.append("/list?page=1")
        self.translations: dict[tuple[str, str], Doc] = {}
        if "lang" in traps:
            for ident in idents[::4]:
                for lang in ("fr", "de"):
                    src = self.docs[ident]
                    self.translations[(src.path, lang)] = Doc(
                        f"{ident}:{lang}", src.path, f"{src.title} ({lang})", _text(rng)
                    )
        self.revisions: dict[str, Doc] = {}
        if "revision" in traps:
            for ident in idents[1::5]:
                src = self.docs[ident]
                for k in range(2):
                    rev = f"{rng.getrandbits(48):012x}"
                    self.revisions[rev] = Doc(
                        f"{ident}:rev{k}", src.path, f"{src.title} revision {k}", _text(rng)
                    )
                    src.extra_links.append(f"{src.path}?rev={rev}")
        self.only: dict[str, Doc] = {}
        if "only-alias" in traps:
            for k in range(4):
                doc = Doc(
                    f"{name}:only{k}", f"/hidden/only-{k}", f"{name.title()} hidden page {k}", _text(rng)
                )
                self.only[doc.path] = doc
                self.docs[idents[k * 3]].extra_links.append(doc.path)

    # -- what a crawl can reach ----------------------------------------------------------------------
    def documents(self) -> set[str]:
        """Every document the site serves and links to."""
        out = {d.ident for d in self.docs.values()} | {self.home.ident}
        out |= {d.ident for d in getattr(self, "lists", [])}
        out |= {d.ident for d in self.translations.values()} | {d.ident for d in self.revisions.values()}
        out |= {d.ident for d in self.only.values()}
        return out

    # -- serving --------------------------------------------------------------------------------------
    def serve(self, host: str, target: str) -> Page:
        """Answer a request for ``target`` (path and query) on ``host``; logged."""
        doc, template = self._resolve(host, target)
        with self._log_lock:
            self._views += 1
            views = self._views
            self.log.append((host, target, doc.ident if doc else None, 200 if doc else 404))
        if doc is None:
            return Page("<html><body><p>Not found</p></body></html>", status=404)
        return Page(self._render(host, doc, template, views))

    def _resolve(self, host: str, target: str) -> tuple[Doc | None, str]:
        path, _, query = target.partition("?")
        params = dict(p.partition("=")[::2] for p in query.split("&") if p)
        if ";" in path:
            path = "/".join(seg.split(";")[0] for seg in path.split("/"))
        template = "page"
        if path.lower().startswith("/print/") and "print" in self.habits:
            path, template = path[6:], "print"
        if path.lower().startswith("/m/") and ("mobile" in self.habits or self.only):
            path, template = path[2:], "mobile"
        if "case" in self.habits:
            path = path.lower()
        if path.endswith("/index.html") and "index" in self.habits:
            path = path[: -len("index.html")]
        plain = path != "/" and not path.endswith("/") and not path.startswith(("/list", "/hidden"))
        if "index" in self.habits and plain:
            path += "/"
        if path in self.only:
            second = len(self.hosts) > 1 and host == self.hosts[1]
            if template == "mobile" or second:
                return self.only[path], template
            return None, template
        if path == "/list" and hasattr(self, "lists"):
            try:
                page = int(params.get("page", "1"))
            except ValueError:
                return None, template
            return (self.lists[page - 1] if 1 <= page <= len(self.lists) else None), template
        if path == "/":
            return self.home, template
        for doc in self.docs.values():
            if doc.path == path:
                break
        else:
            return None, template
        if "rev" in params:
            return self.revisions.get(params["rev"]), template
        lang = params.get("lang", "en")
        if lang != "en":
            return self.translations.get((path, lang)), template
        return doc, template

    def _href(self, host: str, path: str, rng: random.Random, share: bool = False) -> str:
        habits = self.habits
        if "case" in habits and rng.random() < 0.3:
            path = "/".join(seg.capitalize() for seg in path.split("/"))
        if "index" in habits and path.endswith("/") and path != "/":
            choice = rng.random()
            if choice < 0.3:
                path += "index.html"
            elif choice < 0.5:
                path = path.rstrip("/")
        if "mobile" in habits and rng.random() < 0.25 and not path.startswith("/m/"):
            path = "/m" + path
        query: list[str] = []
        if "?" in path:
            path, _, q = path.partition("?")
            query.append(q)
        if "jsession" in habits:
            path += f";jsessionid={rng.getrandbits(64):016X}"
        if "session" in habits:
            query.append(f"sid={rng.getrandbits(64):016x}")
        if "sort" in habits and rng.random() < 0.3 and path.count("/") >= 2:
            query.append(f"sort={rng.choice(('newest', 'oldest'))}")
        if share:
            query.append(
                f"utm_source={rng.choice(UTM_SOURCES)}&utm_medium=share&fbclid={rng.getrandbits(48):x}"
            )
        target_host = host
        if "alias" in habits and len(self.hosts) > 1 and rng.random() < 0.4:
            target_host = self.hosts[1] if host == self.hosts[0] else self.hosts[0]
        return f"http://{target_host}{path}" + ("?" + "&".join(query) if query else "")

    def _render(self, host: str, doc: Doc, template: str, views: int) -> str:
        with self._log_lock:
            rng = random.Random(self._rng.getrandbits(64))
        links = []
        for ident in doc.links:
            target = self.docs[ident]
            links.append(f'<li><a href="{self._href(host, target.path, rng)}">{target.title}</a></li>')
        for extra in doc.extra_links:
            href = extra
            if extra.startswith("/hidden/"):
                if "mobile" in self.habits or "alias" not in self.habits:
                    href = "/m" + extra
                else:
                    href = f"http://{self.hosts[1]}{extra}"
                    links.append(f'<li><a href="{href}">more</a></li>')
                    continue
            links.append(f'<li><a href="{self._href(host, href, rng)}">more</a></li>')
        if doc is not self.home:
            links.append(f'<li><a href="{self._href(host, "/", rng)}">Home</a></li>')
        if "tracking" in self.habits:
            links.append(f'<li><a href="{self._href(host, doc.path, rng, share=True)}">Share</a></li>')
        if "print" in self.habits and doc.path.startswith(("/news", "/guides", "/notes")):
            links.append(f'<li><a href="{self._href(host, "/print" + doc.path, rng)}">Print</a></li>')
        if "lang" in self.traps and (doc.path, "fr") in self.translations and doc.ident.count(":") == 1:
            for lang in ("en", "fr", "de"):
                links.append(
                    f'<li><a href="{self._href(host, doc.path + "?lang=" + lang, rng)}">{lang}</a></li>'
                )
        body = "".join(f"<p>{p}</p>" for p in doc.paragraphs)
        quote = _QUOTES[views % len(_QUOTES)]
        if template == "print":
            return (
                f"<html><head><title>{doc.title}</title></head><body><h1>{doc.title}</h1>{body}"
                f"<p class='small'>Printed from {self.name}</p></body></html>"
            )
        nav_class = "mnav" if template == "mobile" else "nav"
        return (
            f"<!DOCTYPE html><html><head><meta charset='utf-8'><title>{doc.title}</title></head><body>"
            f"<header><a href='/'>{self.name}</a></header>"
            f"<nav class='{nav_class}'><ul>{''.join(links)}</ul></nav>"
            f"<main><article><h1>{doc.title}</h1>{body}</article></main>"
            f"<aside><p>{quote}</p></aside>"
            f"<footer><p>This page was viewed {views} times.</p></footer></body></html>"
        )

    def lookup(self, target: str) -> Page | None:  # e2e_server's proxy-less entry point
        raise NotImplementedError("HabitSite is served through serve(host, target)")


def handler_for(site: HabitSite, host_of_address: dict[str, str]) -> type:
    """A request handler that answers from ``site`` by the ``Host`` header."""
    from http.server import BaseHTTPRequestHandler

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, format: str, *args: object) -> None:
            pass

        def do_GET(self) -> None:
            host = self.headers.get("Host") or host_of_address.get(self.server.server_address[0], "")
            page = site.serve(host, self.path)
            data = page.payload()
            self.send_response(page.status)
            self.send_header("Content-Type", page.content_type or "text/html")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

    return Handler
