"""The report format ``neardup-report/1`` and a dependency-free validator for it.

A report is one JSON object, written by ``NearDupDetector.report()``, by the Scrapy extension
at spider close and by ``neardup-scrapy scan --report``. The HTML report is rendered from it
alone. Every list in it is capped, so its size does not grow with the crawl.

Top level (all keys required; unknown keys are allowed and ignored, for forward compatibility)::

    format          "neardup-report/1"
    generated_at    string, ISO-8601 UTC time, e.g. "2025-01-31T12:00:00Z"
    tool            {"name": string, "version": string}
    params          object: the detector parameters (DetectorParams.as_dict())
    totals          object of integers >= 0:
                      pages         pages seen: unique + exact + near + skipped + revisits
                      unique        pages that represent a cluster (its first page, or the
                                    original that replaced a copy checked before it)
                      exact         pages with the same main text as their representative
                      near          pages near-identical to their representative
                      skipped       pages tagged but not checked (too large, no text, ...)
                      revisits      pages whose url was checked before (optional: reports
                                    written before it was added have none)
                      dropped       pages or items the crawl dropped as duplicates
                      clusters      clusters with at least two pages
                      mirror_hosts  hosts confirmed as mirrors of another host
                      bytes         body bytes of all checked pages
                      bytes_saved   body bytes of the duplicate pages
                      storage_errors pages passed through because the index store failed
    hosts           list, most pages first, capped (hosts_total gives the full count):
                      {"host": string, "pages", "unique", "exact", "near", "skipped": int >= 0,
                       "revisits": int >= 0 (optional),
                       "duplicate_share": number 0..1 (exact + near over checked pages),
                       "mirror_of": string or null}
    hosts_total     int >= 0: number of hosts seen
    cluster_sizes   object {"<size>": count}: histogram over all clusters of size >= 2
                      (keys are decimal integers >= 2, counts int >= 0)
    clusters        list, largest first, capped:
                      {"id": string, "size": int >= 1, "representative": string (url),
                       "hosts": [string, ...],
                       "members": [{"url": string,
                                    "status": "unique" | "exact" | "near" | "skipped",
                                    "similarity": number 0..1 or null,
                                    "hamming": int >= 0 or null}, ...]}
                      (members are capped too; the representative comes first)
    mirrors         list, one entry per (mirror host, origin host) pair: {"host": string,
                           "mirror_of": string, "pages": int >= 0 (the mirror's pages),
                           "duplicate_pages": int >= 0 (documents it shares with the origin),
                           "duplicate_share": number 0..1 (of the mirror's documents)}
    examples        list of near-duplicate pairs with their main-text excerpts:
                      {"status": string, "similarity": number 0..1 or null,
                       "hamming": int >= 0 or null,
                       "a": {"url": string, "text": string},   (the cluster's representative)
                       "b": {"url": string, "text": string}}   (the duplicate)

Integers are JSON integers (``true``/``false`` are not accepted as numbers) no larger than
2**53 - 1 (the largest integer every JSON reader holds exactly); numbers may be integers or
floats, never NaN or Infinity (they are not JSON). :func:`validate_report` checks all of the
above and raises :class:`ReportFormatError` naming the first bad field as a path such as
``hosts[3].pages``. :func:`report_json` writes a report as strict JSON, and :func:`parse_report`
reads one, refusing NaN and Infinity.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from typing import Any

REPORT_FORMAT = "neardup-report/1"
STATUSES = ("unique", "exact", "near", "skipped")

TOTALS_KEYS = (
    "pages",
    "unique",
    "exact",
    "near",
    "skipped",
    "dropped",
    "clusters",
    "mirror_hosts",
    "bytes",
    "bytes_saved",
    "storage_errors",
)
TOP_LEVEL_KEYS = (
    "format",
    "generated_at",
    "tool",
    "params",
    "totals",
    "hosts",
    "hosts_total",
    "cluster_sizes",
    "clusters",
    "mirrors",
    "examples",
)

#: The largest integer a report may hold: every JSON reader (JavaScript's too) holds it exactly.
MAX_INTEGER = 2**53 - 1

_ISO_UTC = re.compile(r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:?\d{2})$")
_SIZE_KEY = re.compile(r"^[0-9]{1,16}$")


class ReportFormatError(ValueError):
    """The data is not a valid ``neardup-report/1`` report.

    Attributes:
        path: where the bad field is, e.g. ``clusters[2].members[0].status`` (``""`` for the
            whole document).
        problem: what is wrong with it.
    """

    def __init__(self, path: str, problem: str) -> None:
        self.path = path
        self.problem = problem
        super().__init__(f"{path or 'report'}: {problem}")


def _join(path: str, key: str | int) -> str:
    if isinstance(key, int):
        return f"{path}[{key}]"
    return f"{path}.{key}" if path else key


def _object(value: Any, path: str) -> Mapping[str, Any]:
    if not isinstance(value, Mapping):
        raise ReportFormatError(path, f"expected an object, got {_describe(value)}")
    return value


def _field(obj: Mapping[str, Any], key: str, path: str) -> Any:
    if key not in obj:
        raise ReportFormatError(_join(path, key), "missing")
    return obj[key]


def _list(value: Any, path: str) -> Sequence[Any]:
    if not isinstance(value, list):
        raise ReportFormatError(path, f"expected a list, got {_describe(value)}")
    return value


def _string(value: Any, path: str, *, nullable: bool = False) -> None:
    if value is None and nullable:
        return
    if not isinstance(value, str):
        expected = "a string or null" if nullable else "a string"
        raise ReportFormatError(path, f"expected {expected}, got {_describe(value)}")


def _describe(value: Any) -> str:
    if isinstance(value, int) and not isinstance(value, bool) and abs(value) > MAX_INTEGER:
        return f"an integer of {len(str(abs(value)))} digits" if abs(value) < 10**4000 else "a huge integer"
    text = repr(value)
    if len(text) > 60:
        text = text[:57] + "..."
    return f"{type(value).__name__} {text}"


def _count(value: Any, path: str, *, nullable: bool = False, minimum: int = 0) -> None:
    if value is None and nullable:
        return
    if isinstance(value, bool) or not isinstance(value, int) or not minimum <= value <= MAX_INTEGER:
        expected = f"an integer in [{minimum}, 2**53 - 1]" + (" or null" if nullable else "")
        raise ReportFormatError(path, f"expected {expected}, got {_describe(value)}")


def _share(value: Any, path: str, *, nullable: bool = False) -> None:
    if value is None and nullable:
        return
    if (
        isinstance(value, bool)
        or not isinstance(value, (int, float))
        or not 0.0 <= value <= 1.0  # also rejects NaN
    ):
        expected = "a number in [0, 1]" + (" or null" if nullable else "")
        raise ReportFormatError(path, f"expected {expected}, got {_describe(value)}")


def _counts(obj: Mapping[str, Any], keys: Sequence[str], path: str) -> None:
    for key in keys:
        _count(_field(obj, key, path), _join(path, key))


def _page_ref(value: Any, path: str) -> None:
    ref = _object(value, path)
    _string(_field(ref, "url", path), _join(path, "url"))
    _string(_field(ref, "text", path), _join(path, "text"))


def validate_report(data: Any) -> None:
    """Check that ``data`` is a ``neardup-report/1`` report (see the module docstring).

    Args:
        data: the decoded JSON document.

    Raises:
        ReportFormatError: the first field that is missing or has a wrong type or value; its
            ``path`` names it (``hosts[3].pages``).
    """
    top = _object(data, "")
    fmt = _field(top, "format", "")
    if fmt != REPORT_FORMAT:
        raise ReportFormatError("format", f"expected {REPORT_FORMAT!r}, got {_describe(fmt)}")
    generated = _field(top, "generated_at", "")
    _string(generated, "generated_at")
    if not _ISO_UTC.match(generated):
        raise ReportFormatError("generated_at", f"expected an ISO-8601 time, got {_describe(generated)}")

    tool = _object(_field(top, "tool", ""), "tool")
    _string(_field(tool, "name", "tool"), "tool.name")
    _string(_field(tool, "version", "tool"), "tool.version")
    _object(_field(top, "params", ""), "params")

    totals = _object(_field(top, "totals", ""), "totals")
    _counts(totals, TOTALS_KEYS, "totals")
    if "revisits" in totals:
        _count(totals["revisits"], "totals.revisits")

    for i, item in enumerate(_list(_field(top, "hosts", ""), "hosts")):
        path = f"hosts[{i}]"
        host = _object(item, path)
        _string(_field(host, "host", path), path + ".host")
        _counts(host, ("pages", "unique", "exact", "near", "skipped"), path)
        if "revisits" in host:
            _count(host["revisits"], path + ".revisits")
        _share(_field(host, "duplicate_share", path), path + ".duplicate_share")
        _string(_field(host, "mirror_of", path), path + ".mirror_of", nullable=True)
    _count(_field(top, "hosts_total", ""), "hosts_total")

    sizes = _object(_field(top, "cluster_sizes", ""), "cluster_sizes")
    for key, value in sizes.items():
        path = f"cluster_sizes[{key!r}]"
        if not isinstance(key, str) or not _SIZE_KEY.match(key) or not 2 <= int(key) <= MAX_INTEGER:
            raise ReportFormatError(
                path, "expected a key that is a cluster size, an integer in [2, 2**53 - 1]"
            )
        _count(value, path)

    for i, item in enumerate(_list(_field(top, "clusters", ""), "clusters")):
        path = f"clusters[{i}]"
        cluster = _object(item, path)
        _string(_field(cluster, "id", path), path + ".id")
        _count(_field(cluster, "size", path), path + ".size", minimum=1)
        _string(_field(cluster, "representative", path), path + ".representative")
        for j, host in enumerate(_list(_field(cluster, "hosts", path), path + ".hosts")):
            _string(host, f"{path}.hosts[{j}]")
        for j, member_item in enumerate(_list(_field(cluster, "members", path), path + ".members")):
            mpath = f"{path}.members[{j}]"
            member = _object(member_item, mpath)
            _string(_field(member, "url", mpath), mpath + ".url")
            status = _field(member, "status", mpath)
            if status not in STATUSES:
                raise ReportFormatError(
                    mpath + ".status", f"expected one of {', '.join(STATUSES)}, got {_describe(status)}"
                )
            _share(_field(member, "similarity", mpath), mpath + ".similarity", nullable=True)
            _count(_field(member, "hamming", mpath), mpath + ".hamming", nullable=True)

    for i, item in enumerate(_list(_field(top, "mirrors", ""), "mirrors")):
        path = f"mirrors[{i}]"
        mirror = _object(item, path)
        _string(_field(mirror, "host", path), path + ".host")
        _string(_field(mirror, "mirror_of", path), path + ".mirror_of")
        _counts(mirror, ("pages", "duplicate_pages"), path)
        _share(_field(mirror, "duplicate_share", path), path + ".duplicate_share")

    for i, item in enumerate(_list(_field(top, "examples", ""), "examples")):
        path = f"examples[{i}]"
        example = _object(item, path)
        _string(_field(example, "status", path), path + ".status")
        _share(_field(example, "similarity", path), path + ".similarity", nullable=True)
        _count(_field(example, "hamming", path), path + ".hamming", nullable=True)
        _page_ref(_field(example, "a", path), path + ".a")
        _page_ref(_field(example, "b", path), path + ".b")


def _json_default(value: Any) -> Any:
    item = getattr(value, "item", None)  # numpy scalars
    if callable(item):
        return item()
    raise TypeError(f"{type(value).__name__} is not JSON serialisable")


def report_json(report: Mapping[str, Any]) -> str:
    """A report as indented, strict JSON text (UTF-8 safe).

    Raises:
        ValueError: the report holds NaN or Infinity, which are not JSON.
    """
    text = json.dumps(report, indent=1, ensure_ascii=False, allow_nan=False, default=_json_default)
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:  # lone surrogates (e.g. in a crawled url): escape them as \uXXXX
        text = json.dumps(report, indent=1, allow_nan=False, default=_json_default)
    return text + "\n"


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a JSON number")


def parse_report(data: str | bytes) -> Any:
    """Decode a JSON report strictly: ``NaN``, ``Infinity`` and ``-Infinity`` are refused.

    Raises:
        ValueError: not JSON (``json.JSONDecodeError`` for syntax errors).
    """
    return json.loads(data, parse_constant=_no_constant)
