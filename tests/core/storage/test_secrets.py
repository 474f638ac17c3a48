"""No secret in any log line, message, report, export or ``scan -v`` line.

Two families of url carry secrets. Connection urls: redis-py's ``from_url`` takes
``redis://``, ``rediss://`` and ``unix://`` urls with a user info (``[[user]:password]@``) and
hands *every* query argument to the connection, so ``?password=``, ``?username=`` and
``?ssl_password=`` (the TLS key's passphrase) work too; the password may be percent-encoded or
hold ``@``, ``/`` or ``?``. Crawled page urls: ``https://user:password@host/`` in every spelling.
"""

from __future__ import annotations

import json
import logging
import traceback
from pathlib import Path
from typing import Any

import pytest
from e2e_crawl import run_crawl
from e2e_server import serve

from neardup_scrapy.core.storage.base import StorageError
from neardup_scrapy.core.storage.redis_cluster import RedisClusterStorage
from neardup_scrapy.core.storage.redis_store import RedisStorage, safe_url
from neardup_scrapy.core.storage.retry import RetryPolicy
from neardup_scrapy.core.urls import redact_connection_url, redact_url, scrub
from tests.cli.test_cli_helpers import make_crawl, run_cli, write_jsonl
from tests.core.storage.test_storage_support import free_port, have_redis_server, private_redis
from tests.e2e.test_redis_crawl import article_site

SECRET = "Zq8-secret-Vb3"
#: Every form of a connection url with a secret that redis-py's ``from_url`` reads, with the
#: secret in it as written (it is also looked for percent-decoded).
CONNECTION_FORMS = {
    "user and password": "redis://alice:{s}@{host}/0",
    "password only": "redis://:{s}@{host}/0",
    "default user": "redis://default:{s}@{host}/2",
    "tls": "rediss://alice:{s}@{host}/0",
    "query password": "redis://{host}/0?password={s}",
    "query password among others": "redis://{host}/0?db=0&password={s}&socket_timeout=1",
    "query username and password": "redis://{host}/0?username=alice&password={s}",
    "tls key passphrase": "rediss://{host}/0?ssl_password={s}",
    "both user info and query": "redis://alice:{s}@{host}/0?password={s}x",
    "percent-encoded": "redis://alice:{s}%40x%2Fy@{host}/0",
    "unescaped at sign": "redis://alice:{s}@x@{host}/0",
    "unescaped slash and question mark": "redis://alice:{s}/x?y@{host}/0",
    "unix socket, query password": "unix:///tmp/neardup-{port}.sock?db=0&password={s}",
    "unix socket, user info": "unix://alice:{s}@/tmp/neardup-{port}.sock?db=0",
    "a token as user name": "redis://{s}@{host}/0",
}


def _form(form: str, port: int) -> str:
    return CONNECTION_FORMS[form].format(s=SECRET, host=f"127.0.0.1:{port}", port=port)


def _assert_no_secret(text: str, *secrets: str) -> None:
    for secret in (SECRET, *secrets):
        assert secret not in text, f"{secret!r} in {text[:2000]!r}"


@pytest.mark.parametrize("form", sorted(CONNECTION_FORMS))
def test_connection_url_forms_lose_their_secrets(form: str) -> None:
    url = _form(form, 6390)
    shown = redact_connection_url(url)
    _assert_no_secret(shown)
    assert shown == safe_url(url)
    assert "***" in shown
    if not form.startswith("unix"):
        assert "127.0.0.1:6390" in shown  # where it points stays visible
    # an error message that quotes the url and the password, as written and decoded
    written = {
        "percent-encoded": f"{SECRET}%40x%2Fy",
        "unescaped at sign": f"{SECRET}@x",
        "unescaped slash and question mark": f"{SECRET}/x?y",
        "both user info and query": SECRET,
    }.get(form, SECRET)
    decoded = written.replace("%40", "@").replace("%2F", "/")
    message = f"cannot use {url}: AUTH {written} failed ({decoded})"
    _assert_no_secret(scrub(message, url), written, decoded)


@pytest.mark.parametrize("store", ["redis", "redis-cluster"])
@pytest.mark.parametrize("form", sorted(CONNECTION_FORMS))
def test_store_errors_never_quote_a_secret(form: str, store: str, caplog: pytest.LogCaptureFixture) -> None:
    """Nobody listens: open, retries and the error that ends them, for every form."""
    if store == "redis-cluster" and form.startswith("unix"):
        pytest.skip("a cluster is reached over TCP only")
    url = _form(form, free_port())
    kind = RedisStorage if store == "redis" else RedisClusterStorage
    with caplog.at_level(logging.DEBUG), pytest.raises(StorageError) as info:
        kind(url, prefix="p", retry=RetryPolicy(attempts=2, base_delay=0.01), connect_timeout=0.2).open({})
    _assert_no_secret("".join(traceback.format_exception(info.value)))  # chained errors too
    _assert_no_secret("\n".join(r.getMessage() for r in caplog.records))


@pytest.mark.parametrize("form", sorted(CONNECTION_FORMS))
def test_settings_never_print_a_secret(form: str) -> None:
    from scrapy.settings import Settings

    from neardup_scrapy.config import NeardupSettingsError, parse_settings

    url = _form(form, 6390)
    for kind in ("redis", "redis-cluster"):
        for name in ("NEARDUP_REDIS_URL", "REDIS_URL"):
            try:
                config = parse_settings(Settings({"NEARDUP_STORAGE": kind, name: url}), "spider")
            except NeardupSettingsError as exc:  # unix:// for the cluster
                _assert_no_secret(str(exc))
                continue
            _assert_no_secret(config.storage_description())
    wrong_scheme = url.replace("redis", "http", 1).replace("unix", "http", 1)
    with pytest.raises(NeardupSettingsError) as info:
        parse_settings(Settings({"NEARDUP_STORAGE": "redis", "NEARDUP_REDIS_URL": wrong_scheme}), "spider")
    _assert_no_secret(str(info.value))


# -- a crawl on a Redis that needs a password ------------------------------------------------------

SERVED_FORMS = ["password only", "default user", "query password", "unix socket, query password"]


def _everything(result: Any, out: Path) -> str:
    texts = [result.log, json.dumps(result.stats, default=str), json.dumps(result.items)]
    texts += [p.read_text(errors="replace") for p in out.iterdir() if p.is_file()]
    return "\n".join(texts)


@pytest.mark.redis
@pytest.mark.e2e
@pytest.mark.skipif(not have_redis_server(), reason="redis-server binary not installed")
def test_crawl_on_a_redis_with_a_password_prints_it_nowhere(tmp_path: Path) -> None:
    site = article_site(groups=4)
    socket_path = Path(f"/tmp/neardup-test-{free_port()}.sock")
    with (
        private_redis(tmp_path, password=SECRET, unixsocket=socket_path) as server,
        serve({"127.0.0.1": site}) as urls,
    ):
        for form in [*SERVED_FORMS, "wrong password"]:
            if form == "wrong password":
                url = f"redis://:{SECRET}-not@127.0.0.1:{server.port}/0"
            elif form.startswith("unix"):
                url = f"unix://{socket_path}?db=0&password={SECRET}"
            else:
                url = _form(form, server.port)
            out = tmp_path / form.replace(" ", "-").replace(",", "")
            out.mkdir()
            result = run_crawl(
                "LinkSpider",
                {
                    "NEARDUP_STORAGE": "redis",
                    "NEARDUP_REDIS_URL": url,
                    "NEARDUP_REDIS_PREFIX": out.name,
                    "NEARDUP_DEBUG": True,
                    "NEARDUP_REPORT_FILE": str(out / "report.json"),
                    "NEARDUP_REPORT_HTML": str(out / "report.html"),
                    "NEARDUP_CLUSTERS_FILE": str(out / "clusters.jsonl"),
                    "NEARDUP_PAIRS_FILE": str(out / "pairs.jsonl"),
                },
                start=urls["127.0.0.1"] + "/",
            )
            _assert_no_secret(_everything(result, out), f"{SECRET}-not")
            if form == "wrong password":
                assert (not result.items and "WRONGPASS" in result.log) or "invalid" in result.log.lower()
            else:
                assert result.returncode == 0, result.log[-3000:]
                assert (
                    result.stat("neardup/pages") == 2 * 4 + 1 and result.stat("neardup/storage_errors") == 0
                )
                assert "***" in result.log  # the start-up line names the store, masked
                assert (out / "clusters.jsonl").exists()
    socket_path.unlink(missing_ok=True)


# -- crawled page urls with credentials -----------------------------------------------------------

#: Spellings of a page url with credentials, as a feed or a crawl may hold them.
PAGE_FORMS = [
    "https://alice:{s}@{h}/p",
    "http://:{s}@{h}/p",
    "https://{s}@{h}/p",  # an access token as user name
    "HTTPS://ALICE:{s}@{h}:8443/p?q=1#f",
    "https://alice:{s}%40x@{h}/p",
    "https://alice:{s}@x@{h}/p",
    "ftp://alice:{s}@{h}/p",
    "https:\\\\alice:{s}@{h}\\p",
    "https://{h}/go?to=https://alice:{s}@{h}/nested",
]


@pytest.mark.parametrize("form", PAGE_FORMS)
def test_page_url_forms_lose_their_secrets(form: str) -> None:
    url = form.format(s=SECRET, h="a.test")
    shown = redact_url(url)
    _assert_no_secret(shown)
    assert "***@" in shown and "a.test" in shown


def test_scan_prints_and_exports_no_page_password(tmp_path: Path) -> None:
    records, _expected = make_crawl()
    # every page gets a url with credentials, each form in turn, so duplicates and their
    # originals carry them into -v lines, the report, the HTML and both exports
    for k, record in enumerate(records):
        form = PAGE_FORMS[k % len(PAGE_FORMS)]
        record["url"] = form.format(s=SECRET, h=f"h{k % 3}.test").replace("/p", f"/p{k}", 1)
    pages = write_jsonl(tmp_path / "pages.jsonl", records)
    outputs = {name: tmp_path / name for name in ("r.json", "r.html", "c.jsonl", "p.jsonl", "c.parquet")}
    result = run_cli(
        "scan",
        str(pages),
        "-o",
        str(tmp_path / "out.jsonl"),
        "-v",
        "--report",
        str(outputs["r.json"]),
        "--html",
        str(outputs["r.html"]),
        "--clusters",
        str(outputs["c.jsonl"]),
        "--pairs",
        str(outputs["p.jsonl"]),
    )
    assert result.returncode == 0, result.stderr.decode()[-2000:]
    printed = result.stderr.decode() + result.stdout.decode()
    assert printed.count(" -> ") >= 10  # the -v lines of the duplicates
    _assert_no_secret(printed)
    for path in outputs.values():
        if path.exists():
            _assert_no_secret(path.read_text(errors="replace"))
    pairs = [json.loads(line) for line in outputs["p.jsonl"].read_text().splitlines()]
    assert pairs and all("***@" in p["url"] for p in pairs)  # the url minus its password
    # the tagged records are the input, kept unchanged
    assert SECRET in (tmp_path / "out.jsonl").read_text()
