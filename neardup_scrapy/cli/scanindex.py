"""The index of ``neardup-scrapy scan`` and ``export``: which store, with which parameters.

The command line names an index as a crawl does, by the same settings (``-s NAME=VALUE``) or
their flags: ``NEARDUP_STORAGE`` (``--storage``: memory, disk, redis, redis-cluster),
``NEARDUP_DISK_PATH`` (``--disk-path``; a directory is a ``JOBDIR``, whose index is
``neardup.sqlite``), ``JOBDIR``, ``NEARDUP_REDIS_URL`` (``--redis-url``) and
``NEARDUP_REDIS_PREFIX`` (``--redis-prefix``). The detector parameters are read the same way
(``--threshold`` or ``-s NEARDUP_THRESHOLD=0.8``...), and a kept index refuses other parameters
than those it was built with, as in a crawl (:class:`~neardup_scrapy.core.storage.ParameterMismatchError`).

An export reads the parameters the index recorded (:func:`open_recorded`), so it needs none.

This module imports neither Scrapy nor the detector until an index is opened.
"""

from __future__ import annotations

import hashlib
import os
import re
import socket
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, fields
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from neardup_scrapy.core import NearDupDetector
    from neardup_scrapy.core.params import DetectorParams

__all__ = [
    "STORAGE_KINDS",
    "IndexOptionError",
    "IndexSpec",
    "index_spec",
    "open_detector",
    "open_recorded",
    "param_values",
    "parse_settings",
    "writer_name",
]

STORAGE_KINDS = ("memory", "disk", "redis", "redis-cluster")
DEFAULT_REDIS_URL = "redis://127.0.0.1:6379/0"
DEFAULT_PREFIX = "neardup"
#: The index file of a crawl's JOBDIR (see :mod:`neardup_scrapy.config`).
JOBDIR_INDEX = "neardup.sqlite"
#: Settings that name the index (besides the detector parameters).
INDEX_SETTINGS = (
    "NEARDUP_STORAGE",
    "NEARDUP_DISK_PATH",
    "JOBDIR",
    "NEARDUP_REDIS_URL",
    "NEARDUP_REDIS_PREFIX",
)
_TRUE = ("1", "true", "yes", "on")
_FALSE = ("0", "false", "no", "off")


class IndexOptionError(ValueError):
    """An index option or ``-s`` setting is invalid; the message names it (one line)."""


@dataclass(frozen=True)
class IndexSpec:
    """Where the index lives.

    Attributes:
        storage: ``"memory"``, ``"disk"``, ``"redis"`` or ``"redis-cluster"``.
        disk_path: the SQLite file of a disk index.
        redis_url: the Redis server, or any node of the cluster.
        redis_prefix: the key prefix of a Redis index (one index per prefix).
    """

    storage: str = "memory"
    disk_path: str | None = None
    redis_url: str = DEFAULT_REDIS_URL
    redis_prefix: str = DEFAULT_PREFIX

    @property
    def kept(self) -> bool:
        """Whether the index outlives the process (every store but memory)."""
        return self.storage != "memory"

    def describe(self) -> str:
        """Where the index lives, for messages (a Redis url without its secrets)."""
        if self.storage == "memory":
            return "memory"
        if self.storage == "disk":
            return f"disk index {self.disk_path}"
        from neardup_scrapy.core.urls import redact_connection_url

        return f"{self.storage} index {redact_connection_url(self.redis_url)} prefix {self.redis_prefix!r}"

    def build(self, ttl: float | None) -> Any:
        """The store (not yet opened; see :func:`~neardup_scrapy.core.storage.open_storage`)."""
        from neardup_scrapy.core.storage import open_storage

        return open_storage(
            self.storage, path=self.disk_path, redis_url=self.redis_url, prefix=self.redis_prefix, ttl=ttl
        )


def parse_settings(pairs: Sequence[str]) -> dict[str, str]:
    """``["NAME=VALUE", ...]`` (``-s``) as a dict; the last value of a name wins.

    Raises:
        IndexOptionError: an item without ``=``, or a name ``scan`` does not read.
    """
    from neardup_scrapy.core.params import PARAM_SETTINGS

    known = set(INDEX_SETTINGS) | set(PARAM_SETTINGS.values())
    out: dict[str, str] = {}
    for pair in pairs:
        name, equals, value = pair.partition("=")
        name = name.strip()
        if not equals or not name:
            raise IndexOptionError(f"argument -s: invalid value {pair!r}: expected NAME=VALUE")
        if name not in known:
            raise IndexOptionError(
                f"argument -s: unknown setting {name}: expected one of {', '.join(INDEX_SETTINGS)} or a "
                "detector parameter (NEARDUP_THRESHOLD, NEARDUP_NUM_PERM, ...; see README)"
            )
        out[name] = value.strip()
    return out


def index_spec(
    settings: Mapping[str, str],
    *,
    storage: str | None = None,
    disk_path: str | None = None,
    redis_url: str | None = None,
    redis_prefix: str | None = None,
) -> IndexSpec:
    """The index named by the flags (given: not ``None``) and else the ``-s`` settings.

    A disk path without a storage kind means a disk index; a directory (or ``JOBDIR``) means
    its ``neardup.sqlite``, the index a crawl with that ``JOBDIR`` keeps.

    Raises:
        IndexOptionError: an invalid kind, a disk index without a path, a Redis url of
            another scheme, a cluster prefix with braces.
    """
    path = disk_path if disk_path is not None else settings.get("NEARDUP_DISK_PATH") or None
    jobdir = settings.get("JOBDIR") or None
    if path is None and jobdir is not None:
        path = os.path.join(jobdir, JOBDIR_INDEX)
    elif path is not None and os.path.isdir(path):
        path = os.path.join(path, JOBDIR_INDEX)
    name = "--storage" if storage is not None else "NEARDUP_STORAGE"
    kind = storage if storage is not None else settings.get("NEARDUP_STORAGE") or None
    if kind is None:
        kind = "disk" if path is not None else "memory"
    kind = kind.strip().lower()
    if kind not in STORAGE_KINDS:
        raise IndexOptionError(f"{name}: invalid value {kind!r}: expected one of {', '.join(STORAGE_KINDS)}")
    if kind == "disk" and path is None:
        raise IndexOptionError(f"{name} disk: give the index file with --disk-path FILE (or -s JOBDIR=DIR)")
    url = redis_url if redis_url is not None else settings.get("NEARDUP_REDIS_URL") or DEFAULT_REDIS_URL
    url_name = "--redis-url" if redis_url is not None else "NEARDUP_REDIS_URL"
    schemes = ("redis", "rediss") if kind == "redis-cluster" else ("redis", "rediss", "unix")
    if kind in ("redis", "redis-cluster") and not re.match(rf"^({'|'.join(schemes)})://", url):
        from neardup_scrapy.core.urls import redact_connection_url

        accepts = ", ".join(f"{s}://" for s in schemes)
        raise IndexOptionError(
            f"{url_name}: invalid value {redact_connection_url(url)!r}: expected a {accepts} url"
        )
    prefix = (
        redis_prefix if redis_prefix is not None else settings.get("NEARDUP_REDIS_PREFIX") or DEFAULT_PREFIX
    )
    if kind == "redis-cluster" and ("{" in prefix or "}" in prefix):
        raise IndexOptionError(
            f"--redis-prefix: invalid value {prefix!r}: expected a prefix without braces (the cluster "
            "store adds hash tags)"
        )
    return IndexSpec(kind, path if kind == "disk" else None, url, prefix)


def _convert(setting: str, default: Any, text: str) -> Any:
    """A ``-s`` value as the type of the parameter's default."""
    low = text.strip().lower()
    if isinstance(default, bool):
        if low in _TRUE:
            return True
        if low in _FALSE:
            return False
        raise IndexOptionError(f"argument -s {setting}: invalid value {text!r}: expected True or False")
    try:
        if isinstance(default, int):
            return int(low)
        if isinstance(default, float) or default is None:  # ttl: a number of seconds or None
            return None if default is None and low in ("", "none") else float(low)
    except ValueError:
        kind = "an integer" if isinstance(default, int) else "a number"
        raise IndexOptionError(f"argument -s {setting}: invalid value {text!r}: expected {kind}") from None
    return text.strip()


def param_values(
    settings: Mapping[str, str], flags: Mapping[str, Any]
) -> tuple[dict[str, Any], dict[str, str]]:
    """The detector parameters set by ``flags`` (``{field: value or None}``) or else by ``-s``.

    Returns:
        ``(values, origin)``: the parameters given (the others keep their defaults), and for
        each the setting it came from (``""`` when from a flag).
    """
    from neardup_scrapy.core.params import PARAM_SETTINGS, DetectorParams

    defaults = {f.name: f.default for f in fields(DetectorParams) if f.init}
    values: dict[str, Any] = {}
    origin: dict[str, str] = {}
    for name, setting in PARAM_SETTINGS.items():
        if flags.get(name) is not None:
            values[name], origin[name] = flags[name], ""
        elif setting in settings:
            values[name], origin[name] = _convert(setting, defaults[name], settings[setting]), setting
    return values, origin


def open_detector(spec: IndexSpec, params: DetectorParams) -> NearDupDetector:
    """The detector over the index ``spec`` (created, or opened and its parameters checked).

    Raises:
        ParameterMismatchError: a kept index was built with other parameters.
        StorageError: the index cannot be opened.
    """
    from neardup_scrapy.core import NearDupDetector

    if spec.storage == "memory":
        return NearDupDetector.from_params(params)
    return NearDupDetector.from_params(params, storage=spec.build(params.ttl))


def open_recorded(spec: IndexSpec, base: DetectorParams) -> NearDupDetector:
    """The detector over an existing index, with the parameters the index recorded (``base``
    for those it does not record: the candidate search, mirrors, ttl).

    Raises:
        IndexOptionError: a memory index, or no index file at the disk path.
        ParameterError: the index was written by another hashing scheme or format.
        StorageError: the index cannot be opened.
    """
    from neardup_scrapy.core.params import params_of_signature
    from neardup_scrapy.core.storage import ParameterMismatchError

    if spec.storage == "memory":
        raise IndexOptionError("--storage: give a kept index (disk, redis or redis-cluster) to export from")
    if spec.storage == "disk" and not os.path.isfile(spec.disk_path or ""):
        raise IndexOptionError(f"--disk-path: no index at {spec.disk_path}")
    try:
        return open_detector(spec, base)
    except ParameterMismatchError as exc:
        stored = {name: ours for name, (ours, _theirs) in exc.differences.items()}
    return open_detector(spec, params_of_signature(stored, base))


def writer_name(paths: Sequence[str]) -> str:
    """The name a scan saves its duplicate-url evidence under in a kept index: one per machine
    and set of inputs, so a scan of the same inputs again replaces its evidence instead of
    adding to it, and processes scanning other inputs keep theirs."""
    names = [socket.gethostname(), *(os.path.abspath(p) for p in paths)]
    digest = hashlib.sha256("\0".join(names).encode("utf-8", "replace"))
    return f"scan:{digest.hexdigest()[:16]}"
