"""The inputs of one ``scan`` run: files, directories of web archives and lists of both.

* a file is read as it is (its format told by :func:`~.detect.open_input`); ``-`` is stdin;
* a directory stands for every web archive under it (``.warc``, ``.warc.gz``, ``.arc``,
  ``.arc.gz``, ``.wacz``, in subdirectories too), in path order;
* a list file (``--inputs-from FILE``, ``-`` for stdin) names one file or directory a line;
  blank lines and lines starting with ``#`` are passed over; relative paths are relative to
  the current directory (as ``wget -i`` and ``xargs`` read them).

Every input is checked before the first is read: a name that does not exist stops the run at
once, not hours into a collection.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterable, Sequence

from .base import InputFormatError

__all__ = ["ARCHIVE_SUFFIXES", "expand_inputs"]

ARCHIVE_SUFFIXES = (".warc", ".warc.gz", ".arc", ".arc.gz", ".wacz")


def _archives_under(directory: str) -> list[str]:
    found: list[str] = []
    for root, dirs, files in os.walk(directory, onerror=None, followlinks=False):
        dirs.sort()
        found += (os.path.join(root, f) for f in files if f.lower().endswith(ARCHIVE_SUFFIXES))
    return sorted(found)


def _listed(list_file: str) -> list[str]:
    try:
        if list_file == "-":
            text = sys.stdin.read()
        else:
            with open(list_file, encoding="utf-8") as handle:
                text = handle.read()
    except FileNotFoundError:
        raise InputFormatError(f"--inputs-from {list_file}: no such file") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise InputFormatError(f"--inputs-from {list_file}: cannot read: {exc}") from None
    lines = (line.strip() for line in text.splitlines())
    return [line for line in lines if line and not line.startswith("#")]


def expand_inputs(paths: Sequence[str], lists: Iterable[str] = ()) -> list[str]:
    """The files to read, in order: ``paths``, then the names in the ``lists`` files; each
    directory replaced by the web archives under it.

    Raises:
        InputFormatError: a name that does not exist, a directory without web archives, a file
            named twice, ``-`` (stdin) named twice or with ``--inputs-from -``.
    """
    names = list(paths)
    stdin_list = False
    for list_file in lists:
        stdin_list = stdin_list or list_file == "-"
        names += _listed(list_file)
    out: list[str] = []
    seen: dict[str, str] = {}
    for name in names:
        if name == "-":
            if stdin_list or "-" in seen:
                raise InputFormatError("INPUT -: standard input can be read once only")
            seen["-"] = name
            out.append(name)
            continue
        if os.path.isdir(name):
            found = _archives_under(name)
            if not found:
                raise InputFormatError(
                    f"INPUT {name}: a directory without web archives ({', '.join(ARCHIVE_SUFFIXES)})"
                )
        elif os.path.exists(name):
            found = [name]
        else:
            raise InputFormatError(f"INPUT {name}: no such file")
        for path in found:
            key = os.path.realpath(path)
            if key in seen:
                raise InputFormatError(f"INPUT {path}: named twice (also as {seen[key]})")
            seen[key] = path
            out.append(path)
    if not out:
        raise InputFormatError("no INPUT: name files or directories, or list them with --inputs-from")
    return out
