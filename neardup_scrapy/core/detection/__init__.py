"""The detector and what it does with the index: keys and candidates (:mod:`.lookup`), the
decision (:mod:`.decide`), the commit and the verdict (:mod:`.commit`), the mirror hosts named
so far (:mod:`.mirror_state`), the report's data (:mod:`.report_data`) and the full exports
(:mod:`.exports`).

It sits above :mod:`neardup_scrapy.core.storage`, which sits above the rest of the core: imports
go one way. The public names are re-exported by :mod:`neardup_scrapy.core`.
"""
