"""scan's inputs: Scrapy JSON feeds, web archives (WARC, ARC-style gzip, WACZ), odd records, --jobs."""

from __future__ import annotations

import gzip
import io
import json
import re
import threading
import zipfile
from pathlib import Path
from typing import Any

import pytest

from neardup_scrapy.cli import EXIT_ERROR, EXIT_MALFORMED, EXIT_OK, main
from neardup_scrapy.cli.scanjobs import _read_ahead
from tests.cli.test_cli_helpers import make_crawl, run_cli, write_jsonl


def statuses(path: Path, key: str = "url") -> list[tuple[str, str]]:
    data = path.read_bytes()
    if data[:2] == b"\x1f\x8b":
        data = gzip.decompress(data)
    return [(obj[key], obj["neardup"]["status"]) for obj in map(json.loads, data.splitlines())]


def write_warc(path: Path, records: list[dict[str, Any]], *, extras: bool = True) -> None:
    """A gzipped WARC of ``records`` as a crawler keeps it: request, response, and some non-pages."""
    from warcio.statusandheaders import StatusAndHeaders
    from warcio.warcwriter import WARCWriter

    with path.open("wb") as handle:
        writer = WARCWriter(handle, gzip=True)
        writer.write_record(writer.create_warcinfo_record(path.name, {"software": "test"}))
        for n, record in enumerate(records):
            url = record["url"]
            request = StatusAndHeaders("GET / HTTP/1.1", [("Host", "x")], is_http_request=True)
            writer.write_record(writer.create_warc_record(url, "request", http_headers=request))
            body = record["html"].encode("utf-8")
            headers = StatusAndHeaders(
                "200 OK", [("Content-Type", "text/html; charset=utf-8")], protocol="HTTP/1.1"
            )
            writer.write_record(
                writer.create_warc_record(url, "response", payload=io.BytesIO(body), http_headers=headers)
            )
            if extras and n % 7 == 0:
                image = StatusAndHeaders("200 OK", [("Content-Type", "image/png")], protocol="HTTP/1.1")
                writer.write_record(
                    writer.create_warc_record(
                        url + ".png", "response", payload=io.BytesIO(b"\x89PNG"), http_headers=image
                    )
                )


# -- Scrapy feeds ------------------------------------------------------------------------------


def scrapy_json_feed(records: list[dict[str, Any]]) -> bytes:
    """The layout of Scrapy's JSON feed exporter (``-O items.json``)."""
    return ("[\n" + ",\n".join(json.dumps(r) for r in records) + "\n]").encode()


def test_json_array_feed_scans_like_json_lines(tmp_path: Path) -> None:
    records, expected = make_crawl()
    jsonl = write_jsonl(tmp_path / "items.jsonl", records)
    feed = tmp_path / "items.json"
    feed.write_bytes(scrapy_json_feed(records))
    compact = tmp_path / "compact.json.gz"
    compact.write_bytes(gzip.compress(json.dumps(records).encode()))
    indented = tmp_path / "indented.json"  # FEED_EXPORT_INDENT = 2
    indented.write_text(json.dumps(records, indent=2))
    results = []
    for source in (jsonl, feed, compact, indented):
        out = tmp_path / f"{source.name}.out.jsonl"
        assert main(["scan", str(source), "-o", str(out), "-q"]) == EXIT_OK
        results.append(statuses(out))
    assert results[0] == results[1] == results[2] == results[3]
    assert [s for _u, s in results[0]] == [expected[r["url"]] for r in records]


def test_feed_without_page_bodies_exits_2_with_one_hint(tmp_path: Path) -> None:
    items = [
        {"url": f"http://127.0.0.1/{n}", "title": f"t{n}", "neardup": {"status": "unique"}} for n in range(30)
    ]
    feed = tmp_path / "items.json"
    feed.write_bytes(scrapy_json_feed(items))
    out = tmp_path / "o.jsonl"
    report = tmp_path / "r.json"
    result = run_cli("scan", str(feed), "-o", str(out), "--report", str(report))
    assert result.returncode == EXIT_ERROR
    err = result.stderr.decode().splitlines()
    assert len(err) == 1, err
    assert "no page bodies" in err[0] and "add one to your items" in err[0] and "'html'" in err[0]
    assert not report.exists()
    assert [json.loads(line)["neardup"] for line in out.read_bytes().splitlines()] == [
        {"status": "unique"}
    ] * 30  # the crawl's tags are kept


def test_deep_and_huge_lines_are_skipped_not_fatal(tmp_path: Path) -> None:
    records, _expected = make_crawl()
    path = tmp_path / "odd.jsonl"
    deep = '{"url": "http://127.0.0.1/deep", "html": ' + "[" * 100_000 + "]" * 100_000 + "}"
    huge = json.dumps({"url": "http://127.0.0.1/huge", "html": "<p>" + "word " * 700_000 + "</p>"})
    big = json.dumps(
        {"url": "http://127.0.0.1/big", "html": "<p>" + "é" * 600_000 + "</p>"}, ensure_ascii=False
    )
    lines = [json.dumps(records[0]), deep, huge, big, json.dumps(records[1])]
    path.write_text("\n".join(lines) + "\n")
    out = tmp_path / "o.jsonl"
    result = run_cli("scan", str(path), "-o", str(out), "--max-body-bytes", "1000000")
    assert result.returncode == EXIT_MALFORMED, result.stderr.decode()
    err = result.stderr.decode()
    assert "odd.jsonl:2: nested too deep" in err
    rows = [json.loads(line) for line in out.read_bytes().splitlines()]
    assert len(rows) == 5
    assert rows[1]["neardup"]["reason"] == "nested too deep"
    assert rows[2] == {"line": 3, "neardup": rows[2]["neardup"]}  # too long to read: not parsed
    assert rows[2]["neardup"]["reason"] == "too large"
    assert rows[3]["url"] == "http://127.0.0.1/big" and rows[3]["neardup"]["reason"] == "too large"
    assert [r["neardup"]["status"] for r in (rows[0], rows[4])] == ["unique", "unique"]
    assert "not checked: " in err and "2 too large" in err and "1 nested too deep" in err


def test_max_body_bytes_rejects_negative(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    path = write_jsonl(tmp_path / "p.jsonl", make_crawl()[0][:2])
    assert main(["scan", str(path), "--max-body-bytes", "-1", "-q"]) == EXIT_ERROR
    assert "--max-body-bytes" in capsys.readouterr().err


# -- web archives ------------------------------------------------------------------------------


def test_warc_gives_the_jsonl_verdicts_and_a_sidecar(tmp_path: Path) -> None:
    records, expected = make_crawl()
    records = [r for r in records if "html" in r]
    warc = tmp_path / "crawl.warc.gz"
    write_warc(warc, records)
    out = tmp_path / "tags.jsonl"
    result = run_cli("scan", str(warc), "-o", str(out))
    assert result.returncode == EXIT_OK, result.stderr.decode()
    rows = [json.loads(line) for line in out.read_bytes().splitlines()]
    assert len(rows) == len(records)  # one line per HTML response; no request, image or warcinfo
    assert all(set(row) == {"url", "warc_record_id", "neardup"} for row in rows)
    assert all(row["warc_record_id"].startswith("<urn:uuid:") for row in rows)
    assert [(r["url"], r["neardup"]["status"]) for r in rows] == [
        (r["url"], expected[r["url"]]) for r in records
    ]
    assert "request record" in result.stderr.decode() and "not HTML" in result.stderr.decode()

    wacz = tmp_path / "crawl.wacz"
    with zipfile.ZipFile(wacz, "w") as package:
        package.write(warc, "archive/data.warc.gz")
        package.writestr("datapackage.json", "{}")
    out2 = tmp_path / "tags2.jsonl"
    assert main(["scan", str(wacz), "-o", str(out2), "-q"]) == EXIT_OK
    assert out2.read_bytes() == out.read_bytes()


def test_not_an_archive(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "x.wacz"
    path.write_bytes(b"not a zip")
    assert main(["scan", str(path), "-q"]) == EXIT_ERROR
    assert "not a WACZ" in capsys.readouterr().err


def _eval_docs_records(eval_docs: Path) -> list[dict[str, Any]]:
    with gzip.open(eval_docs / "pages.jsonl.gz", "rb") as handle:
        return [json.loads(line) for line in handle]


@pytest.mark.evaldev
def test_eval_docs_warc_equals_jsonl_and_jobs_do_not_change_verdicts(eval_docs: Path, tmp_path: Path) -> None:
    records = [r for r in _eval_docs_records(eval_docs) if isinstance(r.get("html"), str)]
    warc = tmp_path / "docs.warc.gz"
    write_warc(warc, records, extras=False)
    source = eval_docs / "pages.jsonl.gz"
    by_jsonl: dict[int, list[tuple[str, str]]] = {}
    for jobs in (1, 2):
        out = tmp_path / f"jobs{jobs}.jsonl"
        result = run_cli("scan", str(source), "-o", str(out), "--jobs", str(jobs), "-q", timeout=900)
        assert result.returncode == EXIT_OK, result.stderr.decode()[-2000:]
        by_jsonl[jobs] = statuses(out)
    assert by_jsonl[1] == by_jsonl[2]
    assert (tmp_path / "jobs1.jsonl").read_bytes() == (tmp_path / "jobs2.jsonl").read_bytes()
    out = tmp_path / "warc.jsonl"
    result = run_cli("scan", str(warc), "-o", str(out), "-q", timeout=900)
    assert result.returncode == EXIT_OK, result.stderr.decode()[-2000:]
    html_urls = {r["url"] for r in records}
    assert statuses(out) == [(u, s) for u, s in by_jsonl[1] if u in html_urls]
    assert sum(s in ("exact", "near") for _u, s in by_jsonl[1]) > 100


def test_jobs_give_the_same_output_as_one_process(tmp_path: Path) -> None:
    records: list[dict[str, Any]] = []
    for seed in (7, 8):  # two generated crawls: 340 records, over the in-process threshold
        batch, _expected = make_crawl(seed=seed, distinct=150)
        records += [{**r, "url": r["url"].replace("127.0.0.", f"10.{seed}.0.")} for r in batch]
    from neardup_scrapy.cli.scanjobs import SMALL_INPUT

    assert len(records) > SMALL_INPUT
    path = write_jsonl(tmp_path / "pages.jsonl", records)
    outputs = []
    for jobs in ("1", "2"):
        out = tmp_path / f"out{jobs}.jsonl"
        result = run_cli(
            "scan", str(path), "-o", str(out), "--jobs", jobs, "--clusters", str(tmp_path / f"c{jobs}.jsonl")
        )
        assert result.returncode == EXIT_OK, result.stderr.decode()
        outputs.append((out.read_bytes(), (tmp_path / f"c{jobs}.jsonl").read_bytes()))
    assert outputs[0] == outputs[1]
    assert b'"status": "exact"' in outputs[0][0] and b'"status": "near"' in outputs[0][0]


def _record_ends(data: bytes) -> set[int]:
    """Offsets at which a record of the (plain or gzip) WARC ``data`` ends or the next begins."""
    from warcio.archiveiterator import ArchiveIterator

    records = ArchiveIterator(io.BytesIO(data))
    starts = set()
    for _ in records:
        starts.add(records.get_record_offset())
    return starts | {len(data)}


@pytest.mark.parametrize("compressed", [True, False], ids=["warc.gz", "warc"])
def test_every_cut_of_an_archive_is_reported(tmp_path: Path, compressed: bool) -> None:
    """A WARC cut anywhere but between records raises; warcio alone reads most cuts as a clean end.

    Cuts that lose only the blank lines closing the last record lose nothing and are allowed.
    """
    from neardup_scrapy.cli.inputs.base import InputFormatError
    from neardup_scrapy.cli.inputs.warc import warc_units

    records = [r for r in make_crawl()[0] if "html" in r]
    path = tmp_path / "crawl.warc.gz"
    write_warc(path, records, extras=False)
    data = path.read_bytes() if compressed else gzip.decompress(path.read_bytes())
    ends = _record_ends(data)
    silent = []
    # evenly spread cuts, and cuts just inside each record's header (the hardest to see)
    spread = range(2, len(data), max(1, len(data) // 300))
    cuts = {*spread, *(end + d for end in ends for d in (1, 3, 10, 40, 100))}
    for cut in sorted(c for c in cuts if c < len(data)):
        try:
            for _ in warc_units(io.BufferedReader(io.BytesIO(data[:cut])), 0):
                pass
        except (OSError, InputFormatError):  # damaged, or cut before any record was whole
            continue
        if min(abs(cut - end) for end in ends) > 4:
            silent.append(cut)
    assert silent == [], f"{len(silent)} cuts read as a whole archive, first at {silent[:5]}"


def test_damaged_warc_keeps_what_was_read(tmp_path: Path) -> None:
    records = [r for r in make_crawl()[0] if "html" in r]
    warc = tmp_path / "crawl.warc.gz"
    write_warc(warc, records, extras=False)
    cut = tmp_path / "cut.warc.gz"
    data = warc.read_bytes()
    middle = sorted(_record_ends(data))[len(records)]  # a record in the middle of the file
    cut.write_bytes(data[: middle + 300])  # inside it
    out, report = tmp_path / "tags.jsonl", tmp_path / "r.json"
    result = run_cli("scan", str(cut), "-o", str(out), "--report", str(report))
    assert result.returncode == EXIT_ERROR, result.stderr.decode()
    assert b"cannot read input" in result.stderr
    rows = out.read_bytes().splitlines()
    assert 0 < len(rows) < len(records)
    assert json.loads(report.read_text())["totals"]["pages"] == len(rows)


def test_read_ahead_keeps_order_raises_where_the_input_failed_and_stops_with_its_reader() -> None:
    def failing() -> Any:
        yield from range(1000)
        raise ValueError("bad record 1000")

    taken: list[int] = []
    with pytest.raises(ValueError, match="bad record 1000"):
        for value in _read_ahead(failing(), 8):
            taken.append(value)
    assert taken == list(range(1000))

    def endless() -> Any:
        n = 0
        while True:
            yield n
            n += 1

    ahead = _read_ahead(endless(), 4)
    assert [next(ahead) for _ in range(10)] == list(range(10))
    ahead.close()  # the consumer stops: so does the reader, at its next unit
    readers = [t for t in threading.enumerate() if t.name == "neardup-scan-reader"]
    for reader in readers:
        reader.join(timeout=5)
        assert not reader.is_alive()


def test_chunks_close_at_a_size_and_keep_the_input_order(monkeypatch: pytest.MonkeyPatch) -> None:
    """Units go to the pool in chunks closed at ``CHUNK`` units or ``CHUNK_BYTES``: a run of
    large pages makes small chunks (bounded memory), and the analyses come back in order."""
    import neardup_scrapy.cli.scanjobs as scanjobs
    from neardup_scrapy.cli.inputs.base import JSON, Unit
    from neardup_scrapy.core.params import DetectorParams

    records, _expected = make_crawl(seed=9, distinct=40)
    pages = [r for r in records if "html" in r]
    units = [
        Unit(i + 1, JSON, json.dumps({**r, "html": r["html"] * (1 + i % 5)}).encode())
        for i, r in enumerate(pages)
    ]
    sent: list[int] = []
    original = scanjobs._context

    def spying_context() -> Any:
        context = original()
        pool_class = context.Pool

        def pool(*args: Any, **kwargs: Any) -> Any:
            made = pool_class(*args, **kwargs)
            apply_async = made.apply_async

            def counted(fn: Any, chunk_args: tuple[list[Unit]]) -> Any:
                sent.append(len(chunk_args[0]))
                return apply_async(fn, chunk_args)

            made.apply_async = counted
            return made

        context.Pool = pool
        return context

    monkeypatch.setattr(scanjobs, "_context", spying_context)
    monkeypatch.setattr(scanjobs, "SMALL_INPUT", 8)
    monkeypatch.setattr(scanjobs, "CHUNK_BYTES", 1)  # every unit is over it: chunks of one
    params = DetectorParams()

    def digests(jobs: int) -> list[tuple[int, bytes | None]]:
        found = scanjobs.analysed(units, params, 0, jobs)
        return [(u.number, a.sketch.digest if a and a.sketch else None) for u, _r, a in found]

    one, two = digests(1), digests(2)
    assert one == two and [n for n, _ in two] == [u.number for u in units]
    assert sent == [1] * len(units)  # closed by size, not by count


# -- hostile elements of a JSON array ------------------------------------------------------------

#: Elements that cannot be used, as ``(name, one-line text, multi-line text, reason starts)``.
#: The multi-line texts are laid out as ``json.dumps(indent=…)`` would (``{`` and ``}`` on lines
#: of their own), so they sit among indented elements as a hostile record of that feed would.
_DEEP_ARRAY = "[" * 100_000 + "]" * 100_000
_DEEP_OBJECT = '{"a": ' * 60_000 + "1" + "}" * 60_000
_LONG = "w " * 1_100_000  # over twice --max-body-bytes 1000000: not even kept in memory
HOSTILE = [
    (
        "deep array",
        '{"url": "http://127.0.0.9/deep-array", "extra": ' + _DEEP_ARRAY + "}",
        '{\n  "url": "http://127.0.0.9/deep-array",\n  "extra": ' + _DEEP_ARRAY + "\n}",
        "nested too deep",
    ),
    (
        "deep object",
        '{"url": "http://127.0.0.9/deep-object", "html": ' + _DEEP_OBJECT + "}",
        '{\n  "url": "http://127.0.0.9/deep-object",\n  "html": ' + _DEEP_OBJECT + "\n}",
        "nested too deep",
    ),
    (
        "too large to read",
        '{"url": "http://127.0.0.9/huge", "html": "' + _LONG + '"}',
        '{\n  "url": "http://127.0.0.9/huge",\n  "html": "' + _LONG + '"\n}',
        "too large",
    ),
    (
        "too large a body",
        '{"url": "http://127.0.0.9/large", "html": "' + "é" * 600_000 + '"}',
        '{\n  "url": "http://127.0.0.9/large",\n  "html": "' + "é" * 600_000 + '"\n}',
        "too large",
    ),
    (
        "stray closer",
        '{"url": "http://127.0.0.9/stray", "html": "<p>x</p>"]',
        '{\n  "url": "http://127.0.0.9/stray",\n  "html": "<p>x</p>"\n]',
        "invalid JSON",
    ),
    (
        "mismatched closer",
        '{"url": "http://127.0.0.9/mismatch", "html": "<p>x</p>", "list": [1, 2}',
        '{\n  "url": "http://127.0.0.9/mismatch",\n  "list": [\n    1\n  }',
        "invalid JSON",
    ),
    ("not an object", "42", "42", "not a JSON object"),
]
#: Only where a line break can end them: nothing marks the next element in a one-line array.
LINE_BROKEN = [
    (
        "unclosed string",
        '{"url": "http://127.0.0.9/unclosed", "html": "<p>never closed',
        '{\n  "url": "http://127.0.0.9/unclosed",\n  "html": "<p>never closed\n}',
        "invalid JSON",
    ),
    (
        "unclosed bracket",
        '{"url": "http://127.0.0.9/open", "html": "<p>x</p>", "list": [1, 2',
        '{\n  "url": "http://127.0.0.9/open",\n  "list": [\n    1,\n    2\n',
        "invalid JSON",
    ),
]


def _indented(text: str, column: int) -> str:
    return "\n".join(" " * column + line for line in text.split("\n"))


def array_feed(elements: list[Any], layout: str) -> bytes:
    """A JSON array of ``elements`` (records, or ``(one-line, multi-line)`` raw texts) in ``layout``:
    ``lines`` (Scrapy's feed), ``indent`` (``FEED_EXPORT_INDENT = 4``: items at column 0),
    ``dump`` (``json.dump(indent=2)``: items at column 2) or ``compact`` (one line)."""
    texts = []
    for element in elements:
        if isinstance(element, tuple):
            one_line, multi_line = element
            texts.append(one_line if layout in ("lines", "compact") else multi_line)
        elif layout == "indent":
            texts.append(json.dumps(element, indent=4))
        elif layout == "dump":
            texts.append(json.dumps(element, indent=2))
        else:
            texts.append(json.dumps(element))
    if layout == "compact":
        return ("[" + ",".join(texts) + "]").encode()
    if layout == "dump":
        return ("[\n" + ",\n".join(_indented(t, 2) for t in texts) + "\n]").encode()
    return ("[\n" + ",\n".join(texts) + "\n]").encode()


@pytest.mark.parametrize("layout", ["lines", "indent", "dump", "compact"])
def test_json_array_keeps_every_good_record_around_hostile_ones(tmp_path: Path, layout: str) -> None:
    records, _expected = make_crawl()
    records = records[:24]
    reference = write_jsonl(tmp_path / "good.jsonl", records)
    assert main(["scan", str(reference), "-o", str(tmp_path / "good.out.jsonl"), "-q"]) == EXIT_OK
    want = statuses(tmp_path / "good.out.jsonl")
    hostile = HOSTILE + (LINE_BROKEN if layout != "compact" else [])
    # a hostile element first, last, and between every few good ones (twice, two in a row)
    elements: list[Any] = []
    bad = iter(hostile * 2)
    for k, record in enumerate(records):
        if k % 2 == 0:
            name, one_line, multi_line, _reason = next(bad, (None, "", "", ""))
            if name is not None:
                elements.append((one_line, multi_line))
        elements.append(record)
    elements += [(h[1], h[2]) for h in hostile[:2]]
    feed = tmp_path / "items.json"
    feed.write_bytes(array_feed(elements, layout))
    out = tmp_path / "out.jsonl"
    result = run_cli("scan", str(feed), "-o", str(out), "--max-body-bytes", "1000000", "-v")
    assert result.returncode == EXIT_MALFORMED, result.stderr.decode()[-2000:]
    rows = [json.loads(line) for line in out.read_bytes().splitlines()]
    assert len(rows) == len(elements)  # one output line per element, good or bad
    good = [(r["url"], r["neardup"]["status"]) for r in rows if r.get("id") is not None]
    assert good == want  # every good record, with the verdict it gets without the bad ones
    reasons = [r["neardup"]["reason"] for r in rows if r.get("id") is None]
    expected = [h[3] for h in elements_hostile(elements, hostile)]
    assert len(reasons) == len(expected)
    assert all(got.startswith(want_reason) for got, want_reason in zip(reasons, expected, strict=True)), (
        reasons
    )
    err = result.stderr.decode()
    problems = sum(not reason.startswith("too large") for reason in expected)
    reported = re.findall(r"items\.json:\d+: (?!exact|near)", err)
    assert len(reported) == problems  # each unusable record reported once (-v)


def elements_hostile(
    elements: list[Any], hostile: list[tuple[str, str, str, str]]
) -> list[tuple[str, str, str, str]]:
    by_text = {h[1]: h for h in hostile}
    return [by_text[e[0]] for e in elements if isinstance(e, tuple)]


def test_json_array_reports_the_line_an_indented_element_starts_on(tmp_path: Path) -> None:
    records = make_crawl()[0][:3]
    elements: list[Any] = [
        records[0],
        (HOSTILE[0][1], HOSTILE[0][2]),
        records[1],
        (HOSTILE[4][1], HOSTILE[4][2]),
    ]
    feed = tmp_path / "items.json"
    feed.write_bytes(array_feed(elements, "indent"))
    text = feed.read_text()
    starts = [n for n, line in enumerate(text.split("\n"), start=1) if line == "{"]
    out = tmp_path / "out.jsonl"
    result = run_cli("scan", str(feed), "-o", str(out), "-v")
    err = result.stderr.decode()
    assert f"items.json:{starts[1]}: nested too deep" in err
    assert f"items.json:{starts[3]}: invalid JSON" in err
    rows = [json.loads(line) for line in out.read_bytes().splitlines()]
    assert [r["neardup"].get("line") for r in rows] == [None, starts[1], None, starts[3]]
