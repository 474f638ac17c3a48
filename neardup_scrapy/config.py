"""Every ``NEARDUP_*`` setting, read once into a frozen :class:`NeardupConfig`.

The Scrapy components never read settings themselves: the shared runtime
(:mod:`neardup_scrapy.runtime`) parses them here, once per crawler, and an invalid value stops
the crawl at start-up with a :class:`NeardupSettingsError` that names the setting and what it
accepts. ``NotConfigured`` is kept for its Scrapy meaning, "switched off" (``NEARDUP_ENABLED``).
"""

from __future__ import annotations

import dataclasses
import math
import re
from dataclasses import dataclass
from typing import Any

from scrapy.settings import BaseSettings

from .core.params import PARAM_SETTINGS, DetectorParams, ParameterError
from .core.urls import redact_connection_url

__all__ = [
    "ACTIONS",
    "STORAGE_ERROR_POLICIES",
    "MonitorThresholds",
    "NeardupConfig",
    "NeardupSettingsError",
    "parse_settings",
]

ACTIONS = ("tag", "drop")
STORAGE_ERROR_POLICIES = ("pass", "stop")
STORAGE_KINDS = ("memory", "disk", "redis", "redis-cluster")
WORKER_MODES = ("process", "inline")

DEFAULT_MAX_BODY_BYTES = 10_000_000
DEFAULT_REDIS_URL = "redis://127.0.0.1:6379/0"
_FIELD_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


class NeardupSettingsError(ValueError):
    """A ``NEARDUP_*`` setting has an invalid value; the message names it and what it accepts.

    Raised from the components' ``from_crawler``, so the crawl stops before any request is sent.

    Attributes:
        setting: the name of the offending setting.
    """

    def __init__(self, setting: str, value: Any, accepts: str) -> None:
        self.setting = setting
        super().__init__(f"invalid setting {setting} = {value!r}: expected {accepts}")


@dataclass(frozen=True)
class MonitorThresholds:
    """The ``NEARDUP_MONITOR_*`` settings (see :mod:`neardup_scrapy.monitors`).

    Attributes:
        max_duplicate_share: duplicates / checked pages above which the monitor fails.
        max_skipped_share: skipped / all pages above which it fails.
        max_storage_errors: storage errors above which it fails.
        min_pages: fewer pages than this: the share checks pass (too few to judge).
        max_rescheduled_share: skipped requests scheduled again (their rule was withdrawn, or the
            page they named never came) over requests skipped, above which it fails.
    """

    max_duplicate_share: float = 0.5
    max_skipped_share: float = 0.5
    max_storage_errors: int = 0
    min_pages: int = 20
    max_rescheduled_share: float = 0.2


@dataclass(frozen=True)
class NeardupConfig:
    """The parsed ``NEARDUP_*`` settings of one crawler.

    Attributes:
        enabled: ``NEARDUP_ENABLED``.
        action: ``"tag"`` or ``"drop"``.
        params: the detector parameters (threshold, algorithm, shingles, mirrors, ttl...).
        field: item field that receives the tag object.
        item_fields: item fields whose text the pipeline deduplicates (empty: pipeline off).
        follow_duplicates: follow requests yielded by duplicate pages.
        skip_mirrors: drop requests to hosts confirmed as mirrors.
        mirror_requests_kept: how many requests skipped as mirror requests are kept aside, to be
            scheduled again if the claim is withdrawn.
        report_file: path of the JSON report written at close, or ``None``.
        report_html: path of the HTML report written at close, or ``None``.
        debug: log every verdict with its reason (DEBUG level).
        storage: ``"memory"``, ``"disk"``, ``"redis"``, ``"redis-cluster"`` or a dotted import path.
        disk_path: SQLite file of the ``"disk"`` store (resolved, never ``None`` for disk).
        redis_url: Redis server of the ``"redis"`` store; any node of the cluster for ``"redis-cluster"``.
        redis_prefix: key prefix of the Redis stores (default: the spider name).
        on_storage_error: ``"pass"`` or ``"stop"``.
        max_body_bytes: larger bodies are skipped (``0``: no limit).
        keep_excerpts: texts kept for the report's near-duplicate examples.
        worker: ``"process"`` (pages are checked in a helper process, off the crawl's CPU core)
            or ``"inline"`` (in the crawl's process, reusing the tree Scrapy parsed).
        clusters_file: ``NEARDUP_CLUSTERS_FILE``: every cluster, written at close.
        pairs_file: ``NEARDUP_PAIRS_FILE``: every duplicate pair, written at close.
        warc_file: ``NEARDUP_WARC_FILE``: a WARC of the responses checked.
        monitor: the ``NEARDUP_MONITOR_*`` thresholds of :mod:`neardup_scrapy.monitors`.
        url_rules: learn each host's duplicate-url rules and report them.
        skip_predicted: do not download requests the rules predict to be duplicates.
        url_rules_file: rules loaded at start (when the file exists) and written at close.
        url_rules_min_support: independent witnesses a rule needs.
        predicted_keep: skipped requests kept aside at most (to be scheduled again if needed).
    """

    enabled: bool = True
    action: str = "tag"
    params: DetectorParams = dataclasses.field(default_factory=DetectorParams)
    field: str = "neardup"
    item_fields: tuple[str, ...] = ()
    follow_duplicates: bool = True
    skip_mirrors: bool = False
    mirror_requests_kept: int = 10000
    report_file: str | None = None
    report_html: str | None = None
    debug: bool = False
    storage: str = "memory"
    disk_path: str | None = None
    redis_url: str = DEFAULT_REDIS_URL
    redis_prefix: str = "neardup"
    on_storage_error: str = "pass"
    max_body_bytes: int = DEFAULT_MAX_BODY_BYTES
    keep_excerpts: int = 2000
    worker: str = "process"
    clusters_file: str | None = None
    pairs_file: str | None = None
    warc_file: str | None = None
    monitor: MonitorThresholds = dataclasses.field(default_factory=MonitorThresholds)
    url_rules: bool = True
    skip_predicted: bool = False
    url_rules_file: str | None = None
    url_rules_min_support: int = 6
    predicted_keep: int = 100_000

    @property
    def drop(self) -> bool:
        """True when duplicates are dropped rather than tagged."""
        return self.action == "drop"

    def storage_description(self) -> str:
        """Where the index lives, for log lines and error messages."""
        if self.storage == "memory":
            return "memory"
        if self.storage == "disk":
            return f"disk ({self.disk_path})"
        if self.storage in ("redis", "redis-cluster"):
            return f"{self.storage} ({_redact(self.redis_url)}, prefix {self.redis_prefix!r})"
        return f"{self.storage} (path={self.disk_path!r}, prefix={self.redis_prefix!r})"


def _redact(url: str) -> str:
    """A Redis url without its secrets (user info password, ``?password=`` …)."""
    return redact_connection_url(url)


class _Reader:
    """Typed getters that turn every conversion error into a :class:`NeardupSettingsError`."""

    def __init__(self, settings: BaseSettings) -> None:
        self.settings = settings

    def raw(self, name: str) -> Any:
        return self.settings.get(name)

    def is_set(self, name: str) -> bool:
        value = self.settings.get(name)
        return value is not None and value != ""

    def get_bool(self, name: str, default: bool) -> bool:
        try:
            return self.settings.getbool(name, default)
        except ValueError:
            raise NeardupSettingsError(name, self.raw(name), "True or False") from None

    def get_int(self, name: str, default: int, accepts: str, minimum: int | None = None) -> int:
        value = self.raw(name)
        if isinstance(value, bool) or (isinstance(value, float) and not value.is_integer()):
            raise NeardupSettingsError(name, value, accepts)
        try:
            result = self.settings.getint(name, default)
        except (TypeError, ValueError):
            raise NeardupSettingsError(name, value, accepts) from None
        if minimum is not None and result < minimum:
            raise NeardupSettingsError(name, value, accepts)
        return result

    def get_float(self, name: str, default: float, accepts: str) -> float:
        value = self.raw(name)
        if isinstance(value, bool):
            raise NeardupSettingsError(name, value, accepts)
        try:
            result = self.settings.getfloat(name, default)
        except (TypeError, ValueError):
            raise NeardupSettingsError(name, value, accepts) from None
        if not math.isfinite(result):
            raise NeardupSettingsError(name, value, accepts)
        return result

    def optional_float(self, name: str, accepts: str) -> float | None:
        if not self.is_set(name):
            return None
        return self.get_float(name, 0.0, accepts)

    def get_str(self, name: str, default: str) -> str:
        value = self.settings.get(name, default)
        if value is None:
            return default
        if not isinstance(value, str):
            raise NeardupSettingsError(name, value, "a string")
        return value

    def optional_str(self, name: str, accepts: str) -> str | None:
        value = self.settings.get(name)
        if value is None or value == "":
            return None
        if not isinstance(value, str):
            # pathlib.Path and similar are accepted for paths.
            if hasattr(value, "__fspath__"):
                return str(value.__fspath__())
            raise NeardupSettingsError(name, value, accepts)
        return value

    def choice(self, name: str, default: str, choices: tuple[str, ...]) -> str:
        raw = self.settings.get(name)
        value = default if raw is None else raw
        if not isinstance(value, str) or value.strip().lower() not in choices:
            raise NeardupSettingsError(name, raw, "one of " + ", ".join(repr(c) for c in choices))
        return value.strip().lower()

    def get_list(self, name: str) -> list[str]:
        try:
            values = self.settings.getlist(name)
        except (TypeError, ValueError):
            raise NeardupSettingsError(name, self.raw(name), "a list of field names") from None
        out = []
        for value in values:
            if not isinstance(value, str) or not _FIELD_NAME.match(value.strip()):
                raise NeardupSettingsError(name, self.raw(name), "a list of field names")
            out.append(value.strip())
        return out


def _params(read: _Reader) -> DetectorParams:
    default = DetectorParams()  # one source of truth for every default
    fields: dict[str, Any] = {
        "threshold": read.get_float("NEARDUP_THRESHOLD", default.threshold, "a number in (0, 1]"),
        "algorithm": read.choice("NEARDUP_ALGORITHM", default.algorithm, ("both", "minhash", "simhash")),
        "num_perm": read.get_int("NEARDUP_NUM_PERM", default.num_perm, "an integer 16..1024"),
        "shingle_size": read.get_int("NEARDUP_SHINGLE_SIZE", default.shingle_size, "an integer 1..32"),
        "shingle_kind": read.choice("NEARDUP_SHINGLE_KIND", default.shingle_kind, ("word", "char")),
        "simhash_distance": read.get_int(
            "NEARDUP_SIMHASH_DISTANCE", default.simhash_distance, "an integer 0..8"
        ),
        "min_tokens": read.get_int("NEARDUP_MIN_TOKENS", default.min_tokens, "an integer >= 0"),
        "scope": read.choice("NEARDUP_SCOPE", default.scope, ("global", "host")),
        "max_text_chars": read.get_int("NEARDUP_MAX_TEXT_CHARS", default.max_text_chars, "an integer >= 100"),
        "mask_digits": read.get_bool("NEARDUP_MASK_DIGITS", default.mask_digits),
        "mask_dates": read.get_bool("NEARDUP_MASK_DATES", default.mask_dates),
        "seed": read.get_int("NEARDUP_SEED", default.seed, "an integer 0..2**32-1"),
        "bands": read.get_int("NEARDUP_LSH_BANDS", 0, "an integer >= 0 (0: chosen from the threshold)", 0),
        "rows": read.get_int("NEARDUP_LSH_ROWS", 0, "an integer >= 0 (0: chosen from the threshold)", 0),
        "mirror_min_pages": read.get_int(
            "NEARDUP_MIRROR_MIN_PAGES", default.mirror_min_pages, "an integer >= 1"
        ),
        "mirror_share": read.get_float("NEARDUP_MIRROR_SHARE", default.mirror_share, "a number in (0, 1]"),
        "ttl": read.optional_float("NEARDUP_TTL", "a positive number of seconds or None"),
        "timeout": read.get_float("NEARDUP_TIMEOUT", default.timeout, "a number of seconds in (0, 600]"),
        "max_work": read.get_int("NEARDUP_MAX_WORK", default.max_work, "an integer >= 0 (0: no limit)", 0),
    }
    try:
        return DetectorParams(**fields)
    except ParameterError as exc:
        match = re.search(r"'(\w+)'", str(exc))
        name = match.group(1) if match else ""
        setting = PARAM_SETTINGS.get(name)
        if setting is None:
            raise NeardupSettingsError("NEARDUP_*", "", str(exc)) from exc
        accepts = str(exc).split("expected", 1)[-1].strip() or str(exc)
        raise NeardupSettingsError(setting, read.raw(setting), accepts) from None


def parse_settings(settings: BaseSettings, spider_name: str | None = None) -> NeardupConfig:
    """Read and validate every ``NEARDUP_*`` setting.

    Args:
        settings: the crawler's settings.
        spider_name: the spider's name (default Redis key prefix).

    Returns:
        The frozen configuration.

    Raises:
        NeardupSettingsError: a setting has an invalid value (the message names it).
    """
    read = _Reader(settings)
    enabled = read.get_bool("NEARDUP_ENABLED", True)
    if not enabled:
        return NeardupConfig(enabled=False)
    action = read.choice("NEARDUP_ACTION", "tag", ACTIONS)
    params = _params(read)

    item_field = read.get_str("NEARDUP_FIELD", "neardup").strip()
    if not _FIELD_NAME.match(item_field):
        raise NeardupSettingsError("NEARDUP_FIELD", read.raw("NEARDUP_FIELD"), "an item field name")
    item_fields = tuple(read.get_list("NEARDUP_ITEM_FIELDS"))

    jobdir = read.optional_str("JOBDIR", "a directory")
    # Like Scrapy's request queue and dupefilter, the index persists in JOBDIR unless told otherwise.
    storage = read.get_str("NEARDUP_STORAGE", "disk" if jobdir is not None else "memory").strip()
    if storage.lower() in STORAGE_KINDS:
        storage = storage.lower()
    elif not re.match(r"^[A-Za-z_][\w]*(\.[A-Za-z_][\w]*)+$", storage):
        accepts = "'memory', 'disk', 'redis', 'redis-cluster' or a dotted import path"
        raise NeardupSettingsError("NEARDUP_STORAGE", read.raw("NEARDUP_STORAGE"), accepts)
    disk_path = read.optional_str("NEARDUP_DISK_PATH", "a file path")
    if disk_path is None and jobdir is not None:
        disk_path = f"{jobdir.rstrip('/')}/neardup.sqlite"
    if storage == "disk" and disk_path is None:
        raise NeardupSettingsError(
            "NEARDUP_DISK_PATH",
            None,
            "a file path when NEARDUP_STORAGE = 'disk' (or set JOBDIR: the index then lives in "
            "JOBDIR/neardup.sqlite)",
        )
    redis_url = (
        read.optional_str("NEARDUP_REDIS_URL", "a redis:// url")
        or read.optional_str("REDIS_URL", "a redis:// url")
        or DEFAULT_REDIS_URL
    )
    if storage == "redis" and not re.match(r"^(redis|rediss|unix)://", redis_url):
        raise NeardupSettingsError(
            "NEARDUP_REDIS_URL", _redact(redis_url), "a redis://, rediss:// or unix:// url"
        )
    if storage == "redis-cluster" and not re.match(r"^(redis|rediss)://", redis_url):
        raise NeardupSettingsError(
            "NEARDUP_REDIS_URL", _redact(redis_url), "a redis:// or rediss:// url of a cluster node"
        )
    redis_prefix = read.optional_str("NEARDUP_REDIS_PREFIX", "a string") or spider_name or "neardup"
    if storage == "redis-cluster" and ("{" in redis_prefix or "}" in redis_prefix):
        raise NeardupSettingsError(
            "NEARDUP_REDIS_PREFIX", redis_prefix, "a prefix without braces (the cluster store adds hash tags)"
        )

    return NeardupConfig(
        enabled=True,
        action=action,
        params=params,
        field=item_field,
        item_fields=item_fields,
        follow_duplicates=read.get_bool("NEARDUP_FOLLOW_DUPLICATES", True),
        skip_mirrors=read.get_bool("NEARDUP_SKIP_MIRRORS", False),
        mirror_requests_kept=read.get_int("NEARDUP_MIRROR_REQUESTS_KEPT", 10000, "an integer >= 0", 0),
        report_file=read.optional_str("NEARDUP_REPORT_FILE", "a file path or None"),
        report_html=read.optional_str("NEARDUP_REPORT_HTML", "a file path or None"),
        debug=read.get_bool("NEARDUP_DEBUG", False),
        storage=storage,
        disk_path=disk_path,
        redis_url=redis_url,
        redis_prefix=redis_prefix,
        on_storage_error=read.choice("NEARDUP_ON_STORAGE_ERROR", "pass", STORAGE_ERROR_POLICIES),
        max_body_bytes=read.get_int(
            "NEARDUP_MAX_BODY_BYTES", DEFAULT_MAX_BODY_BYTES, "an integer >= 0 (0: no limit)", 0
        ),
        keep_excerpts=read.get_int("NEARDUP_KEEP_EXCERPTS", 2000, "an integer >= 0", 0),
        worker=read.choice("NEARDUP_WORKER", "process", WORKER_MODES),
        clusters_file=read.optional_str("NEARDUP_CLUSTERS_FILE", "a file path or None"),
        pairs_file=read.optional_str("NEARDUP_PAIRS_FILE", "a file path or None"),
        warc_file=read.optional_str("NEARDUP_WARC_FILE", "a file path or None"),
        monitor=_monitor(read),
        **_url_rules(read),
    )


def _url_rules(read: _Reader) -> dict[str, Any]:
    from .core.urlrules import DEFAULT_MIN_SUPPORT

    learn = read.get_bool("NEARDUP_URL_RULES", True)
    skip = read.get_bool("NEARDUP_SKIP_PREDICTED", False)
    if skip and not learn:
        raise NeardupSettingsError(
            "NEARDUP_SKIP_PREDICTED",
            read.raw("NEARDUP_SKIP_PREDICTED"),
            "False while NEARDUP_URL_RULES = False",
        )
    return {
        "url_rules": learn,
        "skip_predicted": skip,
        "url_rules_file": read.optional_str("NEARDUP_URL_RULES_FILE", "a file path or None"),
        "url_rules_min_support": read.get_int(
            "NEARDUP_URL_RULES_MIN_SUPPORT", DEFAULT_MIN_SUPPORT, "an integer >= 1", 1
        ),
        "predicted_keep": read.get_int("NEARDUP_PREDICTED_KEEP", 100_000, "an integer >= 0", 0),
    }


def _share(read: _Reader, name: str, default: float) -> float:
    value = read.get_float(name, default, "a number in [0, 1]")
    if not 0.0 <= value <= 1.0:
        raise NeardupSettingsError(name, read.raw(name), "a number in [0, 1]")
    return value


def _monitor(read: _Reader) -> MonitorThresholds:
    default = MonitorThresholds()
    return MonitorThresholds(
        max_duplicate_share=_share(read, "NEARDUP_MONITOR_MAX_DUPLICATE_SHARE", default.max_duplicate_share),
        max_skipped_share=_share(read, "NEARDUP_MONITOR_MAX_SKIPPED_SHARE", default.max_skipped_share),
        max_storage_errors=read.get_int(
            "NEARDUP_MONITOR_MAX_STORAGE_ERRORS", default.max_storage_errors, "an integer >= 0", 0
        ),
        min_pages=read.get_int("NEARDUP_MONITOR_MIN_PAGES", default.min_pages, "an integer >= 0", 0),
        max_rescheduled_share=_share(
            read, "NEARDUP_MONITOR_MAX_RESCHEDULED_SHARE", default.max_rescheduled_share
        ),
    )
