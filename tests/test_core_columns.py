"""Columns of the memory store (``neardup_scrapy.core.columns``)."""

from __future__ import annotations

import copy as copy_module
import pickle

import numpy as np
from hypothesis import given
from hypothesis import strategies as st

from neardup_scrapy.core.columns import CHUNK_ROWS, BytesColumn, Column, StringColumn


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


def test_chunk_addresses_follow_the_chunks_and_are_renewed_in_a_copy() -> None:
    """Compiled readers take a row from its chunk's address: every chunk's, in order, and a copy's
    own (a pickled or copied column must not point into the original's memory)."""
    column = Column(np.uint64)
    for value in range(3 * CHUNK_ROWS + 5):
        column.append(value)
    for _ in range(9 * CHUNK_ROWS):  # 13 chunks: the address table has grown past its first 8
        column.append(7)
    assert len(column.chunks) == 13
    assert column.addresses.tolist() == [chunk.ctypes.data for chunk in column.chunks]
    for copy in (pickle.loads(pickle.dumps(column)), copy_module.copy(column), copy_module.deepcopy(column)):
        assert copy.addresses.tolist() == [chunk.ctypes.data for chunk in copy.chunks]
        assert copy[3 * CHUNK_ROWS + 4] == 3 * CHUNK_ROWS + 4
    strings = BytesColumn()
    strings.append(b"x")
    assert strings.end_addresses.tolist() == [strings.end_chunks[0].ctypes.data]
