"""Growable numpy columns in fixed-size chunks (no per-row Python object, no 2x over-allocation)."""

from __future__ import annotations

from typing import Any

import numpy as np
import numpy.typing as npt

CHUNK_BITS = 15
CHUNK_ROWS = 1 << CHUNK_BITS


class Column:
    """An append-only column of fixed-width rows stored in chunks of ``CHUNK_ROWS`` rows."""

    def __init__(self, dtype: Any, width: int = 0) -> None:
        self._dtype = np.dtype(dtype)
        self._shape: tuple[int, ...] = (CHUNK_ROWS, width) if width else (CHUNK_ROWS,)
        self._chunks: list[npt.NDArray[Any]] = []
        self._addresses = np.zeros(8, dtype=np.uint64)
        self._rows = 0

    def __len__(self) -> int:
        return self._rows

    def __setstate__(self, state: dict[str, Any]) -> None:
        # a copy (pickle, copy.copy) has chunks of its own: their addresses are new
        self.__dict__.update(state)
        self._addresses = np.zeros(max(8, len(self._chunks)), dtype=np.uint64)
        for i, block in enumerate(self._chunks):
            self._addresses[i] = block.ctypes.data

    @property
    def nbytes(self) -> int:
        """Bytes allocated."""
        return sum(c.nbytes for c in self._chunks)

    @property
    def addresses(self) -> npt.NDArray[np.uint64]:
        """Where each chunk's rows start in memory, one value per chunk (row ``r`` is row
        ``r % CHUNK_ROWS`` of chunk ``r >> CHUNK_BITS``), for compiled readers that take a row in
        one load instead of a buffer request per chunk; valid while the column lives (chunks
        are never moved or freed)."""
        return self._addresses[: len(self._chunks)]

    def append(self, value: Any) -> int:
        """Append one row and return its index."""
        row = self._rows
        chunk, offset = divmod(row, CHUNK_ROWS)
        if chunk == len(self._chunks):
            block = np.zeros(self._shape, dtype=self._dtype)
            if chunk == len(self._addresses):
                self._addresses = np.concatenate([self._addresses, np.zeros_like(self._addresses)])
            self._addresses[chunk] = block.ctypes.data
            self._chunks.append(block)
        self._chunks[chunk][offset] = value
        self._rows += 1
        return row

    def __getitem__(self, row: int) -> Any:
        chunk, offset = divmod(row, CHUNK_ROWS)
        return self._chunks[chunk][offset]

    def __setitem__(self, row: int, value: Any) -> None:
        chunk, offset = divmod(row, CHUNK_ROWS)
        self._chunks[chunk][offset] = value

    def take(self, rows: npt.NDArray[np.int64]) -> npt.NDArray[Any]:
        """Rows ``rows`` as one array (in the given order)."""
        if len(self._chunks) == 1:
            return self._chunks[0][rows]
        if len(rows) <= 4:  # the usual candidate count: index the chunks directly
            picked = [self._chunks[row // CHUNK_ROWS][row % CHUNK_ROWS] for row in rows.tolist()]
            return np.array(picked, dtype=self._dtype).reshape((len(rows), *self._shape[1:]))
        out = np.empty((len(rows), *self._shape[1:]), dtype=self._dtype)
        chunk_of, offset = np.divmod(rows, CHUNK_ROWS)
        for chunk in np.unique(chunk_of).tolist():
            sel = chunk_of == chunk
            out[sel] = self._chunks[chunk][offset[sel]]
        return out

    def all(self) -> npt.NDArray[Any]:
        """All rows as one array (a copy)."""
        if not self._chunks:
            return np.empty((0, *self._shape[1:]), dtype=self._dtype)
        return np.concatenate(self._chunks)[: self._rows]


class BytesColumn:
    """Append-only byte strings in one bytearray with int64 end offsets."""

    def __init__(self) -> None:
        self._blob = bytearray()
        self._ends = Column(np.int64)

    def __len__(self) -> int:
        return len(self._ends)

    @property
    def nbytes(self) -> int:
        """Bytes allocated (blob plus offsets)."""
        return len(self._blob) + self._ends.nbytes

    @property
    def blob(self) -> bytearray:
        """All rows' bytes end to end, for compiled readers; not to be modified."""
        return self._blob

    @property
    def end_addresses(self) -> npt.NDArray[np.uint64]:
        """:attr:`Column.addresses` of the rows' ``int64`` end offsets into :attr:`blob` (row ``r``
        spans ``[end(r - 1), end(r))``, ``end(-1) = 0``)."""
        return self._ends.addresses

    def append(self, value: bytes) -> int:
        """Append a byte string and return its row."""
        self._blob += value
        return self._ends.append(len(self._blob))

    def __getitem__(self, row: int) -> bytes:
        start = int(self._ends[row - 1]) if row else 0
        return bytes(self._blob[start : int(self._ends[row])])


class StringColumn(BytesColumn):
    """Append-only strings, stored as UTF-8 (lone surrogates kept)."""

    def append(self, value: str) -> int:  # type: ignore[override]
        """Append a string and return its row."""
        return super().append(value.encode("utf-8", "surrogatepass"))

    def __getitem__(self, row: int) -> str:  # type: ignore[override]
        return super().__getitem__(row).decode("utf-8", "surrogatepass")
