"""Local HTTP servers for end-to-end crawl tests (loopback only: 127.0.0.1, 127.0.0.2, ...).

``serve({"127.0.0.1": site_a, "127.0.0.2": site_b})`` starts one threaded server per address on
a free port and yields ``{address: "http://address:port"}``. A :class:`Site` maps a path (with
its query string) to a :class:`Page`; ``Site.fallback`` can build pages on the fly. A
:class:`ProxySite` answers requests sent through it as an HTTP proxy (absolute urls in the
request line), so a crawl can fetch pages under their real urls (``http://www.example.com/x``)
from the local server: set ``request.meta["proxy"]`` to the server's url.
"""

from __future__ import annotations

import contextlib
import gzip
import socket
import threading
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


@dataclass
class Page:
    """One response: body, status, content type and extra headers."""

    body: bytes | str = b""
    content_type: str | None = "text/html; charset=utf-8"
    status: int = 200
    headers: dict[str, str] = field(default_factory=dict)
    gzip: bool = False

    def payload(self) -> bytes:
        data = self.body.encode("utf-8") if isinstance(self.body, str) else self.body
        return gzip.compress(data, mtime=0) if self.gzip else data


def html_page(
    title: str,
    paragraphs: list[str],
    links: list[str] = (),  # type: ignore[assignment]
    extra: str = "",
    head: str = "",
) -> str:
    """A small article page with a header, navigation and footer around the paragraphs."""
    nav = "".join(f'<li><a href="{href}">{href}</a></li>' for href in links)
    body = "".join(f"<p>{p}</p>" for p in paragraphs)
    return (
        f"<!DOCTYPE html><html><head><meta charset='utf-8'><title>{title}</title>{head}</head><body>"
        f"<header><a href='/'>Home</a></header><nav><ul>{nav}</ul></nav>"
        f"<main><article><h1>{title}</h1>{body}</article></main>{extra}"
        "<footer><p>Footer text of the test site.</p></footer></body></html>"
    )


class Site:
    """Pages of one host, by path (``/a/b?x=1``)."""

    def __init__(self, pages: Mapping[str, Page | str] | None = None) -> None:
        self.pages: dict[str, Page] = {}
        self.fallback: Callable[[str], Page | None] | None = None
        self.hits: list[str] = []
        self._lock = threading.Lock()
        for path, page in (pages or {}).items():
            self.add(path, page)

    def add(self, path: str, page: Page | str) -> None:
        self.pages[path] = page if isinstance(page, Page) else Page(page)

    def lookup(self, target: str) -> Page | None:
        with self._lock:
            self.hits.append(target)
        page = self.pages.get(target)
        if page is None and self.fallback is not None:
            page = self.fallback(target)
        return page


class ProxySite(Site):
    """Pages by absolute url, for crawls that use the server as their HTTP proxy."""


def _handler(site: Site) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, format: str, *args: Any) -> None:
            pass

        def _answer(self, send_body: bool) -> None:
            page = site.lookup(self.path)
            if page is None:
                page = Page("<html><body><p>not found</p></body></html>", status=404)
            data = page.payload()
            self.send_response(page.status)
            if page.content_type is not None:
                self.send_header("Content-Type", page.content_type)
            if page.gzip:
                self.send_header("Content-Encoding", "gzip")
            for name, value in page.headers.items():
                self.send_header(name, value)
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            if send_body:
                self.wfile.write(data)

        def do_GET(self) -> None:
            self._answer(True)

        def do_HEAD(self) -> None:
            self._answer(False)

    return Handler


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True
    request_queue_size = 128


def start_server(address: str, site: Site, port: int = 0) -> tuple[_Server, str]:
    """Start a server for ``site`` on ``address`` (port 0: a free one); returns it and its url."""
    server = _Server((address, port), _handler(site))
    thread = threading.Thread(target=server.serve_forever, name=f"http-{address}", daemon=True)
    thread.start()
    return server, f"http://{address}:{server.server_address[1]}"


@contextlib.contextmanager
def serve(sites: Mapping[str, Site]) -> Iterator[dict[str, str]]:
    """Serve each site on its loopback address; yields ``{address: base_url}``."""
    servers = []
    urls = {}
    try:
        for address, site in sites.items():
            server, url = start_server(address, site)
            servers.append(server)
            urls[address] = url
        yield urls
    finally:
        for server in servers:
            server.shutdown()
            server.server_close()


def loopback_available(address: str) -> bool:
    """True when ``address`` can be bound (127.0.0.2 is not configured on some systems)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        try:
            sock.bind((address, 0))
        except OSError:
            return False
    return True


_WORDS = [
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
    "museum",
    "gallery",
    "theatre",
    "choir",
    "football",
    "match",
    "league",
    "player",
    "coach",
    "supporter",
    "rain",
    "snow",
    "wind",
    "sun",
    "cloud",
    "coast",
    "cliff",
    "lighthouse",
    "fisherman",
    "boat",
    "net",
    "cargo",
    "crane",
    "warehouse",
    "office",
    "mayor",
    "election",
    "vote",
    "plan",
    "road",
    "tunnel",
    "repair",
    "closure",
    "detour",
    "bus",
    "cycle",
    "path",
    "park",
    "bench",
    "tree",
]


def article(seed: int, words: int = 150) -> list[str]:
    """Deterministic filler paragraphs; different seeds give unrelated texts (Jaccard ~0)."""
    import random

    rng = random.Random(seed)
    paragraphs = []
    for _ in range(max(1, words // 30)):
        paragraphs.append(" ".join(rng.choice(_WORDS) for _ in range(30)).capitalize() + ".")
    return paragraphs


def crawl_url(url: str) -> str:
    """The url a crawl through :class:`ProxySite` requests for a page's real ``url``.

    ``https://`` becomes ``http://`` (the local proxy speaks plain HTTP), the fragment goes (it is
    never sent) and the url is made safe the way ``scrapy.Request`` does it.
    """
    from w3lib.url import safe_url_string

    if url.startswith("https://"):
        url = "http://" + url[len("https://") :]
    return str(safe_url_string(url.split("#", 1)[0]))
