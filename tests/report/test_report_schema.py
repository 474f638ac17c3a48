"""The neardup-report/1 validator: valid reports pass, each kind of bad field is named."""

from __future__ import annotations

import copy
import json
from collections.abc import Callable
from typing import Any

import pytest

from neardup_scrapy.report.schema import REPORT_FORMAT, ReportFormatError, validate_report
from neardup_scrapy.report.synthetic import synthetic_report


def small_report() -> dict[str, Any]:
    return synthetic_report(pages=500, hosts=20, max_hosts=10, max_clusters=5, max_members=4, max_examples=2)


def test_synthetic_report_is_valid() -> None:
    validate_report(small_report())
    validate_report(synthetic_report())


def test_report_survives_json_round_trip() -> None:
    validate_report(json.loads(json.dumps(small_report())))


def test_detector_report_is_valid() -> None:
    from neardup_scrapy.core import REPORT_FORMAT as CORE_FORMAT
    from neardup_scrapy.core import NearDupDetector

    assert CORE_FORMAT == REPORT_FORMAT
    det = NearDupDetector()
    text = " ".join(f"word{i} alpha beta gamma" for i in range(80))
    det.check("http://127.0.0.1/a", text=text)
    det.check("http://127.0.0.1/b", text=text)
    det.check("http://127.0.0.2/c", text=text.replace("word7 ", "other "))
    det.skip("http://127.0.0.2/d", reason="non-html")
    report = json.loads(json.dumps(det.report()))
    validate_report(report)


def test_empty_detector_report_is_valid() -> None:
    from neardup_scrapy.core import NearDupDetector

    validate_report(json.loads(json.dumps(NearDupDetector().report())))


def test_unknown_keys_are_allowed() -> None:
    report = small_report()
    report["future_field"] = {"x": 1}
    report["hosts"][0]["extra"] = "y"
    validate_report(report)


def test_nullable_fields_accept_null() -> None:
    report = small_report()
    report["hosts"][0]["mirror_of"] = None
    report["clusters"][0]["members"][0].update(similarity=None, hamming=None)
    report["examples"][0].update(similarity=None, hamming=None)
    validate_report(report)


def _set(path: list[Any], value: Any) -> Callable[[dict[str, Any]], None]:
    def mutate(report: dict[str, Any]) -> None:
        target: Any = report
        for key in path[:-1]:
            target = target[key]
        target[path[-1]] = value

    return mutate


def _delete(path: list[Any]) -> Callable[[dict[str, Any]], None]:
    def mutate(report: dict[str, Any]) -> None:
        target: Any = report
        for key in path[:-1]:
            target = target[key]
        del target[path[-1]]

    return mutate


INVALID: list[tuple[str, Callable[[dict[str, Any]], None], str]] = [
    ("wrong format", _set(["format"], "neardup-report/2"), "format"),
    ("missing format", _delete(["format"]), "format"),
    ("generated_at not a time", _set(["generated_at"], "yesterday"), "generated_at"),
    ("generated_at not a string", _set(["generated_at"], 12), "generated_at"),
    ("tool not an object", _set(["tool"], "neardup"), "tool"),
    ("tool.version missing", _delete(["tool", "version"]), "tool.version"),
    ("params a list", _set(["params"], []), "params"),
    ("totals missing", _delete(["totals"]), "totals"),
    ("totals.pages negative", _set(["totals", "pages"], -1), "totals.pages"),
    ("totals.exact a float", _set(["totals", "exact"], 1.5), "totals.exact"),
    ("totals.near a bool", _set(["totals", "near"], True), "totals.near"),
    ("totals.bytes_saved a string", _set(["totals", "bytes_saved"], "12"), "totals.bytes_saved"),
    ("totals.storage_errors missing", _delete(["totals", "storage_errors"]), "totals.storage_errors"),
    ("hosts not a list", _set(["hosts"], {}), "hosts"),
    ("host entry not an object", _set(["hosts", 1], "example.org"), "hosts[1]"),
    ("host name missing", _delete(["hosts", 2, "host"]), "hosts[2].host"),
    ("host pages a string", _set(["hosts", 0, "pages"], "3"), "hosts[0].pages"),
    ("duplicate_share above 1", _set(["hosts", 0, "duplicate_share"], 1.5), "hosts[0].duplicate_share"),
    ("duplicate_share NaN", _set(["hosts", 0, "duplicate_share"], float("nan")), "hosts[0].duplicate_share"),
    ("host mirror_of a number", _set(["hosts", 0, "mirror_of"], 3), "hosts[0].mirror_of"),
    ("hosts_total missing", _delete(["hosts_total"]), "hosts_total"),
    ("cluster_sizes a list", _set(["cluster_sizes"], [1, 2]), "cluster_sizes"),
    ("cluster size key 1", _set(["cluster_sizes", "1"], 4), "cluster_sizes['1']"),
    ("cluster size key not a number", _set(["cluster_sizes", "big"], 4), "cluster_sizes['big']"),
    ("cluster size count negative", _set(["cluster_sizes", "2"], -4), "cluster_sizes['2']"),
    ("clusters not a list", _set(["clusters"], None), "clusters"),
    ("cluster size zero", _set(["clusters", 0, "size"], 0), "clusters[0].size"),
    (
        "cluster representative missing",
        _delete(["clusters", 0, "representative"]),
        "clusters[0].representative",
    ),
    ("cluster hosts not strings", _set(["clusters", 1, "hosts"], [1]), "clusters[1].hosts[0]"),
    (
        "member status unknown",
        _set(["clusters", 0, "members", 1, "status"], "dup"),
        "clusters[0].members[1].status",
    ),
    ("member url missing", _delete(["clusters", 0, "members", 1, "url"]), "clusters[0].members[1].url"),
    (
        "member similarity a string",
        _set(["clusters", 0, "members", 1, "similarity"], "0.9"),
        "clusters[0].members[1].similarity",
    ),
    (
        "member hamming negative",
        _set(["clusters", 0, "members", 1, "hamming"], -1),
        "clusters[0].members[1].hamming",
    ),
    ("mirrors not a list", _set(["mirrors"], "a"), "mirrors"),
    ("mirror host missing", _delete(["mirrors", 0, "mirror_of"]), "mirrors[0].mirror_of"),
    ("mirror share negative", _set(["mirrors", 0, "duplicate_share"], -0.1), "mirrors[0].duplicate_share"),
    ("examples not a list", _set(["examples"], {}), "examples"),
    ("example a missing", _delete(["examples", 0, "a"]), "examples[0].a"),
    ("example b text not a string", _set(["examples", 1, "b", "text"], None), "examples[1].b.text"),
    ("example status missing", _delete(["examples", 0, "status"]), "examples[0].status"),
]


@pytest.mark.parametrize(("case", "mutate", "path"), INVALID, ids=[c[0] for c in INVALID])
def test_invalid_field_is_named(case: str, mutate: Callable[[dict[str, Any]], None], path: str) -> None:
    report = small_report()
    report["mirrors"] = report["mirrors"] or [
        {"host": "b", "mirror_of": "a", "pages": 3, "duplicate_pages": 3, "duplicate_share": 1.0}
    ]
    bad = copy.deepcopy(report)
    mutate(bad)
    with pytest.raises(ReportFormatError) as info:
        validate_report(bad)
    assert info.value.path == path, case
    assert str(info.value).startswith(path)


@pytest.mark.parametrize("data", [None, [], "report", 3])
def test_not_an_object(data: Any) -> None:
    with pytest.raises(ReportFormatError, match="expected an object"):
        validate_report(data)


def test_error_message_is_short_for_huge_values() -> None:
    report = small_report()
    report["hosts"][0]["pages"] = "x" * 100_000
    with pytest.raises(ReportFormatError) as info:
        validate_report(report)
    assert len(str(info.value)) < 200
