"""NEARDUP_* settings: defaults, parsing, validation, and the add-on's component wiring."""

from __future__ import annotations

import logging
import subprocess
import sys

import pytest
from e2e_crawl import make_crawler as get_crawler
from scrapy import Spider
from scrapy.exceptions import NotConfigured
from scrapy.settings import Settings

from neardup_scrapy import (
    Addon,
    NeardupDownloaderMiddleware,
    NeardupExtension,
    NeardupPipeline,
    NeardupSettingsError,
    NeardupSpiderMiddleware,
)
from neardup_scrapy.config import parse_settings
from neardup_scrapy.runtime import NeardupRuntime


class NamedSpider(Spider):
    name = "named"


def test_defaults() -> None:
    config = parse_settings(Settings(), "myspider")
    assert config.enabled and config.action == "tag" and not config.drop
    assert config.params.threshold == 0.8 and config.params.algorithm == "both"
    assert config.params.num_perm == 128 and config.params.shingle_size == 5
    assert config.params.scope == "global"
    assert config.field == "neardup" and config.item_fields == ()
    assert config.follow_duplicates and not config.skip_mirrors
    assert config.report_file is None and config.report_html is None and not config.debug
    assert config.storage == "memory" and config.on_storage_error == "pass"
    assert config.redis_prefix == "myspider"
    assert config.max_body_bytes == 10_000_000
    assert config.worker == "process"


def test_values_are_parsed() -> None:
    config = parse_settings(
        Settings(
            {
                "NEARDUP_ACTION": "DROP",
                "NEARDUP_THRESHOLD": "0.9",
                "NEARDUP_ALGORITHM": "minhash",
                "NEARDUP_NUM_PERM": "64",
                "NEARDUP_SCOPE": "host",
                "NEARDUP_ITEM_FIELDS": "title, body",
                "NEARDUP_FOLLOW_DUPLICATES": "False",
                "NEARDUP_SKIP_MIRRORS": "1",
                "NEARDUP_TTL": "3600",
                "NEARDUP_MIRROR_MIN_PAGES": 5,
                "NEARDUP_REPORT_FILE": "out/report.json",
                "NEARDUP_WORKER": "inline",
            }
        )
    )
    assert config.drop
    assert config.params.threshold == 0.9 and config.params.algorithm == "minhash"
    assert config.params.num_perm == 64 and config.params.scope == "host"
    assert config.item_fields == ("title", "body")
    assert not config.follow_duplicates and config.skip_mirrors
    assert config.params.ttl == 3600.0 and config.params.mirror_min_pages == 5
    assert config.report_file == "out/report.json"
    assert config.worker == "inline"


@pytest.mark.parametrize(
    ("settings", "setting", "accepts"),
    [
        ({"NEARDUP_THRESHOLD": 1.5}, "NEARDUP_THRESHOLD", "(0, 1]"),
        ({"NEARDUP_THRESHOLD": "high"}, "NEARDUP_THRESHOLD", "(0, 1]"),
        ({"NEARDUP_THRESHOLD": 0}, "NEARDUP_THRESHOLD", "(0, 1]"),
        ({"NEARDUP_ACTION": "delete"}, "NEARDUP_ACTION", "'tag', 'drop'"),
        ({"NEARDUP_ACTION": 3}, "NEARDUP_ACTION", "'tag', 'drop'"),
        ({"NEARDUP_ALGORITHM": "x"}, "NEARDUP_ALGORITHM", "'minhash'"),
        ({"NEARDUP_NUM_PERM": "many"}, "NEARDUP_NUM_PERM", "integer"),
        ({"NEARDUP_NUM_PERM": 8}, "NEARDUP_NUM_PERM", "16..1024"),
        ({"NEARDUP_SHINGLE_SIZE": 2.5}, "NEARDUP_SHINGLE_SIZE", "integer"),
        ({"NEARDUP_SHINGLE_KIND": "byte"}, "NEARDUP_SHINGLE_KIND", "'char'"),
        ({"NEARDUP_SIMHASH_DISTANCE": 20}, "NEARDUP_SIMHASH_DISTANCE", "0..8"),
        ({"NEARDUP_MIN_TOKENS": -1}, "NEARDUP_MIN_TOKENS", ">= 0"),
        ({"NEARDUP_SCOPE": "site"}, "NEARDUP_SCOPE", "'host'"),
        ({"NEARDUP_MIRROR_SHARE": 2}, "NEARDUP_MIRROR_SHARE", "(0, 1]"),
        ({"NEARDUP_TTL": -5}, "NEARDUP_TTL", "positive"),
        ({"NEARDUP_DEBUG": "maybe"}, "NEARDUP_DEBUG", "True or False"),
        ({"NEARDUP_FOLLOW_DUPLICATES": "sometimes"}, "NEARDUP_FOLLOW_DUPLICATES", "True or False"),
        ({"NEARDUP_FIELD": "my field"}, "NEARDUP_FIELD", "field name"),
        ({"NEARDUP_ITEM_FIELDS": ["title", 3]}, "NEARDUP_ITEM_FIELDS", "field names"),
        ({"NEARDUP_STORAGE": "cloud"}, "NEARDUP_STORAGE", "'redis'"),
        ({"NEARDUP_STORAGE": "disk"}, "NEARDUP_DISK_PATH", "JOBDIR"),
        (
            {"NEARDUP_STORAGE": "redis", "NEARDUP_REDIS_URL": "localhost:6379"},
            "NEARDUP_REDIS_URL",
            "redis://",
        ),
        (
            {"NEARDUP_STORAGE": "redis-cluster", "NEARDUP_REDIS_URL": "unix:///tmp/redis.sock"},
            "NEARDUP_REDIS_URL",
            "cluster node",
        ),
        (
            {"NEARDUP_STORAGE": "redis-cluster", "NEARDUP_REDIS_PREFIX": "a{b}"},
            "NEARDUP_REDIS_PREFIX",
            "braces",
        ),
        ({"NEARDUP_ON_STORAGE_ERROR": "retry"}, "NEARDUP_ON_STORAGE_ERROR", "'pass', 'stop'"),
        ({"NEARDUP_MAX_BODY_BYTES": -1}, "NEARDUP_MAX_BODY_BYTES", ">= 0"),
        ({"NEARDUP_WORKER": "thread"}, "NEARDUP_WORKER", "'inline'"),
        ({"NEARDUP_LSH_BANDS": 100, "NEARDUP_LSH_ROWS": 100}, "NEARDUP_LSH_BANDS", "bands * rows"),
    ],
)
def test_invalid_values_name_the_setting(settings: dict[str, object], setting: str, accepts: str) -> None:
    with pytest.raises(NeardupSettingsError) as info:
        parse_settings(Settings(settings))
    assert info.value.setting == setting
    message = str(info.value)
    assert setting in message and accepts in message


def test_invalid_value_stops_every_component() -> None:
    crawler = get_crawler(NamedSpider, {"NEARDUP_THRESHOLD": 1.5})
    for component in (
        NeardupDownloaderMiddleware,
        NeardupSpiderMiddleware,
        NeardupExtension,
        NeardupPipeline,
    ):
        with pytest.raises(NeardupSettingsError, match="NEARDUP_THRESHOLD"):
            component.from_crawler(crawler)


def test_disk_defaults_to_jobdir(tmp_path: object) -> None:
    config = parse_settings(Settings({"NEARDUP_STORAGE": "disk", "JOBDIR": "/tmp/job"}))
    assert config.disk_path == "/tmp/job/neardup.sqlite"
    explicit = parse_settings(Settings({"NEARDUP_STORAGE": "disk", "NEARDUP_DISK_PATH": "/x/index.db"}))
    assert explicit.disk_path == "/x/index.db"


def test_jobdir_makes_the_index_persistent_unless_told_otherwise() -> None:
    assert parse_settings(Settings({})).storage == "memory"
    by_jobdir = parse_settings(Settings({"JOBDIR": "/tmp/job"}))
    assert (by_jobdir.storage, by_jobdir.disk_path) == ("disk", "/tmp/job/neardup.sqlite")
    assert parse_settings(Settings({"JOBDIR": "/tmp/job", "NEARDUP_STORAGE": "memory"})).storage == "memory"


def test_redis_url_falls_back_to_scrapy_redis_setting() -> None:
    config = parse_settings(Settings({"NEARDUP_STORAGE": "redis", "REDIS_URL": "redis://10.0.0.1:6379/2"}))
    assert config.redis_url == "redis://10.0.0.1:6379/2"
    assert "10.0.0.1" in config.storage_description()
    secret = parse_settings(Settings({"NEARDUP_STORAGE": "redis", "NEARDUP_REDIS_URL": "redis://u:pw@h:1/0"}))
    assert "pw" not in secret.storage_description()


def test_redis_cluster_storage_is_accepted() -> None:
    config = parse_settings(
        Settings({"NEARDUP_STORAGE": "Redis-Cluster", "NEARDUP_REDIS_URL": "redis://u:pw@10.0.0.3:7000/0"})
    )
    assert config.storage == "redis-cluster"
    assert config.storage_description() == "redis-cluster (redis://u:***@10.0.0.3:7000/0, prefix 'neardup')"


def test_disabled_components_are_not_configured() -> None:
    crawler = get_crawler(NamedSpider, {"NEARDUP_ENABLED": False})
    for component in (
        NeardupDownloaderMiddleware,
        NeardupSpiderMiddleware,
        NeardupExtension,
        NeardupPipeline,
    ):
        with pytest.raises(NotConfigured):
            component.from_crawler(crawler)


def test_one_runtime_per_crawler() -> None:
    crawler = get_crawler(NamedSpider, {"NEARDUP_WORKER": "inline"})
    downloader = NeardupDownloaderMiddleware.from_crawler(crawler)
    spider_mw = NeardupSpiderMiddleware.from_crawler(crawler)
    assert downloader.runtime is spider_mw.runtime is NeardupRuntime.of(crawler)
    assert downloader.runtime.config.redis_prefix == "named"
    downloader.runtime.close()


def test_pipeline_needs_item_fields() -> None:
    crawler = get_crawler(NamedSpider, {"NEARDUP_WORKER": "inline"})
    with pytest.raises(NotConfigured):
        NeardupPipeline.from_crawler(crawler)
    NeardupRuntime.of(crawler).close()


def test_unknown_setting_is_warned(caplog: pytest.LogCaptureFixture) -> None:
    crawler = get_crawler(NamedSpider, {"NEARDUP_TRESHOLD": 0.9, "NEARDUP_WORKER": "inline"})
    with caplog.at_level(logging.WARNING):
        NeardupRuntime.of(crawler).close()
    assert "NEARDUP_TRESHOLD" in caplog.text
    assert "did you mean NEARDUP_THRESHOLD?" in caplog.text


def test_addon_and_components_have_readable_names() -> None:
    assert repr(Addon()) == "neardup_scrapy.Addon"
    crawler = get_crawler(NamedSpider, {"NEARDUP_WORKER": "inline"})
    assert repr(NeardupDownloaderMiddleware.from_crawler(crawler)) == "NeardupDownloaderMiddleware()"
    NeardupRuntime.of(crawler).close()


DOWNLOADER_PATH = "neardup_scrapy.middlewares.NeardupDownloaderMiddleware"
RULES_PATH = "neardup_scrapy.urlrules.NeardupUrlRulesMiddleware"


def test_addon_enables_components_and_user_settings_win() -> None:
    settings = Settings({"DOWNLOADER_MIDDLEWARES": {"neardup_scrapy.NeardupDownloaderMiddleware": 560}})
    settings["SPIDER_MIDDLEWARES"] = {"neardup_scrapy.middlewares.NeardupSpiderMiddleware": None}
    Addon().update_settings(settings)
    downloader = settings.getdict("DOWNLOADER_MIDDLEWARES")
    assert list(downloader.values()) == [560, 530]
    assert list(settings.getdict("SPIDER_MIDDLEWARES").values()) == [None]
    assert settings.getdict("ITEM_PIPELINES") == {"neardup_scrapy.pipelines.NeardupPipeline": 200}
    assert settings.getdict("EXTENSIONS") == {"neardup_scrapy.extension.NeardupExtension": 100}

    fresh = Settings()
    Addon().update_settings(fresh)
    assert fresh.getdict("DOWNLOADER_MIDDLEWARES") == {DOWNLOADER_PATH: 540, RULES_PATH: 530}
    assert fresh.getdict("SPIDER_MIDDLEWARES") == {"neardup_scrapy.middlewares.NeardupSpiderMiddleware": 100}


def test_addon_through_a_crawler() -> None:
    crawler = get_crawler(NamedSpider, {"ADDONS": {"neardup_scrapy.Addon": 100}})
    assert crawler.settings.getdict("DOWNLOADER_MIDDLEWARES") == {DOWNLOADER_PATH: 540, RULES_PATH: 530}


def test_core_imports_without_scrapy() -> None:
    code = (
        "import sys, neardup_scrapy.core, neardup_scrapy.report; assert 'scrapy' not in sys.modules, 'scrapy'"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


def test_lazy_exports() -> None:
    import neardup_scrapy

    assert neardup_scrapy.Addon is Addon
    assert isinstance(neardup_scrapy.__version__, str)
    with pytest.raises(AttributeError):
        neardup_scrapy.NoSuchThing  # noqa: B018
