"""The scan loop: each record analysed (maybe in other processes), checked, tagged and written,
in input order.

A JSON record is written byte for byte with its ``neardup`` tag added before the closing brace;
an archive's HTML response record becomes one sidecar line (``url``, ``warc_record_id``,
``neardup``); a record that is not checked gets a ``skipped`` tag whose ``reason`` says why.
"""

from __future__ import annotations

import argparse
import contextlib
import json
from typing import TYPE_CHECKING, Any, BinaryIO

from .common import MAX_LINE_MESSAGES, PROG, TAG_KEY
from .outputs import OutputError
from .progress import Progress
from .summary import ScanStats

if TYPE_CHECKING:
    from neardup_scrapy.core.urlrules import UrlRuleLearner

    from .inputs import Record, Unit


def _url_rule_learner() -> UrlRuleLearner:
    from neardup_scrapy.core.urlrules import UrlRuleLearner

    return UrlRuleLearner()


def scan_records(
    args: argparse.Namespace,
    *,
    detector: Any,
    source: Any,
    out: BinaryIO | None,
    progress: Progress,
    stats: ScanStats,
) -> None:
    """Scan the opened input ``source`` into ``detector`` and ``out``, counting into ``stats``."""
    if stats.url_rules is None:  # made here, inside the scan's handling of Ctrl-C
        stats.url_rules = _url_rule_learner()
    tagger = _Tagger(args, detector, source, out is not None, progress, stats)
    try:
        _scan_loop(args, detector, source, out, progress, stats, tagger)
    finally:
        if tagger.waiting and stats.pages:
            progress.write("\n".join(tagger.waiting))


def _scan_loop(  # noqa: PLR0917
    args: argparse.Namespace,
    detector: Any,
    source: Any,
    out: BinaryIO | None,
    progress: Progress,
    stats: ScanStats,
    tagger: _Tagger,
) -> None:
    from .scanjobs import analysed, default_jobs

    write = out.write if out is not None else None
    show_progress = progress.enabled
    jobs = args.jobs or default_jobs()
    # a file has a size; standard input and pipes do not, and their reads may wait for a writer
    read_ahead = source.total is not None
    units = analysed(source.units, detector.params, args.max_body_bytes, jobs, read_ahead=read_ahead)
    for unit, record, analysis in units:
        reason = record.reason
        if reason is not None:
            line = tagger.skipped(unit, record, reason)
        else:
            line = tagger.page(unit, record, analysis)
        if line is not None and write is not None:
            try:
                write(line)
            except OSError as error:
                raise OutputError(error) from error
            stats.written += 1
        stats.records += 1
        if show_progress:
            progress.update(stats.pages, source.position(), stats.duplicates)


class _Tagger:
    """Checks one record or passes it over, counts it, and makes its output line."""

    def __init__(  # noqa: PLR0917
        self,
        args: argparse.Namespace,
        detector: Any,
        source: Any,
        writes: bool,
        progress: Progress,
        stats: ScanStats,
    ) -> None:
        from neardup_scrapy.core.urls import redact_url
        from neardup_scrapy.report.escapes import shown

        from .inputs.base import NO_BODY, TOO_LARGE
        from .inputs.detect import WACZ, WARC
        from .inputs.warc import is_html_response

        self.verbose: bool = args.verbose
        self.retag: bool = args.retag
        self.check = detector.check_analysis
        self.detector = detector
        self.source = source
        self.writes = writes
        self.archive = source.format in (WARC, WACZ)
        self.progress = progress
        self.stats = stats
        assert stats.url_rules is not None
        self.rules = stats.url_rules
        self.shown = 0
        #: Messages held back until a page has a body (an input with none gets one hint).
        self.waiting: list[str] = []
        self.escaped = shown
        self.redact_url = redact_url
        self.is_html_response = is_html_response
        self.no_body, self.too_large = NO_BODY, TOO_LARGE

    def skipped(self, unit: Unit, record: Record, reason: str) -> bytes | None:
        """Count a record not checked (for ``reason``), report a defect; its line tagged ``skipped``."""
        stats, number = self.stats, unit.number
        stats.reasons[reason.split(":", 1)[0]] += 1
        if reason == self.too_large and record.url:
            # a page, tagged skipped: counted as the crawl counts it (NEARDUP_MAX_BODY_BYTES)
            self.detector.skip(record.url, self.too_large)
        if record.problem:
            stats.problems += 1
            if len(stats.problem_numbers) < 100:
                stats.problem_numbers.append(number)
            if self.verbose or self.shown < MAX_LINE_MESSAGES:
                self.shown += 1
                message = f"{PROG}: {self.escaped(self.source.name)}:{number}: {self.escaped(reason)}"
                if not self.verbose and self.shown == MAX_LINE_MESSAGES:
                    message += f"\n{PROG}: further unusable records are counted but not shown (use -v)"
                # Until a page has a body, "no page body" waits: an input with none gets one hint.
                if reason == self.no_body and not stats.pages:
                    self.waiting.append(message)
                else:
                    self.progress.write(message)
        if not self.writes:
            return None
        if self.archive:
            return _sidecar(unit, skipped_tag(reason, None)) if self.is_html_response(unit) else None
        if not unit.payload:  # a line too long to read
            return json.dumps({"line": number, TAG_KEY: skipped_tag(reason, number)}).encode() + b"\n"
        if record.is_object and record.has_tag and not self.retag:
            stats.kept += 1
            return unit.payload.rstrip(b"\r\n") + b"\n"
        return _tagged_copy(unit.payload, record.is_object, skipped_tag(reason, number))

    def page(self, unit: Unit, record: Record, analysis: Any) -> bytes | None:
        """Check a page against the index, count its verdict; its line with the tag added."""
        assert record.url is not None and analysis is not None
        stats = self.stats
        if self.waiting:
            self.progress.write("\n".join(self.waiting))
            self.waiting.clear()
        verdict = self.check(record.url, analysis, nbytes=record.nbytes, canonical=record.canonical)
        stats.pages += 1
        if verdict.cluster:
            self.rules.observe(verdict.url, verdict.cluster)
            if verdict.canonical and verdict.canonical != verdict.url:
                self.rules.observe_same(verdict.url, verdict.canonical)
        if verdict.revisit:
            stats.revisits += 1
        elif verdict.status in ("exact", "near"):
            stats.duplicates += 1
            if self.verbose:
                self._show_duplicate(unit.number, record.url, verdict)
        if not self.writes:
            return None
        tag = verdict.to_dict()
        if verdict.revisit:  # tagged as it was when first checked, and marked
            tag["revisit"] = True
        if self.archive:
            return _sidecar(unit, tag)
        if record.has_tag and not self.retag:
            stats.kept += 1
            return unit.payload.rstrip(b"\r\n") + b"\n"
        if record.has_tag:
            return _tagged_copy(unit.payload, True, tag)
        # The record is written byte for byte; the tag goes before its closing brace.
        tag_bytes = json.dumps(tag, allow_nan=False).encode()
        return b"".join((unit.payload.rstrip()[:-1], b', "neardup": ', tag_bytes, b"}\n"))

    def _show_duplicate(self, number: int, url: str, verdict: Any) -> None:
        escaped, redact_url = self.escaped, self.redact_url
        sim = "-" if verdict.similarity is None else f"{verdict.similarity:.3f}"
        ham = "-" if verdict.hamming is None else str(verdict.hamming)
        where = f"{escaped(self.source.name)}:{number}"
        original = escaped(redact_url(verdict.duplicate_of or ""))
        self.progress.write(
            f"{where}: {verdict.status} J={sim} H={ham} {escaped(redact_url(url))} -> {original}"
        )


def skipped_tag(reason: str, number: int | None) -> dict[str, Any]:
    """The tag of a record that is not checked (``line``: its line or record number)."""
    tag: dict[str, Any] = {
        "status": "skipped",
        "duplicate_of": None,
        "similarity": None,
        "hamming": None,
        "cluster": None,
        "mirror_of": None,
        "reason": reason,
    }
    if number is not None:
        tag["line"] = number
    return tag


def _sidecar(unit: Unit, tag: dict[str, Any]) -> bytes:
    """The output line of an archive's HTML response record."""
    row = {"url": unit.url, "warc_record_id": unit.record_id, TAG_KEY: tag}
    return json.dumps(row, ensure_ascii=False, allow_nan=False).encode("utf-8", "surrogatepass") + b"\n"


def _tagged_copy(payload: bytes, is_object: bool, tag: dict[str, Any]) -> bytes:
    """The record with ``tag`` as its ``neardup`` key (replacing one it has), or ``{"raw": ...}``."""
    if is_object:
        with contextlib.suppress(ValueError, RecursionError):
            data = json.loads(payload)
            if type(data) is dict:
                data[TAG_KEY] = tag
                return json.dumps(data).encode() + b"\n"
    text = payload.rstrip(b"\r\n").decode("utf-8", "replace")
    return json.dumps({"raw": text, TAG_KEY: tag}).encode() + b"\n"
