"""The index and the detector parameters the options name, as the command line reports them.

The settings themselves are read by :mod:`.scanindex`; this module turns its errors into one
line that names the option or the ``-s`` setting at fault (exit status 2).
"""

from __future__ import annotations

import argparse
import re
from typing import Any

from .common import CliError

#: Detector parameter -> option, to name the option in error messages.
OPTIONS = {
    "threshold": "--threshold",
    "algorithm": "--algorithm",
    "num_perm": "--num-perm",
    "shingle_size": "--shingle-size",
    "min_tokens": "--min-tokens",
    "simhash_distance": "--simhash-distance",
    "scope": "--scope",
}


def index_setup(args: argparse.Namespace) -> tuple[dict[str, str], Any]:
    """The ``-s`` settings and the index the options name (a bad one names its option, exit 2)."""
    from .scanindex import IndexOptionError, index_spec, parse_settings

    try:
        settings = parse_settings(args.settings)
        spec = index_spec(
            settings,
            storage=args.storage,
            disk_path=args.disk_path,
            redis_url=args.redis_url,
            redis_prefix=args.redis_prefix,
        )
    except IndexOptionError as exc:
        raise CliError(str(exc)) from None
    return settings, spec


def scan_params(args: argparse.Namespace, settings: dict[str, str]) -> Any:
    """The detector parameters from the options and ``-s``; a bad value names its option."""
    from neardup_scrapy.core.params import DetectorParams, ParameterError

    from .scanindex import IndexOptionError, param_values

    flags = {name: getattr(args, name, None) for name in OPTIONS}
    try:
        values, origin = param_values(settings, flags)
        return DetectorParams(**values)
    except IndexOptionError as exc:
        raise CliError(str(exc)) from None
    except ParameterError as exc:
        message = str(exc)
        match = re.search(r"'(\w+)'", message)
        name = match.group(1) if match else ""
        accepts = message.split("expected", 1)[-1].strip() if "expected" in message else message
        if origin.get(name):
            setting = origin[name]
            raise CliError(
                f"argument -s {setting}: invalid value {settings[setting]!r}: expected {accepts}"
            ) from None
        if name in OPTIONS:
            raise CliError(
                f"argument {OPTIONS[name]}: invalid value {values[name]!r}: expected {accepts}"
            ) from None
        raise CliError(message) from None


def recorded_params(settings: dict[str, str]) -> Any:
    """The parameters ``-s`` names for an export (the index's recorded ones complete them)."""
    from neardup_scrapy.core.params import DetectorParams, ParameterError

    from .scanindex import IndexOptionError, param_values

    try:
        values, _origin = param_values(settings, {})
        return DetectorParams(**values)
    except (IndexOptionError, ParameterError) as exc:
        raise CliError(str(exc)) from None


def open_index(spec: Any, params: Any, *, recorded: bool = False) -> Any:
    """The detector over the index ``spec``; an index built with other parameters, or one that
    cannot be reached, stops the command with one line (exit 2)."""
    from neardup_scrapy.core.params import ParameterError
    from neardup_scrapy.core.storage import ParameterMismatchError, StorageError

    from .scanindex import IndexOptionError, open_detector, open_recorded

    try:
        return open_recorded(spec, params) if recorded else open_detector(spec, params)
    except ParameterMismatchError as exc:
        raise CliError(f"{exc} (the scan options and -s set them)") from None
    except (StorageError, ParameterError) as exc:
        raise CliError(f"cannot open the {spec.describe()}: {exc}") from None
    except IndexOptionError as exc:
        raise CliError(str(exc)) from None
