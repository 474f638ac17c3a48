"""``neardup-scrapy scan``: check the pages of one or more inputs against one index.

The inputs are read one after another (:func:`_scan_input`, the loop in :mod:`.records`);
then the url rules are stored, the report and exports written and the summary printed
(:func:`_finish`).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
import zlib
from dataclasses import dataclass
from typing import Any, BinaryIO

from .common import (
    EXIT_ERROR,
    EXIT_INTERRUPTED,
    EXIT_MALFORMED,
    EXIT_OK,
    NO_BODY_REASON,
    CliError,
    err,
    plural,
)
from .index_options import index_setup, open_index, scan_params
from .outputs import (
    OutputError,
    check_distinct,
    check_export_options,
    check_writable,
    open_output,
    silence_stdout,
    write_reports,
)
from .progress import Progress
from .records import scan_records
from .summary import InputResult, ScanStats, input_summary, scan_summary


@dataclass
class _Run:
    """One scan run over its inputs: the shared detector, OUTPUT and the totals."""

    args: argparse.Namespace
    detector: Any
    out: BinaryIO | None
    out_name: str | None
    total: ScanStats
    inputs: int
    where: str


def run_scan(args: argparse.Namespace) -> int:
    """Run ``scan``; returns the exit status."""
    inputs, spec, settings = _check_arguments(args)
    params = scan_params(args, settings)
    for path, what in _outputs(args):
        check_writable(path, what)
    check_export_options(args)
    from .inputs import InputFormatError, open_input

    source = None
    # one input: opened before anything else (an unreadable one: exit 2, nothing written)
    if len(inputs) == 1:
        try:
            source = open_input(inputs[0], args.max_body_bytes)
        except InputFormatError as exc:
            raise CliError(str(exc)) from None
    try:
        detector = open_index(spec, params)
        out, out_name = open_output(args.output)
    except CliError:
        if source is not None:
            source.close()
        raise
    run = _Run(args, detector, out, out_name, ScanStats(), len(inputs), spec.describe())
    if out is None and not args.quiet:
        err("stdout is a terminal: tagged records are not written (use -o FILE or -o -)")
    started = time.monotonic()
    status = _scan_inputs(run, inputs, source)
    elapsed = time.monotonic() - started
    stats = run.total

    if status == EXIT_OK and stats.pages == 0 and stats.reasons.get(NO_BODY_REASON):
        detector.close()
        name = inputs[0] if len(inputs) == 1 else "the inputs"
        err(
            f"{'<stdin>' if name == '-' else name}: no page bodies to check: its records have no 'html' "
            "field; add one to your items (e.g. item['html'] = response.text), or scan a WARC of the crawl"
        )
        return EXIT_ERROR
    return _finish(run, inputs, spec, status, elapsed)


def _outputs(args: argparse.Namespace) -> tuple[tuple[str | None, str], ...]:
    return (
        (args.output if args.output is not None or sys.stdout.isatty() else "-", "OUTPUT"),
        (args.report, "--report"),
        (args.html, "--html"),
        (args.clusters, "--clusters"),
        (args.pairs, "--pairs"),
    )


def _check_arguments(args: argparse.Namespace) -> tuple[list[str], Any, dict[str, str]]:
    """The inputs, the index and the ``-s`` settings; a bad option or an output that is an
    input or another output stops the scan before anything is opened (exit 2)."""
    if args.max_body_bytes < 0:
        raise CliError(f"argument --max-body-bytes: invalid value {args.max_body_bytes}: expected >= 0")
    if args.jobs is not None and args.jobs < 1:
        raise CliError(f"argument --jobs: invalid value {args.jobs}: expected an integer >= 1")
    if not args.inputs and not args.inputs_from:
        raise CliError("the following arguments are required: INPUT (or --inputs-from FILE)")
    from .inputs import InputFormatError
    from .inputs.collection import expand_inputs

    settings, spec = index_setup(args)
    try:
        inputs = expand_inputs(args.inputs, args.inputs_from)
    except InputFormatError as exc:
        raise CliError(str(exc)) from None
    named: list[tuple[str | None, str]] = [(path, "INPUT") for path in inputs]
    if spec.disk_path:
        named.append((spec.disk_path, "INPUT (the index)"))
    check_distinct(named, _outputs(args))
    return inputs, spec, settings


def _scan_inputs(run: _Run, inputs: list[str], source: Any) -> int:
    """Scan the inputs in order (``source``: the first, already opened) and close OUTPUT;
    returns the exit status so far."""
    from .inputs import InputFormatError, open_input

    args, out = run.args, run.out
    status = EXIT_OK
    try:
        for number, path in enumerate(inputs, 1):
            if source is None:
                try:
                    source = open_input(path, args.max_body_bytes)
                except InputFormatError as exc:
                    err(str(exc))
                    status = EXIT_ERROR
                    continue
            one = _scan_input(run, source, number)
            source = None
            status = max(status, one.status) if one.status != EXIT_INTERRUPTED else EXIT_INTERRUPTED
            if run.inputs > 1:
                line = input_summary(one, number, run.inputs)
                if not args.quiet:
                    sys.stderr.write(line + "\n")
                    sys.stderr.flush()
            if one.stop:
                break
    finally:
        if source is not None:
            source.close()
        if out is not None:
            try:
                if out is sys.stdout.buffer:
                    out.flush()
                else:
                    out.close()
            except BrokenPipeError:
                silence_stdout()
                status = max(status, EXIT_ERROR)
            except OSError as exc:
                err(f"OUTPUT {run.out_name}: cannot write: {exc}")
                status = max(status, EXIT_ERROR)
    return status


def _scan_input(run: _Run, source: Any, number: int) -> InputResult:
    """Scan one opened input into the run's index and OUTPUT; closes the input."""
    from neardup_scrapy.core.storage import StorageError

    from .inputs import InputFormatError

    args, total = run.args, run.total
    label = f"[{number}/{run.inputs}] {source.name}  " if run.inputs > 1 else ""
    interactive = sys.stderr.isatty()
    progress = Progress(sys.stderr, source.total, enabled=interactive and not args.quiet, label=label)
    stats = ScanStats(url_rules=total.url_rules)
    result = InputResult(source.name, stats, 0.0)
    started = time.monotonic()
    try:
        scan_records(args, detector=run.detector, source=source, out=run.out, progress=progress, stats=stats)
    except KeyboardInterrupt:
        progress.close()
        done = total.records + stats.records
        err(
            f"interrupted after {plural(done, 'record')} ({plural(total.written + stats.written, 'record')} "
            "written); output, report and summary cover them"
        )
        result.status, result.stop = EXIT_INTERRUPTED, True
    except OutputError as exc:
        progress.close()
        if isinstance(exc.error, BrokenPipeError):
            err("output closed early (broken pipe)")
            silence_stdout()
        else:
            err(f"OUTPUT {run.out_name}: cannot write: {exc.error.strerror or exc.error}")
        result.status, result.stop = EXIT_ERROR, True
    except InputFormatError as exc:
        progress.close()
        err(f"{source.name}: {exc}")
        result.status = EXIT_ERROR
    except StorageError as exc:
        progress.close()
        err(f"{source.name}: record {stats.records + 1}: the {run.where} failed: {exc}")
        result.status, result.stop = EXIT_ERROR, True
    except (OSError, EOFError, zlib.error) as exc:
        progress.close()
        err(f"{source.name}: record {stats.records + 1}: cannot read input: {exc}")
        result.status = EXIT_ERROR
    finally:
        progress.close()
        source.close()
    result.elapsed = time.monotonic() - started
    stats.blank = source.counter.blank
    total.add(stats)
    return result


def _finish(run: _Run, inputs: list[str], spec: Any, status: int, elapsed: float) -> int:
    """Store the url rules, write the report and exports, print the summary; the exit status."""
    from neardup_scrapy.core.storage import StorageError

    from .scanindex import writer_name

    args, detector, stats = run.args, run.detector, run.total
    written: list[str] = [name for name in (run.out_name,) if name]
    try:
        # the report lists the duplicate-url rules the input's urls show (NEARDUP_URL_RULES_FILE
        # loads such a report for a crawl); a kept index keeps one state per machine and inputs
        if stats.url_rules is not None:
            writer = writer_name(inputs) if spec.kept else "scan"
            detector.exchange_url_rules(writer, json.dumps(stats.url_rules.state()).encode("utf-8"))
        # A kept index's mirror origins become representatives when a report or export is
        # written (as at the end of a crawl), not at the end of every run: other processes may
        # still be checking pages against the representatives (see README).
        settle = not spec.kept or any((args.report, args.html, args.clusters, args.pairs))
        report = detector.report() if settle else detector.report_as_is()
        written += write_reports(args, detector, report)
    except StorageError as exc:
        err(f"{spec.describe()}: {exc}; the report and exports were not written")
        return EXIT_ERROR
    finally:
        detector.close()
    if not args.quiet:
        index = spec.describe() if spec.kept else None
        lines = scan_summary(report, stats, elapsed, index=index, inputs=run.inputs, written=written)
        sys.stderr.write("".join(line + "\n" for line in lines))
        sys.stderr.flush()
    if status == EXIT_OK and stats.problems:
        status = EXIT_MALFORMED
    return status
