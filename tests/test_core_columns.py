"""Columns of the memory store (``neardup_scrapy.core.columns``)."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from neardup_scrapy.core.columns import BytesColumn, StringColumn


@given(st.lists(st.binary(max_size=20), max_size=30), st.binary(max_size=6))
def test_bytes_rows_come_back_and_are_tested_for_a_prefix_in_place(rows: list[bytes], prefix: bytes) -> None:
    column = BytesColumn()
    for row in rows:
        column.append(row)
    assert [column[i] for i in range(len(rows))] == rows
    assert [column.startswith(i, prefix) for i in range(len(rows))] == [r.startswith(prefix) for r in rows]


@given(st.lists(st.text(max_size=12), max_size=20))
def test_strings_keep_every_code_point_lone_surrogates_too(rows: list[str]) -> None:
    column = StringColumn()
    for row in rows:
        column.append(row)
    assert [column[i] for i in range(len(rows))] == rows
