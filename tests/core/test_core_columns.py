"""Columns of the memory store (``neardup_scrapy.core.columns``)."""

from __future__ import annotations

import copy as copy_module
import ctypes
import pickle

import numpy as np
import numpy.typing as npt
from hypothesis import given
from hypothesis import strategies as st

from neardup_scrapy.core.columns import CHUNK_ROWS, BytesColumn, Column, StringColumn


def rows_at(addresses: npt.NDArray[np.uint64], n_rows: int) -> list[int]:
    """The first ``n_rows`` ``int64`` rows of a column, read from its chunks' addresses as a
    compiled reader reads them."""
    values: list[int] = []
    for address in addresses.tolist():
        values += (ctypes.c_int64 * CHUNK_ROWS).from_address(address)[: n_rows - len(values)]
    return values


@given(st.lists(st.binary(max_size=20), max_size=30))
def test_bytes_rows_come_back_and_lie_where_the_end_offsets_say(rows: list[bytes]) -> None:
    """What compiled readers see: row ``r`` spans ``blob[end(r - 1):end(r)]``."""
    column = BytesColumn()
    for row in rows:
        column.append(row)
    assert [column[i] for i in range(len(rows))] == rows
    ends = rows_at(column.end_addresses, len(rows))
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
    column = Column(np.int64)
    n_rows = 12 * CHUNK_ROWS + 5  # 13 chunks: the address table has grown past its first 8
    for value in range(n_rows):
        column.append(value)
    assert len(column.addresses) == 13
    assert rows_at(column.addresses, n_rows) == list(range(n_rows))
    shallow = copy_module.copy(column)  # shares the chunks, as a shallow copy of a list would
    assert rows_at(shallow.addresses, n_rows) == list(range(n_rows))
    for copy in (pickle.loads(pickle.dumps(column)), copy_module.deepcopy(column)):
        assert not set(copy.addresses.tolist()) & set(column.addresses.tolist())
        copy[3 * CHUNK_ROWS + 4] = -1
        assert rows_at(copy.addresses, n_rows)[3 * CHUNK_ROWS + 3 : 3 * CHUNK_ROWS + 6] == [
            3 * CHUNK_ROWS + 3,
            -1,
            3 * CHUNK_ROWS + 5,
        ]
    assert column[3 * CHUNK_ROWS + 4] == 3 * CHUNK_ROWS + 4
    strings = BytesColumn()
    strings.append(b"xy")
    assert rows_at(strings.end_addresses, 1) == [2]
