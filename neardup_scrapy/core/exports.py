"""Full exports of an index (the documented import path; the code is
:mod:`neardup_scrapy.core.detection.exports`)."""

from .detection.exports import cluster_rows, pair_rows, write_rows

__all__ = ["cluster_rows", "pair_rows", "write_rows"]
