"""The frames on the pipes between the crawl's process and the worker process.

A frame is a 4-byte big-endian length and a pickle. A call is ``(op, call id, payload)``; an
answer is ``(call id, ok, result)``, where a failed call's result is ``(type name, message,
is a store failure)``. Call id 0 wants no answer; the worker sends its log records under
:data:`LOG_ID` and its map of mirror hosts under :data:`MIRRORS_ID`.
"""

from __future__ import annotations

import pickle
import struct
from typing import IO, Any

from neardup_scrapy.core.storage.base import StorageError

__all__ = ["HEADER", "LOG_ID", "MIRRORS_ID", "WorkerCallError", "WorkerError", "frame", "read_frame"]

HEADER = struct.Struct("!I")
LOG_ID = -1  # call id of a log record sent by the worker
MIRRORS_ID = -2  # call id of the worker's map of mirror hosts, sent when it changes


class WorkerError(StorageError):
    """The worker process or its store failed, or it exited; handled by ``NEARDUP_ON_STORAGE_ERROR``."""


class WorkerCallError(RuntimeError):
    """A call failed in the worker with an unexpected error (not a store failure)."""


def frame(obj: Any) -> bytes:
    data = pickle.dumps(obj, protocol=pickle.HIGHEST_PROTOCOL)
    return HEADER.pack(len(data)) + data


def read_exact(stream: IO[bytes], size: int) -> bytes | None:
    chunks = []
    while size:
        chunk = stream.read(size)
        if not chunk:
            return None
        chunks.append(chunk)
        size -= len(chunk)
    return b"".join(chunks)


def read_frame(stream: IO[bytes]) -> Any:
    header = read_exact(stream, HEADER.size)
    if header is None:
        raise EOFError
    data = read_exact(stream, HEADER.unpack(header)[0])
    if data is None:
        raise EOFError
    return pickle.loads(data)
