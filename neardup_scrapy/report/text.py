"""A one-screen plain-text summary of a report, for the terminal and for logs.

Host names are printed with their invisible characters (controls, bidi overrides …) escaped
(:func:`~neardup_scrapy.report.escapes.shown`): a terminal never receives an escape sequence or a
reordering from a crawled address.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from . import _fmt
from .escapes import shown

#: Host rows and mirror rows shown at most, whatever the line budget.
MAX_HOST_ROWS = 10
MAX_MIRROR_ROWS = 5
#: Bins of the cluster-size line (the last one gathers the larger sizes).
MAX_SIZE_BINS = 7
#: Host names are cut to this many characters so the table stays narrow.
HOST_WIDTH = 36


def _map(value: Any) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


def _list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


def _table(rows: Sequence[Sequence[str]], right: Sequence[bool]) -> list[str]:
    """Align ``rows`` (the first is the header) in columns; numbers right-aligned."""
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    out = []
    for row in rows:
        cells = [cell.rjust(w) if r else cell.ljust(w) for cell, w, r in zip(row, widths, right, strict=True)]
        out.append("  ".join(cells).rstrip())
    return out


def _block(
    title: list[str], rows: list[str], total: int, limit: int, *, cap: int, what: tuple[str, str]
) -> list[str]:
    """``title`` plus up to ``cap`` of ``rows`` that fit in ``limit`` lines, and a "N more" line if cut.

    ``rows`` may hold one row more than ``cap``: it is shown instead of a "1 more" line.
    """
    if limit <= len(title) or not rows:
        return []
    if total <= len(rows) <= cap + 1 and len(title) + len(rows) <= limit:
        return title + rows
    shown = min(len(rows), cap, limit - len(title) - 1)
    if shown <= 0:
        return []
    hidden = total - shown
    return [*title, *rows[:shown], f"  ... {hidden:,} more {what[0] if hidden == 1 else what[1]}"]


def _host_rows(hosts: list[Any]) -> list[str]:
    header = ["host", "pages", "unique", "exact", "near", "skipped", "dup", "mirror of"]
    rows = [header]
    for item in hosts:
        h = _map(item)
        rows.append(
            [
                _fmt.clip(shown(str(h.get("host", ""))), HOST_WIDTH),
                _fmt.count(h.get("pages")),
                _fmt.count(h.get("unique")),
                _fmt.count(h.get("exact")),
                _fmt.count(h.get("near")),
                _fmt.count(h.get("skipped")),
                _fmt.share(h.get("duplicate_share")),
                _fmt.clip(shown(str(h.get("mirror_of") or "-")), HOST_WIDTH),
            ]
        )
    return _table(rows, [False, True, True, True, True, True, True, False])


def _mirror_rows(mirrors: list[Any]) -> list[str]:
    rows = []
    for item in mirrors:
        m = _map(item)
        rows.append(
            [
                "  " + _fmt.clip(shown(str(m.get("host", ""))), HOST_WIDTH),
                "->",
                _fmt.clip(shown(str(m.get("mirror_of", ""))), HOST_WIDTH),
                f"{_fmt.count(m.get('duplicate_pages'))} of {_fmt.count(m.get('pages'))} pages",
                f"({_fmt.share(m.get('duplicate_share'))})",
            ]
        )
    return _table(rows, [False, False, False, True, True]) if rows else []


def _sizes_line(report: Mapping[str, Any]) -> str | None:
    bins = _fmt.size_bins(report.get("cluster_sizes"), max_exact=6)
    if not bins:
        return None
    clusters = _list(report.get("clusters"))
    sizes = [int(k) for k in _map(report.get("cluster_sizes")) if str(k).isdigit()]
    largest = max([_fmt.as_int(_map(c).get("size")) for c in clusters[:1]] + sizes)
    if len(bins) > MAX_SIZE_BINS:
        rest = sum(n for _, n in bins[MAX_SIZE_BINS - 1 :])
        lower = bins[MAX_SIZE_BINS - 1][0].split("-")[0].rstrip("+")
        bins = [*bins[: MAX_SIZE_BINS - 1], (f"{lower}+", rest)]
    parts = "  ".join(f"{label}: {n:,}" for label, n in bins if n)
    return f"  cluster sizes  {parts}  (largest {largest:,})"


def format_summary(report: Mapping[str, Any], max_lines: int = 25) -> list[str]:
    """Summarise a report in at most ``max_lines`` aligned lines (no trailing newlines).

    Totals come first, then the cluster-size histogram, the hosts with most pages and the
    mirror hosts; the host and mirror tables are cut (with a "... N more" line) so the
    summary fits whatever the size of the crawl. The CLI prints these lines on stderr and
    the Scrapy extension logs them when the spider closes.

    Args:
        report: a ``neardup-report/1`` report.
        max_lines: the most lines returned (at least 1).

    Returns:
        The lines, each under about 100 characters.
    """
    max_lines = max(int(max_lines), 1)
    totals = _map(report.get("totals"))
    pages = _fmt.as_int(totals.get("pages"))
    skipped = _fmt.as_int(totals.get("skipped"))
    revisits = _fmt.as_int(totals.get("revisits"))
    checked = pages - skipped - revisits
    dups = _fmt.as_int(totals.get("exact")) + _fmt.as_int(totals.get("near"))
    total_bytes = _fmt.as_int(totals.get("bytes"))
    saved = _fmt.as_int(totals.get("bytes_saved"))
    hosts = _list(report.get("hosts"))
    hosts_total = max(_fmt.as_int(report.get("hosts_total")), len(hosts))

    lines = [
        f"neardup: {_fmt.plural(pages, 'page')} from {_fmt.plural(hosts_total, 'host')}; "
        f"{_fmt.nbytes(total_bytes)} checked, {_fmt.nbytes(saved)} in duplicates "
        f"({_fmt.percent(saved, total_bytes)})",
        f"  unique {_fmt.count(totals.get('unique'))}  exact {_fmt.count(totals.get('exact'))}  "
        f"near {_fmt.count(totals.get('near'))}  skipped {skipped:,}  revisits {revisits:,}  "
        f"dropped {_fmt.count(totals.get('dropped'))}",
        f"  duplicates {dups:,} of {checked:,} checked {'page' if checked == 1 else 'pages'} "
        f"({_fmt.percent(dups, checked)}) in {_fmt.plural(_fmt.as_int(totals.get('clusters')), 'cluster')}",
    ]
    sizes = _sizes_line(report)
    if sizes:
        lines.append(sizes)
    rules = _map(report.get("url_rules"))
    if _fmt.as_int(rules.get("valid")) or _fmt.as_int(rules.get("saved")):
        lines.append(
            f"  url rules: {_fmt.count(rules.get('valid'))} valid on "
            f"{_fmt.plural(_fmt.as_int(rules.get('hosts_total')), 'host')}, "
            f"{_fmt.plural(_fmt.as_int(rules.get('saved')), 'request')} not downloaded"
        )
    errors = _fmt.as_int(totals.get("storage_errors"))
    if errors:
        lines.append(
            f"WARNING: {_fmt.plural(errors, 'page')} passed unchecked because the index store failed"
        )

    budget = max_lines - len(lines)
    mirrors = _list(report.get("mirrors"))
    mirror_title = [f"mirror hosts ({len(mirrors):,}):"]
    mirror_lines = _mirror_rows(mirrors[: MAX_MIRROR_ROWS + 1])
    # Keep room for a few mirror rows, give the hosts what is left, then give mirrors the rest.
    reserve = min(len(mirrors), 3) + 1 + (1 if len(mirrors) > 3 else 0) if mirrors else 0
    host_table = _host_rows(hosts[: MAX_HOST_ROWS + 1])
    host_block = _block(
        host_table[:1],
        host_table[1:],
        hosts_total,
        max(budget - reserve, 0),
        cap=MAX_HOST_ROWS,
        what=("host", "hosts"),
    )
    if len(host_block) < 3:  # a header with one row says little; leave the room to the mirrors
        host_block = []
    lines += host_block
    budget -= len(host_block)
    lines += _block(
        mirror_title,
        mirror_lines,
        len(mirrors),
        budget,
        cap=MAX_MIRROR_ROWS,
        what=("mirror host", "mirror hosts"),
    )
    return lines[:max_lines]
