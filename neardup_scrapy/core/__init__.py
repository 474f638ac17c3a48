"""Framework-free near-duplicate engine: main-content text, SimHash + MinHash LSH, clusters, mirrors.

Nothing here imports Scrapy or Twisted; the Scrapy components in :mod:`neardup_scrapy` are thin
glue around :class:`NearDupDetector`.
"""

from .analysis import PageAnalysis, PageAnalyzer
from .detection.detector import NearDupDetector
from .detection.report_data import REPORT_FORMAT
from .params import DetectorParams, ParameterError
from .storage.base import IndexStorage, ParameterMismatchError, StorageError
from .verdict import Verdict

__all__ = [
    "REPORT_FORMAT",
    "DetectorParams",
    "IndexStorage",
    "NearDupDetector",
    "PageAnalysis",
    "PageAnalyzer",
    "ParameterError",
    "ParameterMismatchError",
    "StorageError",
    "Verdict",
]
