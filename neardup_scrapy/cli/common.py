"""What every subcommand shares: exit statuses, the one-line error, message helpers."""

from __future__ import annotations

import sys

EXIT_OK = 0
EXIT_MALFORMED = 1
#: Same value: some records could not be used.
EXIT_UNUSABLE = EXIT_MALFORMED
EXIT_ERROR = 2
EXIT_INTERRUPTED = 130

PROG = "neardup-scrapy"
#: Unusable records reported one by one on stderr (all of them with ``--verbose``).
MAX_LINE_MESSAGES = 20
#: Lines of the end-of-scan summary on stderr.
SUMMARY_LINES = 25
TAG_KEY = "neardup"
#: Reason of a record without a page body (see :mod:`neardup_scrapy.cli.inputs.base`).
NO_BODY_REASON = "no page body"


class CliError(Exception):
    """A usage, parameter or I/O problem: printed as one line, exit status 2."""


def err(message: str) -> None:
    """Print ``neardup-scrapy: message`` on stderr."""
    sys.stderr.write(f"{PROG}: {message}\n")
    sys.stderr.flush()


def plural(count: int, word: str, words: str | None = None) -> str:
    """``"1 page"``, ``"2 pages"``, ``"1,074 records"``."""
    return f"{count:,} {word if count == 1 else (words or word + 's')}"
