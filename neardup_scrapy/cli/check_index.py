"""``neardup-scrapy check-index``: look for damage in a disk index, read-only."""

from __future__ import annotations

import argparse
import os
import sys

from .common import EXIT_MALFORMED, EXIT_OK, CliError


def run_check_index(args: argparse.Namespace) -> int:
    """Run ``check-index``; returns the exit status (1: damage found)."""
    from neardup_scrapy.core.storage import StorageError
    from neardup_scrapy.core.storage.sqlite_check import check_index, describe

    files: list[str] = []
    for path in args.path:
        if os.path.isdir(path):
            found = [os.path.join(path, n) for n in ("neardup.sqlite", "neardup-items.sqlite")]
            found = [f for f in found if os.path.isfile(f)]
            if not found:
                raise CliError(f"{path}: no neardup.sqlite in this directory")
            files += found
        else:
            files.append(path)
    damaged = False
    for path in files:
        try:
            result = check_index(path)
        except StorageError as exc:
            raise CliError(str(exc)) from None
        damaged = damaged or result.damaged
        if result.damaged or not args.quiet:
            sys.stdout.write("".join(line + "\n" for line in describe(result)))
            sys.stdout.flush()
    return EXIT_MALFORMED if damaged else EXIT_OK
