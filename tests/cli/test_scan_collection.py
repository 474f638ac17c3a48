"""``scan`` over a collection: several inputs, a kept or shared index, revisits, ``export``.

Small generated crawls (:func:`test_cli_helpers.make_crawl`) cut into shards that several
``scan`` processes check into one index: on disk one run after another, in Redis and in a Redis
Cluster at the same time. The clusters they leave must be those of one process over all pages
(up to the representative, which depends on which page was committed first), a shard scanned
again adds nothing and counts revisits, and ``export`` writes what a scan writes.
"""

from __future__ import annotations

import json
import sqlite3
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from neardup_scrapy.cli import EXIT_ERROR, EXIT_OK, main
from neardup_scrapy.cli.inputs import InputFormatError
from neardup_scrapy.cli.inputs.collection import expand_inputs
from tests.cli.test_cli_helpers import ROOT, make_crawl, run_cli, write_jsonl
from tests.cli.test_cli_inputs import write_warc

Clusters = frozenset[frozenset[str]]


def clusters_of(path: Path) -> Clusters:
    """The clusters of a ``--clusters`` export as sets of member urls (representatives aside)."""
    rows = [json.loads(line) for line in path.read_text().splitlines()]
    return frozenset(frozenset(m["url"] for m in row["members"]) for row in rows)


def shards(tmp_path: Path, n: int = 3) -> tuple[list[Path], Path]:
    """The crawl cut into ``n`` interleaved shards (every host in every shard), and all of it."""
    records, _expected = make_crawl()
    paths = [write_jsonl(tmp_path / f"shard{k}.jsonl", records[k::n]) for k in range(n)]
    return paths, write_jsonl(tmp_path / "all.jsonl", records)


def one_process(tmp_path: Path, everything: Path) -> Clusters:
    out = tmp_path / "single-clusters.jsonl"
    assert (
        main(["scan", str(everything), "-o", str(tmp_path / "single.jsonl"), "--clusters", str(out), "-q"])
        == 0
    )
    return clusters_of(out)


def tags(path: Path) -> dict[str, dict[str, Any]]:
    return {row["url"]: row["neardup"] for row in map(json.loads, path.read_text().splitlines())}


def concurrent_scans(inputs: list[Path], index: list[str], tmp_path: Path) -> None:
    """One ``scan`` process per input, all at once, into the index the options name."""
    procs = [
        subprocess.Popen(
            [sys.executable, "-m", "neardup_scrapy.cli", "scan", str(path),
             "-o", str(tmp_path / f"{path.stem}.out"), "-q", *index],
            cwd=ROOT,
            stderr=subprocess.PIPE,
        )
        for path in inputs
    ]  # fmt: skip
    for proc in procs:
        _out, err = proc.communicate(timeout=180)
        assert proc.returncode == EXIT_OK, err.decode()


# -- inputs ----------------------------------------------------------------------------------------


def test_inputs_expand_directories_and_lists_in_order(tmp_path: Path) -> None:
    crawl = tmp_path / "crawl"
    (crawl / "2026-10").mkdir(parents=True)
    for name in ("2026-10/b.warc.gz", "2026-10/a.arc", "z.wacz", "notes.txt", "x.jsonl"):
        (crawl / name).write_bytes(b"")
    feed = tmp_path / "feed.jsonl"
    feed.write_bytes(b"")
    listing = tmp_path / "list.txt"
    listing.write_text(f"# october\n\n{feed}\n{crawl}\n")
    got = expand_inputs([], [str(listing)])
    assert got == [str(feed), *(str(crawl / n) for n in ("2026-10/a.arc", "2026-10/b.warc.gz", "z.wacz"))]
    with pytest.raises(InputFormatError, match="named twice"):
        expand_inputs([str(feed)], [str(listing)])
    with pytest.raises(InputFormatError, match="no such file"):
        expand_inputs([str(tmp_path / "missing.warc.gz")])
    (tmp_path / "empty").mkdir()
    with pytest.raises(InputFormatError, match="without web archives"):
        expand_inputs([str(tmp_path / "empty")])


def test_several_inputs_in_one_run_equal_one_input(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Shards read in one run (a WARC directory and a list file) tag the pages as the whole crawl in
    one input does, in the same order; every input gets its summary line."""
    records, _expected = make_crawl()
    records = [r for r in records if "html" in r]  # WARCs hold HTML bodies
    whole = write_jsonl(tmp_path / "all.jsonl", records)
    assert main(["scan", str(whole), "-o", str(tmp_path / "whole.out"), "-q"]) == EXIT_OK
    (tmp_path / "warcs").mkdir()
    for k in range(2):
        write_warc(tmp_path / "warcs" / f"part{k}.warc.gz", records[k * 10 : (k + 1) * 10])
    rest = write_jsonl(tmp_path / "rest.jsonl", records[20:])
    listing = tmp_path / "inputs.txt"
    listing.write_text(f"{rest}\n")
    capsys.readouterr()
    code = main(
        ["scan", str(tmp_path / "warcs"), "--inputs-from", str(listing), "-o", str(tmp_path / "parts.out")]
    )
    assert code == EXIT_OK
    err = capsys.readouterr().err
    assert "[1/3] " in err and "[2/3] " in err and "[3/3] " in err and "inputs: 3 read" in err
    whole_tags = [
        (r["url"], r["neardup"]["status"]) for r in map(json.loads, (tmp_path / "whole.out").open())
    ]
    part_tags = [(r["url"], r["neardup"]["status"]) for r in map(json.loads, (tmp_path / "parts.out").open())]
    assert part_tags == whole_tags


# -- kept and shared indexes -------------------------------------------------------------------------


def test_successive_runs_into_a_disk_index_equal_one_process(tmp_path: Path) -> None:
    parts, everything = shards(tmp_path)
    single = one_process(tmp_path, everything)
    index = tmp_path / "index.sqlite"
    for path in parts:
        assert (
            main(
                ["scan", str(path), "--disk-path", str(index), "-o", str(tmp_path / f"{path.stem}.out"), "-q"]
            )
            == 0
        )
    out = tmp_path / "export.jsonl"
    assert main(["export", "--disk-path", str(index), "--clusters", str(out), "-q"]) == EXIT_OK
    assert clusters_of(out) == single
    assert len({m for c in single for m in c}) == len(make_crawl()[0])


def test_a_disk_index_in_use_is_refused_with_one_line(tmp_path: Path) -> None:
    parts, _ = shards(tmp_path)
    index = tmp_path / "index.sqlite"
    assert main(["scan", str(parts[0]), "--disk-path", str(index), "-o", str(tmp_path / "a.out"), "-q"]) == 0
    holder = sqlite3.connect(index)
    holder.execute("PRAGMA locking_mode=EXCLUSIVE")
    holder.execute("BEGIN IMMEDIATE")  # another process writing
    try:
        result = run_cli(
            "scan", str(parts[1]), "--disk-path", str(index), "-o", str(tmp_path / "b.out"), "-q"
        )
    finally:
        holder.close()
    err = result.stderr.decode()
    assert result.returncode == EXIT_ERROR and err.count("\n") == 1, err
    assert "in use by another process" in err


def test_rescan_of_a_kept_shard_counts_revisits_and_adds_nothing(tmp_path: Path) -> None:
    parts, _ = shards(tmp_path)
    index = tmp_path / "index.sqlite"
    for path in parts:
        assert (
            main(
                ["scan", str(path), "--disk-path", str(index), "-o", str(tmp_path / f"{path.stem}.out"), "-q"]
            )
            == 0
        )
    before = tmp_path / "before.jsonl"
    assert (
        main(
            [
                "export",
                "--disk-path",
                str(index),
                "--clusters",
                str(before),
                "--report",
                str(tmp_path / "r1.json"),
                "-q",
            ]
        )
        == 0
    )
    again = tmp_path / "again.out"
    result = run_cli("scan", str(parts[1]), "--disk-path", str(index), "-o", str(again))
    assert result.returncode == EXIT_OK, result.stderr.decode()
    first = tags(tmp_path / f"{parts[1].stem}.out")
    second = tags(again)
    assert set(second) == set(first)
    for url, tag in second.items():
        assert tag.pop("revisit") is True
        # tagged as first checked (the representative may have changed since: a later original)
        assert tag["status"] == first[url]["status"], url
    after = tmp_path / "after.jsonl"
    assert (
        main(
            [
                "export",
                "--disk-path",
                str(index),
                "--clusters",
                str(after),
                "--report",
                str(tmp_path / "r2.json"),
                "-q",
            ]
        )
        == 0
    )
    assert after.read_bytes() == before.read_bytes()  # nothing added, nothing moved
    totals = [json.loads((tmp_path / f"r{n}.json").read_text())["totals"] for n in (1, 2)]
    assert totals[1]["revisits"] - totals[0]["revisits"] == len(second)
    for key in ("unique", "exact", "near", "clusters"):
        assert totals[1][key] == totals[0][key], key
    assert f"{len(second)} revisits" in result.stderr.decode()


def test_export_from_a_kept_index_equals_the_scan_export(tmp_path: Path) -> None:
    """A scan's own exports and ``export`` from its index afterwards are the same files; a
    directory names a crawl's JOBDIR (its neardup.sqlite)."""
    _, everything = shards(tmp_path)
    jobdir = tmp_path / "job"
    jobdir.mkdir()
    scan = [str(tmp_path / f"scan.{kind}.jsonl") for kind in ("clusters", "pairs")]
    code = main(["scan", str(everything), "-s", f"JOBDIR={jobdir}", "-o", str(tmp_path / "o.jsonl"),
                 "--clusters", scan[0], "--pairs", scan[1], "-q"])  # fmt: skip
    assert code == EXIT_OK and (jobdir / "neardup.sqlite").is_file()
    exported = [str(tmp_path / f"export.{kind}.jsonl") for kind in ("clusters", "pairs")]
    assert (
        main(["export", "--disk-path", str(jobdir), "--clusters", exported[0], "--pairs", exported[1], "-q"])
        == 0
    )
    for a, b in zip(scan, exported, strict=True):
        assert Path(a).read_bytes() == Path(b).read_bytes()


def test_export_reads_the_parameters_the_index_recorded(tmp_path: Path) -> None:
    _, everything = shards(tmp_path)
    index = tmp_path / "index.sqlite"
    args = ["--disk-path", str(index), "--threshold", "0.9", "-s", "NEARDUP_SEED=7"]
    assert (
        main(
            [
                "scan",
                str(everything),
                *args,
                "-o",
                str(tmp_path / "o.jsonl"),
                "--clusters",
                str(tmp_path / "a.jsonl"),
                "-q",
            ]
        )
        == 0
    )
    assert main(["export", "--disk-path", str(index), "--clusters", str(tmp_path / "b.jsonl"), "-q"]) == 0
    assert (tmp_path / "a.jsonl").read_bytes() == (tmp_path / "b.jsonl").read_bytes()


def test_parameter_mismatch_is_refused_with_one_line(tmp_path: Path) -> None:
    parts, _ = shards(tmp_path)
    index = tmp_path / "index.sqlite"
    assert main(["scan", str(parts[0]), "--disk-path", str(index), "-o", str(tmp_path / "a.out"), "-q"]) == 0
    for extra in (["--threshold", "0.9"], ["-s", "NEARDUP_SHINGLE_SIZE=4"]):
        out = tmp_path / "b.out"
        result = run_cli("scan", str(parts[1]), "--disk-path", str(index), *extra, "-o", str(out))
        err = result.stderr.decode()
        assert result.returncode == EXIT_ERROR, err
        assert err.count("\n") == 1 and "built with other parameters" in err, err
        assert not out.exists()


def test_bad_index_options_name_themselves(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    parts, _ = shards(tmp_path)
    cases = {
        ("-s", "NEARDUP_THRESHHOLD=0.8"): "unknown setting NEARDUP_THRESHHOLD",
        ("-s", "NEARDUP_THRESHOLD=high"): "-s NEARDUP_THRESHOLD",
        ("-s", "NEARDUP_THRESHOLD=2"): "-s NEARDUP_THRESHOLD",
        ("--storage", "disk"): "--disk-path",
        ("--storage", "redis", "--redis-url", "http://x"): "--redis-url",
        ("--storage", "redis-cluster", "--redis-prefix", "{a}"): "--redis-prefix",
    }
    for extra, named in cases.items():
        assert main(["scan", str(parts[0]), *extra, "-o", str(tmp_path / "o.jsonl")]) == EXIT_ERROR
        err = capsys.readouterr().err
        assert named in err and err.count("\n") == 1, err
    assert main(["export", "--disk-path", str(tmp_path / "none.sqlite")]) == EXIT_ERROR
    assert "no index at" in capsys.readouterr().err


# -- Redis and Redis Cluster ----------------------------------------------------------------------


def test_processes_at_once_into_one_redis_index(tmp_path: Path, redis_url: tuple[str, str]) -> None:
    url, prefix = redis_url
    parts, everything = shards(tmp_path)
    index = ["--storage", "redis", "--redis-url", url, "--redis-prefix", prefix]
    concurrent_scans(parts, index, tmp_path)
    out = tmp_path / "export.jsonl"
    assert main(["export", *index, "--clusters", str(out), "-q"]) == EXIT_OK
    assert clusters_of(out) == one_process(tmp_path, everything)
    # a shard again: every page a revisit, the index unchanged
    assert main(["scan", str(parts[0]), *index, "-o", str(tmp_path / "again.out"), "-q"]) == EXIT_OK
    assert all(tag.get("revisit") for tag in tags(tmp_path / "again.out").values())
    again = tmp_path / "export2.jsonl"
    assert main(["export", *index, "--clusters", str(again), "-q"]) == EXIT_OK
    assert clusters_of(again) == clusters_of(out)
    # the same settings names as a crawl
    settings = [
        "-s",
        "NEARDUP_STORAGE=redis",
        "-s",
        f"NEARDUP_REDIS_URL={url}",
        "-s",
        f"NEARDUP_REDIS_PREFIX={prefix}",
    ]
    assert main(["export", *settings, "--clusters", str(again), "-q"]) == EXIT_OK
    assert clusters_of(again) == clusters_of(out)


def test_processes_at_once_into_one_redis_cluster_index(
    tmp_path: Path, redis_cluster_url: tuple[str, str]
) -> None:
    url, prefix = redis_cluster_url
    parts, everything = shards(tmp_path)
    index = ["--storage", "redis-cluster", "--redis-url", url, "--redis-prefix", prefix]
    concurrent_scans(parts, index, tmp_path)
    out = tmp_path / "export.jsonl"
    assert main(["export", *index, "--clusters", str(out), "-q"]) == EXIT_OK
    assert clusters_of(out) == one_process(tmp_path, everything)
    result = run_cli("scan", str(parts[2]), *index, "--threshold", "0.7", "-o", str(tmp_path / "x.out"))
    err = result.stderr.decode()
    assert result.returncode == EXIT_ERROR and err.count("\n") == 1 and "other parameters" in err, err


def test_a_damaged_input_is_reported_and_the_run_goes_on(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    parts, _ = shards(tmp_path)
    bad = tmp_path / "bad.warc"
    bad.write_bytes(b"WARC/1.0\r\nWARC-Type: response\r\nContent-Length: 99999\r\n\r\ncut short")
    out = tmp_path / "out.jsonl"
    assert main(["scan", str(parts[0]), str(bad), str(parts[1]), "-o", str(out)]) == EXIT_ERROR
    err = capsys.readouterr().err
    assert "[2/3] " in err and "(stopped by an error)" in err and "[3/3] " in err
    urls = [json.loads(line)["url"] for line in out.read_text().splitlines()]
    expected = [json.loads(line)["url"] for part in parts[:2] for line in part.read_text().splitlines()]
    assert urls == expected


def test_the_progress_line_names_the_input() -> None:
    import io

    from neardup_scrapy.cli.progress import Progress

    progress = Progress(io.StringIO(), 100, enabled=False, label="[2/14] crawl-20261103.warc.gz  ")
    progress.update(5, 50, 1)
    assert progress.line().startswith("[2/14] crawl-20261103.warc.gz  [")


def test_a_run_resumed_from_the_start_counts_every_page_once(tmp_path: Path) -> None:
    """A run stopped halfway (here: given the first half) and run again over the whole input
    leaves the index one whole run leaves: the pages done before are revisits."""
    records, _expected = make_crawl()
    whole = write_jsonl(tmp_path / "all.jsonl", records)
    half = write_jsonl(tmp_path / "half.jsonl", records[: len(records) // 2])
    once, resumed = tmp_path / "once.sqlite", tmp_path / "resumed.sqlite"
    assert main(["scan", str(whole), "--disk-path", str(once), "-o", str(tmp_path / "1.out"), "-q"]) == 0
    for path in (half, whole):
        assert (
            main(["scan", str(path), "--disk-path", str(resumed), "-o", str(tmp_path / "2.out"), "-q"]) == 0
        )
    exports = []
    for index in (once, resumed):
        report = tmp_path / f"{index.stem}.json"
        clusters = tmp_path / f"{index.stem}.clusters.jsonl"
        assert (
            main(
                [
                    "export",
                    "--disk-path",
                    str(index),
                    "--report",
                    str(report),
                    "--clusters",
                    str(clusters),
                    "-q",
                ]
            )
            == 0
        )
        exports.append((json.loads(report.read_text())["totals"], clusters.read_bytes()))
    (totals_once, clusters_once), (totals_resumed, clusters_resumed) = exports
    assert clusters_resumed == clusters_once
    for key in ("unique", "exact", "near", "skipped", "clusters"):
        assert totals_resumed[key] == totals_once[key], key
    assert totals_resumed["revisits"] == totals_once["revisits"] + len(records) // 2
