"""What a scan read and did (:class:`ScanStats`), and the lines that tell it on stderr."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from .common import EXIT_INTERRUPTED, EXIT_OK, SUMMARY_LINES, TAG_KEY, plural

if TYPE_CHECKING:
    from neardup_scrapy.core.urlrules import UrlRuleLearner


@dataclass
class ScanStats:
    """What a scan read and did.

    Attributes:
        records: records read and written (or passed over) so far, in input order.
        pages: pages checked.
        duplicates: exact and near duplicates among them (revisits excepted).
        revisits: pages whose url the index had checked before (in this run or an earlier one
            into a kept index): tagged as they were then, counted once.
        problems: records that could not be used because of a defect of the input.
        problem_numbers: the first of their line or record numbers.
        reasons: records not checked, by reason (defects and non-pages alike).
        kept: records whose existing ``neardup`` key was kept (no ``--retag``).
        written: records written to OUTPUT.
        url_rules: the duplicate-url rules learnt from the pages' urls and verdicts.
    """

    records: int = 0
    pages: int = 0
    duplicates: int = 0
    problems: int = 0
    problem_numbers: list[int] = field(default_factory=list)
    reasons: Counter[str] = field(default_factory=Counter)
    kept: int = 0
    written: int = 0
    blank: int = 0
    url_rules: UrlRuleLearner | None = None
    revisits: int = 0

    def add(self, other: ScanStats) -> None:
        """Add the counts of ``other`` (the next input of the run) and take its rule learner."""
        for name in ("records", "pages", "duplicates", "problems", "kept", "written", "blank", "revisits"):
            setattr(self, name, getattr(self, name) + getattr(other, name))
        self.problem_numbers += other.problem_numbers[: max(0, 100 - len(self.problem_numbers))]
        self.reasons.update(other.reasons)
        self.url_rules = other.url_rules or self.url_rules


@dataclass
class InputResult:
    """What scanning one input did: its counts, its exit status, whether the run stops."""

    name: str
    stats: ScanStats
    elapsed: float
    status: int = EXIT_OK
    stop: bool = False


def input_summary(result: InputResult, number: int, inputs: int) -> str:
    """The line printed after each input of a run of several."""
    from neardup_scrapy.report.escapes import shown as escaped

    stats = result.stats
    rate = stats.pages / result.elapsed if result.elapsed > 0 else 0.0
    text = (
        f"[{number}/{inputs}] {escaped(result.name)}: {plural(stats.records, 'record')}, "
        f"{plural(stats.pages, 'page')} checked in {result.elapsed:.1f} s ({rate:,.1f} pages/s): "
        f"{plural(stats.duplicates, 'duplicate')}, {plural(stats.revisits, 'revisit')}"
    )
    if stats.reasons:
        text += "; not checked: " + ", ".join(f"{n:,} {r}" for r, n in stats.reasons.most_common(3))
    if stats.problems:
        text += f"; {plural(stats.problems, 'unusable record')}"
    if result.status == EXIT_INTERRUPTED:
        text += " (interrupted)"
    elif result.status != EXIT_OK:
        text += " (stopped by an error)"
    return text


def _input_lines(stats: ScanStats, elapsed: float) -> list[str]:
    rate = stats.pages / elapsed if elapsed > 0 else 0.0
    text = (
        f"input: {plural(stats.records, 'record')}, {plural(stats.pages, 'page')} checked in "
        f"{elapsed:.1f} s ({rate:,.1f} pages/s)"
    )
    if stats.revisits:
        text += f", {plural(stats.revisits, 'revisit')} (urls the index had checked before; counted once)"
    if stats.blank:
        text += f", {stats.blank:,} blank {'line' if stats.blank == 1 else 'lines'}"
    if stats.kept:
        text += f", {stats.kept:,} kept their '{TAG_KEY}' (--retag replaces it)"
    lines = [text]
    if stats.reasons:
        parts = [f"{count:,} {reason}" for reason, count in stats.reasons.most_common(6)]
        more = len(stats.reasons) - 6
        line = "not checked: " + ", ".join(parts) + (f", {more} more reasons" if more > 0 else "")
        if stats.problems:
            first = ", ".join(str(n) for n in stats.problem_numbers[:5])
            more_numbers = ", ..." if stats.problems > 5 else ""
            line += f" ({plural(stats.problems, 'unusable record')}: {first}{more_numbers})"
        lines.append(line)
    return lines


def _wrote(written: list[str]) -> list[str]:
    if not written:
        return []
    return ["wrote: " + ", ".join("<stdout>" if name == "-" else name for name in written)]


def scan_summary(
    report: dict[str, Any],
    stats: ScanStats,
    elapsed: float,
    *,
    index: str | None,
    inputs: int,
    written: list[str],
) -> list[str]:
    """The end-of-scan summary: the report's, then the inputs' counts and the files written.

    Args:
        index: the kept index's description (``None`` for an index in memory).
    """
    from neardup_scrapy.report.text import format_summary

    lines = format_summary(report, max_lines=SUMMARY_LINES - 3)
    if index is not None:
        lines.insert(0, f"index: {index} (the totals cover every scan and crawl into it)")
    if inputs > 1:
        lines.append(f"inputs: {inputs:,} read")
    return lines + _input_lines(stats, elapsed) + _wrote(written)


def export_summary(report: dict[str, Any], index: str, written: list[str]) -> list[str]:
    """The summary of ``export``: the index, the report's summary and the files written."""
    from neardup_scrapy.report.text import format_summary

    lines = [f"index: {index}", *format_summary(report, max_lines=SUMMARY_LINES - 2)]
    return lines + _wrote(written)
