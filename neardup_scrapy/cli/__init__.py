"""The ``neardup-scrapy`` command: find near-duplicates in crawled pages, render reports.

Usage::

    neardup-scrapy scan [INPUT ...] [--inputs-from FILE] [-o OUTPUT] [--report REPORT.json]
                        [--html REPORT.html] [--clusters FILE] [--pairs FILE] [--jobs N]
                        [--max-body-bytes N] [--retag] [--threshold T]
                        [--algorithm both|minhash|simhash] [--num-perm N] [--shingle-size N]
                        [--min-tokens N] [--simhash-distance N] [--scope global|host]
                        [--storage KIND] [--disk-path FILE] [--redis-url URL]
                        [--redis-prefix PREFIX] [-s NAME=VALUE ...] [-q | -v]
    neardup-scrapy export [--report REPORT.json] [--html REPORT.html] [--clusters FILE]
                          [--pairs FILE] [--storage KIND] [--disk-path FILE] [--redis-url URL]
                          [--redis-prefix PREFIX] [-s NAME=VALUE ...] [-q]
    neardup-scrapy report REPORT.json [-o REPORT.html] [--summary] [-q]
    neardup-scrapy check-index PATH... [-q]

``scan`` reads JSON Lines or a JSON array (Scrapy's ``-O items.jsonl`` / ``-O items.json``
feeds; gzip allowed; ``-`` for stdin), one page per record with ``url`` and ``html`` (or
``body``; or ``text`` for plain text), or a web archive (WARC/ARC, plain or gzip, and WACZ):
its HTML ``response`` records. It checks every page in input order and writes each JSON
record to OUTPUT unchanged, with a ``neardup`` key holding the page's tag object added at the
end (a record that already has one keeps it unless ``--retag``). For an archive, OUTPUT gets
one JSON line per HTML response record: ``url``, ``warc_record_id`` and ``neardup``.

A record that is not checked is counted by reason (an archive's request records and images
too). A JSON record that cannot be used (invalid JSON, not an object, no ``url``, no page
body, a field of the wrong type, nested too deep) is reported on stderr with its line number
and still written to OUTPUT with a ``skipped`` tag whose ``reason`` says why.

Several inputs (files, directories of web archives, ``--inputs-from`` lists; see
:mod:`.inputs.collection`) are read one after another into one index, which may be kept on disk
or shared in Redis (:mod:`.scanindex`); ``export`` writes the report and exports of such an
index without scanning.

Exit status: 0 ok; 1 some records could not be used (the output is still complete);
2 usage, parameter or input/output error, or an input with no page body at all;
130 interrupted (Ctrl-C). On an input error or an interrupt the output, the report and the
summary cover the records done so far.

The command line is its own wing of the package: ``main`` (parser and dispatch), one module
per subcommand (``scan``, ``export``, ``report_cmd``, ``check_index``), the scan loop
(``records``), its counts and summaries (``summary``), the files it writes (``outputs``), the
index it fills (``index_options``, ``scanindex``), ``scanjobs`` (``--jobs``), ``progress`` and
the input readers (``inputs``). It imports none of the Scrapy components, nor they it.

This package imports neither Scrapy nor (until ``scan`` runs) the detector, so it starts fast.
"""

from __future__ import annotations

from .common import (
    EXIT_ERROR,
    EXIT_INTERRUPTED,
    EXIT_MALFORMED,
    EXIT_OK,
    EXIT_UNUSABLE,
    PROG,
    CliError,
    plural,
)
from .main import build_parser, main
from .outputs import report_json
from .summary import ScanStats

__all__ = [
    "EXIT_ERROR",
    "EXIT_INTERRUPTED",
    "EXIT_MALFORMED",
    "EXIT_OK",
    "EXIT_UNUSABLE",
    "PROG",
    "CliError",
    "ScanStats",
    "build_parser",
    "main",
    "plural",
    "report_json",
]
