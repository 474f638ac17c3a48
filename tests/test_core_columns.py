"""Columns of the memory store (``neardup_scrapy.core.columns``)."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from neardup_scrapy.core.columns import BytesColumn, StringColumn


@given(st.lists(st.binary(max_size=20), max_size=30))
def test_bytes_rows_come_back_and_lie_where_the_end_offsets_say(rows: list[bytes]) -> None:
    """What compiled readers see: row ``r`` spans ``blob[end(r - 1):end(r)]``."""
    column = BytesColumn()
    for row in rows:
        column.append(row)
    assert [column[i] for i in range(len(rows))] == rows
    ends = [int(end) for chunk in column.end_chunks for end in chunk][: len(rows)]
    starts = [0, *ends][:-1]
    assert [bytes(column.blob[a:b]) for a, b in zip(starts, ends, strict=True)] == rows


@given(st.lists(st.text(max_size=12), max_size=20))
def test_strings_keep_every_code_point_lone_surrogates_too(rows: list[str]) -> None:
    column = StringColumn()
    for row in rows:
        column.append(row)
    assert [column[i] for i in range(len(rows))] == rows
