"""The neardup-scrapy command: scan (order, tags, gzip, stdin, malformed lines, errors) and report."""

from __future__ import annotations

import gzip
import json
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from neardup_scrapy.cli import EXIT_ERROR, EXIT_INTERRUPTED, EXIT_MALFORMED, EXIT_OK, main
from neardup_scrapy.report.schema import validate_report
from tests.cli.test_cli_helpers import ROOT, make_crawl, run_cli, write_jsonl

TAG_KEYS = ["status", "duplicate_of", "similarity", "hamming", "cluster", "mirror_of"]


def read_jsonl(path: Path) -> list[bytes]:
    data = path.read_bytes()
    if data[:2] == b"\x1f\x8b":
        data = gzip.decompress(data)
    return data.splitlines()


@pytest.fixture
def crawl(tmp_path: Path) -> tuple[Path, list[dict[str, Any]], dict[str, str]]:
    records, expected = make_crawl()
    return write_jsonl(tmp_path / "pages.jsonl", records), records, expected


def check_output(lines: list[bytes], records: list[dict[str, Any]], expected: dict[str, str]) -> None:
    assert len(lines) == len(records)
    for line, record in zip(lines, records, strict=True):
        out = json.loads(line)
        tag = out.pop("neardup")
        assert out == record
        assert list(out) == list(record)  # same key order, tag last
        assert line.startswith(json.dumps(record)[:-1].encode())  # the record's bytes are kept as they were
        assert list(tag) == TAG_KEYS
        assert tag["status"] == expected[record["url"]], record["url"]
        if tag["status"] in ("exact", "near"):
            assert tag["duplicate_of"] and tag["cluster"] == tag["duplicate_of"]
            assert 0.0 < tag["similarity"] <= 1.0
        else:
            assert tag["duplicate_of"] is None and tag["cluster"] == record["url"]


def test_scan_tags_records_in_order(
    crawl: tuple[Path, list[dict[str, Any]], dict[str, str]], tmp_path: Path
) -> None:
    path, records, expected = crawl
    out = tmp_path / "out.jsonl"
    report = tmp_path / "report.json"
    html = tmp_path / "report.html"
    code = main(["scan", str(path), "-o", str(out), "--report", str(report), "--html", str(html), "-q"])
    assert code == EXIT_OK
    check_output(read_jsonl(out), records, expected)
    data = json.loads(report.read_text())
    validate_report(data)
    assert data["totals"]["pages"] == len(records)
    assert data["totals"]["exact"] + data["totals"]["near"] == sum(s != "unique" for s in expected.values())
    assert {m["host"]: m["mirror_of"] for m in data["mirrors"]} == {"127.0.0.2": "127.0.0.1"}
    page = html.read_text()
    assert page.startswith("<!DOCTYPE html>") and "127.0.0.2" in page


def test_mirror_host_is_tagged(
    crawl: tuple[Path, list[dict[str, Any]], dict[str, str]], tmp_path: Path
) -> None:
    path, _records, _expected = crawl
    out = tmp_path / "out.jsonl"
    assert main(["scan", str(path), "-o", str(out), "-q"]) == EXIT_OK
    objs = [json.loads(line) for line in read_jsonl(out)]
    mirror = [o["neardup"]["mirror_of"] for o in objs if o["url"].startswith("http://127.0.0.2/")]
    assert mirror[-1] == "127.0.0.1"  # confirmed once enough of its pages duplicate 127.0.0.1
    assert all(
        o["neardup"]["mirror_of"] is None for o in objs if not o["url"].startswith("http://127.0.0.2/")
    )


def test_gzip_in_and_out(tmp_path: Path) -> None:
    records, expected = make_crawl()
    path = write_jsonl(tmp_path / "pages.jsonl.gz", records)
    out = tmp_path / "out.jsonl.gz"
    assert main(["scan", str(path), "-o", str(out), "-q"]) == EXIT_OK
    assert out.read_bytes()[:2] == b"\x1f\x8b"
    check_output(read_jsonl(out), records, expected)


@pytest.mark.parametrize("name", ["out.json", "OUT.JSON.gz"])
def test_json_output_name_gets_one_json_array(tmp_path: Path, name: str) -> None:
    """``-o NAME.json`` writes what its name says: one JSON array, the JSON Lines' records in order."""
    records, expected = make_crawl()
    path = write_jsonl(tmp_path / "pages.jsonl", records)
    lines_out, array_out = tmp_path / "out.jsonl", tmp_path / name
    assert main(["scan", str(path), "-o", str(lines_out), "-q"]) == EXIT_OK
    assert main(["scan", str(path), "-o", str(array_out), "-q"]) == EXIT_OK
    data = array_out.read_bytes()
    if name.endswith(".gz"):
        data = gzip.decompress(data)
    elements = json.loads(data)
    assert isinstance(elements, list)
    assert elements == [json.loads(line) for line in read_jsonl(lines_out)]
    check_output([json.dumps(e).encode() for e in elements], records, expected)


def test_json_output_of_unusable_records_is_still_an_array(tmp_path: Path) -> None:
    path = tmp_path / "bad.jsonl"
    path.write_bytes(b"not json\n[1, 2]\n")
    out = tmp_path / "out.json"
    assert main(["scan", str(path), "-o", str(out), "-q"]) == EXIT_MALFORMED
    elements = json.loads(out.read_bytes())
    assert [e["neardup"]["status"] for e in elements] == ["skipped", "skipped"]


def test_gzip_detected_by_content_not_name(tmp_path: Path) -> None:
    records, expected = make_crawl()
    path = tmp_path / "pages.data"
    path.write_bytes(gzip.compress(b"\n".join(json.dumps(r).encode() for r in records)))
    out = tmp_path / "out.jsonl"
    assert main(["scan", str(path), "-o", str(out), "-q"]) == EXIT_OK
    check_output(read_jsonl(out), records, expected)


@pytest.mark.parametrize("compress", [False, True])
def test_stdin_to_stdout(compress: bool) -> None:
    records, expected = make_crawl()
    data = ("\n".join(json.dumps(r) for r in records) + "\n").encode()
    result = run_cli("scan", "-", "-o", "-", stdin=gzip.compress(data) if compress else data)
    assert result.returncode == EXIT_OK, result.stderr.decode()
    check_output(result.stdout.splitlines(), records, expected)
    assert b"neardup: 42 pages" in result.stderr  # the summary goes to stderr


def test_stdout_is_default_output_when_not_a_terminal(
    crawl: tuple[Path, list[dict[str, Any]], dict[str, str]],
) -> None:
    path, records, expected = crawl
    result = run_cli("scan", str(path), "-q")
    assert result.returncode == EXIT_OK
    assert result.stderr == b""  # quiet: no summary, no progress in a pipe
    check_output(result.stdout.splitlines(), records, expected)


def test_summary_and_verbose(
    crawl: tuple[Path, list[dict[str, Any]], dict[str, str]], tmp_path: Path
) -> None:
    path, _records, expected = crawl
    result = run_cli("scan", str(path), "-o", str(tmp_path / "o.jsonl"), "-v")
    assert result.returncode == EXIT_OK
    err = result.stderr.decode()
    assert "\r" not in err  # no progress line when stderr is not a terminal
    duplicates = [
        line for line in err.splitlines() if " -> " in line and ("exact J=" in line or "near J=" in line)
    ]
    assert len(duplicates) == sum(s != "unique" for s in expected.values())
    assert "pages.jsonl:21: exact J=1.000 H=0 http://127.0.0.1/post/0?utm_source=feed" in err
    summary = err.splitlines()[len(duplicates) :]
    assert summary[0].startswith("neardup: 42 pages from 3 hosts")
    assert any(line.strip().startswith("127.0.0.2") and "127.0.0.1" in line for line in summary)
    assert len(summary) <= 25


MALFORMED = {
    2: "{not json",
    5: "[1, 2, 3]",
    7: '{"html": "<p>no url</p>"}',
    9: '{"url": 17, "html": "<p>x</p>"}',
    11: '{"url": "http://127.0.0.1/nohtml", "title": "x"}',
    13: '{"url": "http://127.0.0.1/badhtml", "html": ["a"]}',
    15: '"just a string"',
    17: "",  # a blank line is ignored, not malformed
}


def test_malformed_lines_are_reported_and_kept(tmp_path: Path) -> None:
    records, expected = make_crawl()
    path = write_jsonl(tmp_path / "pages.jsonl", records, raw_lines=MALFORMED)
    out = tmp_path / "out.jsonl"
    report = tmp_path / "report.json"
    result = run_cli("scan", str(path), "-o", str(out), "--report", str(report))
    assert result.returncode == EXIT_MALFORMED
    err = result.stderr.decode()
    bad_numbers = sorted(i + 1 for i, text in MALFORMED.items() if text)
    for number in bad_numbers:
        assert f"pages.jsonl:{number}: " in err
    assert "invalid JSON" in err and "not a JSON object" in err and "no 'url' field" in err
    assert "'url' is int" in err and "no page body" in err and "'html' is list" in err
    assert f"{len(bad_numbers)} unusable records: 3, 6, 8, 10, 12, ..." in err
    assert "MALFORMED" not in err and ": malformed" not in err

    lines = read_jsonl(out)
    assert len(lines) == len(records) + len(bad_numbers)  # nothing vanished, blank line dropped
    good, bad = [], []
    for line in lines:
        obj = json.loads(line)
        tag = obj["neardup"]
        if tag["status"] == "skipped":
            assert tag["reason"] and not tag["reason"].startswith("malformed")
            bad.append((tag["line"], obj))
        else:
            good.append(obj)
    assert [n for n, _ in bad] == bad_numbers
    raw_kept = {n: obj.get("raw") for n, obj in bad}
    assert raw_kept[3] == "{not json"
    assert raw_kept[6] == "[1, 2, 3]"
    assert next(obj for n, obj in bad if n == 8)["html"] == "<p>no url</p>"  # objects keep their fields
    assert [o["url"] for o in good] == [r["url"] for r in records]
    assert all(o["neardup"]["status"] == expected[o["url"]] for o in good)
    data = json.loads(report.read_text())
    assert data["totals"]["pages"] == len(records)  # malformed lines stay out of the detection


def test_many_malformed_lines_are_counted_not_all_printed(tmp_path: Path) -> None:
    path = tmp_path / "bad.jsonl"
    path.write_text("nope\n" * 500)
    result = run_cli("scan", str(path), "-o", str(tmp_path / "o.jsonl"))
    assert result.returncode == EXIT_MALFORMED
    err = result.stderr.decode()
    assert sum("invalid JSON: " in line for line in err.splitlines()) == 20
    assert "500 unusable records" in err and "not checked: 500 invalid JSON" in err
    assert len(read_jsonl(tmp_path / "o.jsonl")) == 500


def test_invalid_utf8_line(tmp_path: Path) -> None:
    path = tmp_path / "pages.jsonl"
    path.write_bytes(b'{"url": "http://127.0.0.1/", "html": "\xff\xfe"}\n')
    out = tmp_path / "o.jsonl"
    assert main(["scan", str(path), "-o", str(out), "-q"]) == EXIT_MALFORMED
    obj = json.loads(read_jsonl(out)[0])
    assert obj["neardup"]["status"] == "skipped" and "raw" in obj


def test_existing_neardup_key_is_kept_unless_retag(tmp_path: Path) -> None:
    path = write_jsonl(
        tmp_path / "p.jsonl", [{"url": "http://127.0.0.1/a", "neardup": "old", "text": "some words " * 30}]
    )
    out = tmp_path / "o.jsonl"
    assert main(["scan", str(path), "-o", str(out), "-q"]) == EXIT_OK
    assert read_jsonl(out) == path.read_bytes().splitlines()  # kept, byte for byte
    assert main(["scan", str(path), "-o", str(out), "-q", "--retag"]) == EXIT_OK
    obj = json.loads(read_jsonl(out)[0])
    assert list(obj) == ["url", "neardup", "text"]
    assert obj["neardup"]["status"] == "unique"


def test_null_content_falls_back_to_next_field(tmp_path: Path) -> None:
    path = write_jsonl(
        tmp_path / "p.jsonl", [{"url": "http://127.0.0.1/a", "html": None, "text": "words " * 40}]
    )
    out = tmp_path / "o.jsonl"
    assert main(["scan", str(path), "-o", str(out), "-q"]) == EXIT_OK
    assert json.loads(read_jsonl(out)[0])["neardup"]["status"] == "unique"


@pytest.mark.parametrize(
    ("args", "option"),
    [
        (["--threshold", "1.5"], "--threshold"),
        (["--threshold", "0"], "--threshold"),
        (["--num-perm", "3"], "--num-perm"),
        (["--shingle-size", "0"], "--shingle-size"),
        (["--min-tokens", "-1"], "--min-tokens"),
        (["--simhash-distance", "60"], "--simhash-distance"),
        (["--threshold", "abc"], "--threshold"),
        (["--algorithm", "lsh"], "--algorithm"),
        (["--scope", "world"], "--scope"),
    ],
)
def test_bad_parameters_exit_2(
    args: list[str], option: str, crawl: tuple[Path, list[dict[str, Any]], dict[str, str]], tmp_path: Path
) -> None:
    path, _records, _expected = crawl
    out = tmp_path / "o.jsonl"
    result = run_cli("scan", str(path), "-o", str(out), *args)
    assert result.returncode == EXIT_ERROR
    err = result.stderr.decode()
    assert option in err, err
    assert "Traceback" not in err
    assert not out.exists()


def test_missing_input_exit_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["scan", str(tmp_path / "nope.jsonl"), "-o", str(tmp_path / "o.jsonl")]) == EXIT_ERROR
    assert "no such file" in capsys.readouterr().err
    assert main(["scan", str(tmp_path), "-o", str(tmp_path / "o.jsonl")]) == EXIT_ERROR
    assert "a directory without web archives" in capsys.readouterr().err


def test_unwritable_report_fails_before_scanning(
    crawl: tuple[Path, list[dict[str, Any]], dict[str, str]],
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    path, _records, _expected = crawl
    out = tmp_path / "o.jsonl"
    code = main(["scan", str(path), "-o", str(out), "--report", str(tmp_path / "missing" / "r.json")])
    assert code == EXIT_ERROR
    assert "--report" in capsys.readouterr().err
    assert not out.exists()


@pytest.mark.skipif(not Path("/dev/full").exists(), reason="needs /dev/full")
def test_output_write_error_exit_2(
    crawl: tuple[Path, list[dict[str, Any]], dict[str, str]], capsys: pytest.CaptureFixture[str]
) -> None:
    path, _records, _expected = crawl
    assert main(["scan", str(path), "-o", "/dev/full", "-q"]) == EXIT_ERROR
    err = capsys.readouterr().err
    assert "OUTPUT /dev/full: cannot write" in err


def test_usage_errors_exit_2(capsys: pytest.CaptureFixture[str]) -> None:
    assert main([]) == EXIT_ERROR
    assert main(["scan"]) == EXIT_ERROR
    assert main(["frobnicate"]) == EXIT_ERROR
    assert main(["scan", "x", "-q", "-v"]) == EXIT_ERROR
    assert main(["--help"]) == EXIT_OK
    assert "Exit status" in capsys.readouterr().out


def test_truncated_gzip_is_an_input_error(tmp_path: Path) -> None:
    records, _expected = make_crawl()
    data = gzip.compress(("\n".join(json.dumps(r) for r in records) + "\n").encode())
    path = tmp_path / "cut.jsonl.gz"
    path.write_bytes(data[: len(data) // 2])
    out = tmp_path / "o.jsonl"
    report = tmp_path / "r.json"
    result = run_cli("scan", str(path), "-o", str(out), "--report", str(report))
    assert result.returncode == EXIT_ERROR
    assert b"cannot read input" in result.stderr
    lines = read_jsonl(out)
    assert 0 < len(lines) < len(records)  # what was read is written, and reported
    assert json.loads(report.read_text())["totals"]["pages"] == len(lines)


@pytest.mark.parametrize("name", ["o.jsonl", "o.json"])
def test_interrupt_exits_130_and_keeps_what_was_read(tmp_path: Path, name: str) -> None:
    records, _expected = make_crawl()
    out = tmp_path / name
    report = tmp_path / "r.json"
    proc = subprocess.Popen(
        [sys.executable, "-m", "neardup_scrapy.cli", "scan", "-", "-o", str(out), "--report", str(report)],
        stdin=subprocess.PIPE,
        stderr=subprocess.PIPE,
        cwd=ROOT,
    )
    assert proc.stdin is not None and proc.stderr is not None
    for record in records[:5]:
        proc.stdin.write(json.dumps(record).encode() + b"\n")
    proc.stdin.flush()
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and not (out.exists() and out.stat().st_size == 0):
        time.sleep(0.05)  # the output file exists once the scan has started
    time.sleep(1.0)
    proc.send_signal(signal.SIGINT)
    err = proc.stderr.read().decode()
    assert proc.wait(timeout=60) == EXIT_INTERRUPTED, err
    proc.stdin.close()
    assert "interrupted after 5 records (5 records written)" in err  # read and written agree
    if name.endswith(".json"):  # the array is closed: the file is one JSON document
        assert len(json.loads(out.read_bytes())) == 5
    else:
        assert len(read_jsonl(out)) == 5
    assert json.loads(report.read_text())["totals"]["pages"] == 5


def test_broken_pipe_is_quiet(crawl: tuple[Path, list[dict[str, Any]], dict[str, str]]) -> None:
    path, _records, _expected = crawl
    proc = subprocess.Popen(
        [sys.executable, "-m", "neardup_scrapy.cli", "scan", str(path), "-o", "-", "-q"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        cwd=ROOT,
    )
    assert proc.stdout is not None and proc.stderr is not None
    assert proc.stdout.read(100)  # the output is larger than a pipe's buffer
    proc.stdout.close()
    err = proc.stderr.read().decode()
    assert proc.wait(timeout=120) == EXIT_ERROR
    assert "broken pipe" in err
    assert "Traceback" not in err and "Exception ignored" not in err


# -- report subcommand -------------------------------------------------------------------------


@pytest.fixture
def report_file(crawl: tuple[Path, list[dict[str, Any]], dict[str, str]], tmp_path: Path) -> Path:
    path, _records, _expected = crawl
    report = tmp_path / "crawl.json"
    assert main(["scan", str(path), "-o", str(tmp_path / "o.jsonl"), "--report", str(report), "-q"]) == 0
    return report


def test_report_renders_html(report_file: Path, tmp_path: Path) -> None:
    out = tmp_path / "page.html"
    assert main(["report", str(report_file), "-o", str(out), "-q"]) == EXIT_OK
    assert out.read_text().startswith("<!DOCTYPE html>")


def test_report_default_output_name(report_file: Path) -> None:
    assert main(["report", str(report_file), "-q"]) == EXIT_OK
    assert report_file.with_suffix(".html").is_file()


def test_report_gzip_and_stdout(report_file: Path) -> None:
    gz = report_file.with_suffix(".json.gz")
    gz.write_bytes(gzip.compress(report_file.read_bytes()))
    result = run_cli("report", str(gz), "-o", "-", "--summary")
    assert result.returncode == EXIT_OK
    assert result.stdout.startswith(b"<!DOCTYPE html>")
    assert b"neardup: 42 pages" in result.stderr


def test_report_rejects_invalid_file(
    report_file: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data = json.loads(report_file.read_text())
    data["hosts"][0]["pages"] = "many"
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps(data))
    out = tmp_path / "bad.html"
    assert main(["report", str(bad), "-o", str(out)]) == EXIT_ERROR
    err = capsys.readouterr().err
    assert "hosts[0].pages" in err and "not a valid neardup-report/1" in err
    assert not out.exists()

    bad.write_text("{oops")
    assert main(["report", str(bad), "-o", str(out)]) == EXIT_ERROR
    assert "not JSON" in capsys.readouterr().err
    assert main(["report", str(tmp_path / "none.json")]) == EXIT_ERROR
    assert "no such file" in capsys.readouterr().err


def test_cli_and_report_do_not_import_scrapy() -> None:
    code = (
        "import sys, neardup_scrapy.cli, neardup_scrapy.report, neardup_scrapy.report.html; "
        "print(sorted(m for m in ('scrapy', 'twisted', 'neardup_scrapy.core') if m in sys.modules))"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, cwd=ROOT, check=True, timeout=60
    )
    assert result.stdout.strip() == b"[]"


# -- never writing over an input, never two outputs to one file -----------------------------------

#: The options that write a file, and the scan options that name it.
WRITERS = ["-o", "--report", "--html", "--clusters", "--pairs"]
#: Ways to name a file that exists: its path as given, another spelling, a symlink, a hard link.
ALIASES = ["same", "spelling", "symlink", "hardlink"]


def _alias(path: Path, how: str) -> str:
    if how == "same":
        return str(path)
    if how == "spelling":
        return str(path.parent / "sub" / ".." / "." / path.name)
    link = path.parent / f"{how}-{path.name}"
    if how == "symlink":
        link.symlink_to(path)
    else:
        link.hardlink_to(path)
    return str(link)


def _refused(result: subprocess.CompletedProcess[bytes], *words: str) -> None:
    err = result.stderr.decode().strip().splitlines()
    assert result.returncode == EXIT_ERROR, err
    assert len(err) == 1, err  # one clear line
    assert all(word in err[0] for word in words), err


@pytest.mark.parametrize("how", ALIASES)
@pytest.mark.parametrize("option", WRITERS)
def test_scan_never_writes_over_its_input(
    tmp_path: Path, crawl: tuple[Path, list[dict[str, Any]], dict[str, str]], option: str, how: str
) -> None:
    path, _records, _expected = crawl
    (tmp_path / "sub").mkdir()
    before = path.read_bytes()
    result = run_cli("scan", str(path), option, _alias(path, how), "-q")
    _refused(result, option if option != "-o" else "OUTPUT", "is the input", "never writes over its input")
    assert path.read_bytes() == before


@pytest.mark.parametrize("how", ALIASES)
@pytest.mark.parametrize(
    ("first", "second"), [(a, b) for i, a in enumerate(WRITERS) for b in WRITERS[i + 1 :]]
)
def test_scan_never_writes_two_outputs_to_one_file(
    tmp_path: Path,
    crawl: tuple[Path, list[dict[str, Any]], dict[str, str]],
    first: str,
    second: str,
    how: str,
) -> None:
    path, _records, _expected = crawl
    (tmp_path / "sub").mkdir()
    target = tmp_path / "out.txt"
    target.write_text("kept\n")
    result = run_cli("scan", str(path), first, str(target), second, _alias(target, how), "-q")
    _refused(result, "same file", "give each output its own")
    assert target.read_text() == "kept\n"


def test_scan_refuses_a_new_output_named_twice(
    tmp_path: Path, crawl: tuple[Path, list[dict[str, Any]], dict[str, str]]
) -> None:
    path, _records, _expected = crawl
    target = tmp_path / "new.json"
    result = run_cli(
        "scan", str(path), "--report", str(target), "--html", str(tmp_path / "." / "new.json"), "-q"
    )
    _refused(result, "same file")
    assert not target.exists()


def test_scan_refuses_two_outputs_to_standard_output(
    crawl: tuple[Path, list[dict[str, Any]], dict[str, str]],
) -> None:
    path, _records, _expected = crawl
    _refused(run_cli("scan", str(path), "-o", "-", "--report", "-", "-q"), "both write to standard output")


@pytest.mark.parametrize("option", [None, "-"])
def test_scan_refuses_standard_output_redirected_to_its_input(
    tmp_path: Path, crawl: tuple[Path, list[dict[str, Any]], dict[str, str]], option: str | None
) -> None:
    path, _records, _expected = crawl
    before = path.read_bytes()
    args = [sys.executable, "-m", "neardup_scrapy.cli", "scan", str(path), "-q"]
    if option:
        args += ["-o", option]
    with path.open("ab") as appended:  # scan IN >> IN
        result = subprocess.run(
            args, stdout=appended, stderr=subprocess.PIPE, cwd=ROOT, timeout=120, check=False
        )
    _refused(result, "standard output is the input")
    assert path.read_bytes() == before


@pytest.mark.parametrize("how", ALIASES)
def test_report_never_writes_over_its_input(tmp_path: Path, how: str) -> None:
    records, _ = make_crawl()
    pages = write_jsonl(tmp_path / "p.jsonl", records)
    report = tmp_path / "r.json"
    assert (
        main(["scan", str(pages), "-o", str(tmp_path / "o.jsonl"), "--report", str(report), "-q"]) == EXIT_OK
    )
    (tmp_path / "sub").mkdir()
    before = report.read_bytes()
    _refused(run_cli("report", str(report), "-o", _alias(report, how)), "is the input")
    assert report.read_bytes() == before


@pytest.mark.parametrize("option", ["--report", "--html", "--clusters", "--pairs"])
def test_scan_writes_a_report_or_export_named_dash_to_standard_output(
    tmp_path: Path, crawl: tuple[Path, list[dict[str, Any]], dict[str, str]], option: str
) -> None:
    path, _records, _expected = crawl
    result = run_cli("scan", str(path), "-o", str(tmp_path / "o.jsonl"), option, "-")
    assert result.returncode == EXIT_OK, result.stderr.decode()
    text = result.stdout.decode()
    if option == "--report":
        validate_report(json.loads(text))
    elif option == "--html":
        assert text.startswith("<!DOCTYPE html>")
    else:
        assert all(json.loads(line) for line in text.splitlines()) and text
    assert "<stdout>" in result.stderr.decode()
    assert not (ROOT / "-").exists()
