"""Every name the README documented on 2026-11-28 is still documented and still exists.

The lists below were taken from the README as it stood before the design, the benchmarks' record
and the report format moved to ``docs/`` (issue #33). A name may move between the README and the
docs pages; it may not vanish from both, and the code must still have it. Removing a documented
name is a decision: take it out of the list in the same commit, with a line in CHANGES.md.
"""

from __future__ import annotations

import importlib
import re
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parent.parent

SETTINGS = [
    "NEARDUP_ACTION",
    "NEARDUP_ALGORITHM",
    "NEARDUP_CLUSTERS_FILE",
    "NEARDUP_DEBUG",
    "NEARDUP_DISK_PATH",
    "NEARDUP_ENABLED",
    "NEARDUP_FIELD",
    "NEARDUP_FOLLOW_DUPLICATES",
    "NEARDUP_ITEM_FIELDS",
    "NEARDUP_KEEP_EXCERPTS",
    "NEARDUP_LSH_BANDS",
    "NEARDUP_LSH_ROWS",
    "NEARDUP_MASK_DATES",
    "NEARDUP_MASK_DIGITS",
    "NEARDUP_MAX_BODY_BYTES",
    "NEARDUP_MAX_TEXT_CHARS",
    "NEARDUP_MAX_WORK",
    "NEARDUP_MIN_TOKENS",
    "NEARDUP_MIRROR_MIN_PAGES",
    "NEARDUP_MIRROR_REQUESTS_KEPT",
    "NEARDUP_MIRROR_SHARE",
    "NEARDUP_MONITOR_MAX_DUPLICATE_SHARE",
    "NEARDUP_MONITOR_MAX_RESCHEDULED_SHARE",
    "NEARDUP_MONITOR_MAX_SKIPPED_SHARE",
    "NEARDUP_MONITOR_MAX_STORAGE_ERRORS",
    "NEARDUP_MONITOR_MIN_PAGES",
    "NEARDUP_NUM_PERM",
    "NEARDUP_ON_STORAGE_ERROR",
    "NEARDUP_PAIRS_FILE",
    "NEARDUP_PREDICTED_KEEP",
    "NEARDUP_REDIS_PREFIX",
    "NEARDUP_REDIS_URL",
    "NEARDUP_REPORT_FILE",
    "NEARDUP_REPORT_HTML",
    "NEARDUP_SCOPE",
    "NEARDUP_SEED",
    "NEARDUP_SHINGLE_KIND",
    "NEARDUP_SHINGLE_SIZE",
    "NEARDUP_SIMHASH_DISTANCE",
    "NEARDUP_SKIP_MIRRORS",
    "NEARDUP_SKIP_PREDICTED",
    "NEARDUP_STORAGE",
    "NEARDUP_THRESHOLD",
    "NEARDUP_TIMEOUT",
    "NEARDUP_TTL",
    "NEARDUP_URL_RULES",
    "NEARDUP_URL_RULES_FILE",
    "NEARDUP_URL_RULES_MIN_SUPPORT",
    "NEARDUP_WARC_FILE",
    "NEARDUP_WORKER",
]

#: Environment variables of the test suite (documented for developers).
TEST_ENVIRONMENT = ["NEARDUP_EVAL_DEV", "NEARDUP_EVAL_DOCS", "NEARDUP_TEST_REDIS"]

#: Stats; ``<...>`` stands for a family (its static part is what is checked).
STATS = [
    "neardup/pages",
    "neardup/unique",
    "neardup/exact",
    "neardup/near",
    "neardup/skipped",
    "neardup/revisits",
    "neardup/skipped/<reason>",
    "neardup/skipped/too_large",
    "neardup/skipped/no_text",
    "neardup/skipped/unreadable_<exception>",
    "neardup/skipped/too_much_work",
    "neardup/skipped/timeout",
    "neardup/skipped/storage_error",
    "neardup/skipped/error",
    "neardup/untouched/<reason>",
    "neardup/untouched/dont_neardup",
    "neardup/untouched/non_html",
    "neardup/untouched/http_error",
    "neardup/not_dropped",
    "neardup/storage_errors",
    "neardup/worker_restarts",
    "neardup/dropped",
    "neardup/dropped/page",
    "neardup/dropped/item",
    "neardup/requests_not_followed",
    "neardup/mirror_requests_skipped",
    "neardup/mirror_requests_rescheduled",
    "neardup/mirror_requests_given_up",
    "neardup/mirror_requests_not_kept",
    "neardup/warc_records",
    "neardup/monitor/failed",
    "neardup/skipped/predicted",
    "neardup/predicted/explored",
    "neardup/predicted/rescheduled",
    "neardup/predicted/not_kept",
    "neardup/predicted/kept",
    "neardup/url_rules/learned",
    "neardup/url_rules/withdrawn",
    "neardup/url_rules/valid",
    "neardup/mirror_hosts",
    "neardup/clusters",
    "neardup/items/tagged",
    "neardup/items/field_missing",
    "neardup/items/pages",
    "neardup/items/unique",
    "neardup/items/skipped/<reason>",
    "neardup/items/skipped/error",
    "neardup/items/no_fields",
]

META_KEYS = ["neardup", "dont_neardup"]
RESPONSE_FLAGS = ["neardup:exact", "neardup:near"]
SIGNALS = ["duplicate_found"]

#: Command-line subcommands and their options, as the README's tables wrote them.
CLI = {
    "scan": [
        "-o",
        "--retag",
        "--report",
        "--html",
        "--clusters",
        "--pairs",
        "--jobs",
        "-j",
        "--max-body-bytes",
        "--threshold",
        "--algorithm",
        "--num-perm",
        "--shingle-size",
        "--min-tokens",
        "--simhash-distance",
        "--scope",
        "-q",
        "-v",
    ],
    "report": ["-o", "--summary", "-q"],
    "check-index": ["-q"],
}

#: Importable names: ``module:attribute`` (an attribute may be dotted).
PUBLIC_NAMES = [
    "neardup_scrapy:Addon",
    "neardup_scrapy:NeardupDownloaderMiddleware",
    "neardup_scrapy:NeardupUrlRulesMiddleware",
    "neardup_scrapy:NeardupSpiderMiddleware",
    "neardup_scrapy:NeardupPipeline",
    "neardup_scrapy:NeardupExtension",
    "neardup_scrapy:DuplicatePage",
    "neardup_scrapy:PredictedDuplicate",
    "neardup_scrapy:DuplicateItem",
    "neardup_scrapy:NeardupSettingsError",
    "neardup_scrapy:NeardupStorageError",
    "neardup_scrapy.middlewares:NeardupDownloaderMiddleware",
    "neardup_scrapy.middlewares:MirrorHostRequest",
    "neardup_scrapy.pipelines:NeardupPipeline",
    "neardup_scrapy.extension:NeardupExtension",
    "neardup_scrapy.signals:duplicate_found",
    "neardup_scrapy.monitors:NeardupMonitorSuite",
    "neardup_scrapy.runtime:REPORT_TIMEOUT",
    "neardup_scrapy.report:validate_report",
    "neardup_scrapy.core:NearDupDetector",
    "neardup_scrapy.core:DetectorParams",
    "neardup_scrapy.core:Verdict",
    "neardup_scrapy.core:ParameterError",
    "neardup_scrapy.core:NearDupDetector.check",
    "neardup_scrapy.core:NearDupDetector.skip",
    "neardup_scrapy.core:NearDupDetector.report",
    "neardup_scrapy.core:NearDupDetector.settle",
    "neardup_scrapy.core:NearDupDetector.mirror_of",
    "neardup_scrapy.core:NearDupDetector().counts",
    "neardup_scrapy.core:NearDupDetector.close",
    "neardup_scrapy.core:Verdict.to_dict",
    "neardup_scrapy.core:Verdict.explain",
    "neardup_scrapy.core:Verdict.counted",
    "neardup_scrapy.core:Verdict.replaced",
    "neardup_scrapy.core:Verdict.droppable",
    "neardup_scrapy.core:Verdict.undecided",
    "neardup_scrapy.core.exports:cluster_rows",
    "neardup_scrapy.core.exports:pair_rows",
    "neardup_scrapy.core.exports:write_rows",
    "neardup_scrapy.core.urlrules:SkipPlanner",
    "neardup_scrapy.core.urlrules:UrlRuleLearner",
    "neardup_scrapy.core.urlrules:UrlRuleLearner.observe",
    "neardup_scrapy.core.urlrules:UrlRuleLearner.canonical",
    "neardup_scrapy.core.urlrules:UrlRuleLearner.summary",
    "neardup_scrapy.core.urlrules:UrlRuleLearner.load",
    "neardup_scrapy.core.storage:IndexStorage",
    "neardup_scrapy.core.storage:StorageError",
    "neardup_scrapy.core.storage:open_storage",
    "neardup_scrapy.core.storage.retry:CLOSE_PATIENCE",
]

#: The custom store protocol's methods as the README listed them.
STORE_METHODS = [
    "open",
    "close",
    "lookup",
    "fetch",
    "commit",
    "promote",
    "promote_origins",
    "__len__",
    "host_counts",
    "mirror_evidence",
    "clusters",
    "memory_bytes",
    "save_url_rules",
    "url_rules",
    "lookup_or_insert",
    "fetch_candidates",
    "flush",
]


def documentation() -> str:
    pages = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
    return "\n".join(page.read_text(encoding="utf-8") for page in pages)


def source() -> str:
    """The package's Python and Cython sources."""
    files = [p for p in sorted((ROOT / "neardup_scrapy").rglob("*")) if p.suffix in (".py", ".pyx")]
    return "\n".join(p.read_text(encoding="utf-8") for p in files)


def documented(name: str, text: str) -> bool:
    return re.search(rf"(?<![\w/-]){re.escape(name)}(?![\w-])", text) is not None


def all_documented_names() -> list[str]:
    names = [*SETTINGS, *TEST_ENVIRONMENT, *STATS, *META_KEYS, *RESPONSE_FLAGS, *SIGNALS]
    names += [*CLI, *sorted({flag for flags in CLI.values() for flag in flags})]
    names += sorted({entry.partition(":")[0] for entry in PUBLIC_NAMES})
    names += [entry.rpartition(":")[2].rpartition(".")[2].removesuffix("()") for entry in PUBLIC_NAMES]
    names += [f"`{method}" for method in STORE_METHODS]
    return list(dict.fromkeys(names))


@pytest.mark.parametrize("name", all_documented_names())
def test_still_documented(name: str) -> None:
    """Each name is still written in the README or a docs page."""
    text = documentation()
    if name.startswith("`"):  # a store method: written as code somewhere
        assert name in text, f"{name[1:]} is no longer documented"
        return
    assert documented(name, text), f"{name} is no longer documented in README.md or docs/"


def test_settings_exist() -> None:
    from neardup_scrapy.runtime import KNOWN_SETTINGS

    assert sorted(set(SETTINGS) - KNOWN_SETTINGS) == []


def test_test_environment_exists() -> None:
    tests = "\n".join(p.read_text(encoding="utf-8") for p in (ROOT / "tests").rglob("*.py"))
    for name in TEST_ENVIRONMENT:
        assert f'"{name}"' in tests, name


def string_literals(code: str) -> set[str]:
    """The double-quoted strings of the code; of an f-string, the text before its first field."""
    return {m.group(1).split("{", 1)[0] for m in re.finditer(r'(?<![\w"])f?"([^"\\\n]*)"', code)}


#: How the code composes the stats of a family from a word it names: the family's prefix as the
#: code writes it, and the function from the word to the stat's last part (``reason_key`` turns
#: the skip reason ``"too large"`` into ``too_large``).
FAMILIES = {
    "neardup/items/skipped/": ("skipped/{", "reason"),
    "neardup/skipped/": ("skipped/{", "reason"),
    "neardup/untouched/": ("untouched/{", "reason"),
    "neardup/dropped/": ("dropped/{", "word"),
    "neardup/items/": ('"neardup/items/"', "word"),
    "neardup/": ('"neardup/"', "word"),
}


def stat_exists(stat: str, code: str) -> bool:
    """The code writes the stat: literally, or as a family's prefix and a word the code names."""
    from neardup_scrapy.runtime import reason_key

    if f'"{stat}"' in code:
        return True
    family = max((f for f in FAMILIES if stat.startswith(f)), key=len)
    composed, how = FAMILIES[family]
    leaf = stat[len(family) :]
    static = leaf.split("<", 1)[0]
    words = {reason_key(s) if how == "reason" else s for s in string_literals(code)}
    found = any(w.startswith(static.rstrip("_")) for w in words) if "<" in leaf else leaf in words
    return composed in code and (found or static == "")


@pytest.mark.parametrize("stat", STATS)
def test_stats_exist(stat: str) -> None:
    assert stat_exists(stat, source()), f"no code writes the stat {stat}"


def test_meta_keys_and_flags_exist() -> None:
    code = source()
    for key in META_KEYS:
        assert f'"{key}"' in code, key
    for flag in RESPONSE_FLAGS:  # appended as f"neardup:{verdict.status}"
        prefix, _, status = flag.partition(":")
        assert f'"{flag}"' in code or (f'f"{prefix}:{{' in code and status in string_literals(code)), flag


def test_signals_exist() -> None:
    from neardup_scrapy import signals

    assert sorted(signals.__all__) == sorted(SIGNALS)
    for name in SIGNALS:
        assert getattr(signals, name) is not None


def test_cli_flags_exist() -> None:
    from neardup_scrapy.cli import build_parser

    parser = build_parser()
    subparsers = next(a for a in parser._actions if a.choices and isinstance(a.choices, dict))
    assert isinstance(subparsers.choices, dict)
    for command, flags in CLI.items():
        sub = subparsers.choices[command]
        options = {opt for action in sub._actions for opt in action.option_strings}
        assert sorted(set(flags) - options) == [], command


@pytest.mark.parametrize("entry", PUBLIC_NAMES)
def test_public_names_exist(entry: str) -> None:
    module_name, _, attribute = entry.partition(":")
    value: Any = importlib.import_module(module_name)
    for part in attribute.split("."):  # ``Class()``: an attribute set on each instance
        value = getattr(value, part.removesuffix("()"))
        if part.endswith("()"):
            value = value()


def test_store_protocol_methods_exist() -> None:
    from neardup_scrapy.core.storage import IndexStorage
    from neardup_scrapy.core.storage.memory import MemoryStorage

    for method in STORE_METHODS:
        assert hasattr(IndexStorage, method) and hasattr(MemoryStorage, method), method


def test_the_checks_tell_a_missing_name() -> None:
    """The checks above fail for names that do not exist (a check that cannot fail is none)."""
    code, text = source(), documentation()
    assert not stat_exists("neardup/skipped/no_such_reason", code)
    assert not stat_exists("neardup/no_such_stat", code)
    assert not stat_exists("neardup/untouched/no_such_<reason>", code)
    assert not documented("NEARDUP_NO_SUCH_SETTING", text)
    assert not documented("NEARDUP_THRESH", text)  # a prefix of a documented name is not it
