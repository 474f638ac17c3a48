"""neardup-scrapy: content-aware duplicate detection for Scrapy crawls.

Enable everything with the add-on::

    ADDONS = {"neardup_scrapy.Addon": 100}

The Scrapy components are imported lazily (module ``__getattr__``), so that
``neardup_scrapy.core`` -- the framework-free detector -- and the command-line tool can be
used without importing Scrapy.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .addon import Addon
    from .config import NeardupConfig, NeardupSettingsError
    from .extension import NeardupExtension
    from .middlewares import (
        DuplicatePage,
        MirrorHostRequest,
        NeardupDownloaderMiddleware,
        NeardupSpiderMiddleware,
    )
    from .pipelines import DuplicateItem, NeardupPipeline
    from .runtime import NeardupStorageError
    from .urlrules import NeardupUrlRulesMiddleware, PredictedDuplicate

__all__ = [
    "Addon",
    "DuplicateItem",
    "DuplicatePage",
    "MirrorHostRequest",
    "NeardupConfig",
    "NeardupDownloaderMiddleware",
    "NeardupExtension",
    "NeardupPipeline",
    "NeardupSettingsError",
    "NeardupSpiderMiddleware",
    "NeardupStorageError",
    "NeardupUrlRulesMiddleware",
    "PredictedDuplicate",
    "__version__",
]

_EXPORTS = {
    "Addon": "addon",
    "NeardupConfig": "config",
    "NeardupSettingsError": "config",
    "NeardupExtension": "extension",
    "DuplicatePage": "middlewares",
    "MirrorHostRequest": "middlewares",
    "NeardupDownloaderMiddleware": "middlewares",
    "NeardupSpiderMiddleware": "middlewares",
    "DuplicateItem": "pipelines",
    "NeardupPipeline": "pipelines",
    "NeardupStorageError": "runtime",
    "NeardupUrlRulesMiddleware": "urlrules",
    "PredictedDuplicate": "urlrules",
}


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is not None:
        value = getattr(importlib.import_module(f".{module}", __name__), name)
        globals()[name] = value
        return value
    if name == "__version__":
        from importlib import metadata

        try:
            version = metadata.version("neardup-scrapy")
        except metadata.PackageNotFoundError:  # pragma: no cover - a source tree
            version = "0+unknown"
        globals()[name] = version
        return version
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
