"""Serve the demo site on loopback addresses, each host on a free port.

* ``gazette``: ``demo_site/gazette`` on 127.0.0.1 -- the original paper;
* ``mirror``: the same directory on 127.0.0.2 -- an exact mirror (same bytes);
* ``digest``: ``demo_site/digest`` on 127.0.0.2 (another port) -- republished stories in
  another template.

Query strings are ignored (``/news/x.html?sid=...`` is ``/news/x.html``), like the session ids
of many real sites. ``{{MIRROR_URL}}`` and ``{{DIGEST_URL}}`` in HTML files are replaced by the
servers' urls. When 127.0.0.2 cannot be bound (macOS has only 127.0.0.1 by default), every host
is served on 127.0.0.1 with its own port, which neardup also treats as separate hosts.
"""

from __future__ import annotations

import mimetypes
import socket
import threading
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlsplit

SITE_DIR = Path(__file__).resolve().parent.parent / "demo_site"


def _address(preferred: str) -> str:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        try:
            sock.bind((preferred, 0))
        except OSError:
            return "127.0.0.1"
    return preferred


@dataclass
class DemoServers:
    """The running servers; :meth:`stop` shuts them down."""

    urls: dict[str, str] = field(default_factory=dict)
    servers: list[ThreadingHTTPServer] = field(default_factory=list)

    @property
    def start_urls(self) -> list[str]:
        """The crawl starts at the Gazette's front page; the rest is found by links."""
        return [self.urls["gazette"] + "/"]

    def stop(self) -> None:
        for server in self.servers:
            server.shutdown()
            server.server_close()


def _handler(root: Path, replacements: dict[str, str]) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        server_version = "DemoSite/1.0"

        def log_message(self, format: str, *args: Any) -> None:
            pass

        def do_GET(self) -> None:
            path = unquote(urlsplit(self.path).path)
            if path.endswith("/"):
                path += "index.html"
            target = (root / path.lstrip("/")).resolve()
            if root not in target.parents or not target.is_file():
                self._send(404, b"<html><body><h1>Not found</h1></body></html>", "text/html; charset=utf-8")
                return
            data = target.read_bytes()
            kind = mimetypes.guess_type(target.name)[0] or "application/octet-stream"
            if kind == "text/html":
                text = data.decode("utf-8")
                for key, value in replacements.items():
                    text = text.replace(key, value)
                data = text.encode("utf-8")
                kind = "text/html; charset=utf-8"
            elif kind.startswith(("text/", "application/rss", "application/xml")):
                kind += "; charset=utf-8"
            self._send(200, data, kind)

        def _send(self, status: int, data: bytes, kind: str) -> None:
            self.send_response(status)
            self.send_header("Content-Type", kind)
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

    return Handler


def start_demo_servers(site_dir: Path = SITE_DIR) -> DemoServers:
    """Start the three demo hosts in daemon threads; returns their urls."""
    if not (site_dir / "gazette" / "index.html").is_file():
        raise FileNotFoundError(f"demo site not found in {site_dir}; run example_project/build_site.py")
    second = _address("127.0.0.2")
    replacements: dict[str, str] = {}  # filled once every server has its port
    running = DemoServers()
    for name, address in (("gazette", "127.0.0.1"), ("mirror", second), ("digest", second)):
        root = (site_dir / ("digest" if name == "digest" else "gazette")).resolve()
        server = ThreadingHTTPServer((address, 0), _handler(root, replacements))
        server.daemon_threads = True
        running.servers.append(server)
        running.urls[name] = f"http://{address}:{server.server_address[1]}"
    replacements["{{MIRROR_URL}}"] = running.urls["mirror"] + "/"
    replacements["{{DIGEST_URL}}"] = running.urls["digest"] + "/"
    for server in running.servers:
        threading.Thread(target=server.serve_forever, daemon=True).start()
    return running
