"""JSON Lines (one object per line) and JSON array feeds (Scrapy's ``-O items.json``)."""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import IO

from .base import JSON, TOO_LARGE, Unit

_CHUNK = 1 << 20
_WHITESPACE = b" \t\r\n"


class LineCounter:
    """Counts what a JSON reader passed over (blank lines)."""

    def __init__(self) -> None:
        self.blank = 0


def _lines(stream: IO[bytes], limit: int) -> Iterator[tuple[bytes, bool]]:
    """``(line, whole)`` of ``stream``; a line longer than ``limit`` (> 0) is drained unread."""
    if not limit:
        for line in stream:
            yield line, True
        return
    while True:
        line = stream.readline(limit + 1)
        if not line:
            return
        if len(line) <= limit or (line.endswith(b"\n") and len(line) == limit + 1):
            yield line, True
            continue
        while not line.endswith(b"\n"):  # drain the rest of an oversized line without keeping it
            line = stream.readline(_CHUNK)
            if not line:
                break
        yield b"", False


def json_lines(stream: IO[bytes], line_limit: int, counter: LineCounter) -> Iterator[Unit]:
    """Units of a JSON Lines stream; blank lines are counted and skipped."""
    for number, (line, whole) in enumerate(_lines(stream, line_limit), start=1):
        if not whole:
            yield Unit(number, JSON, b"", reason=TOO_LARGE)
        elif line.strip():
            yield Unit(number, JSON, line)
        else:
            counter.blank += 1


def json_array(stream: IO[bytes], line_limit: int, counter: LineCounter) -> Iterator[Unit]:
    """Units of a JSON array: one per element, cut out by :class:`_ArrayReader` without being parsed.

    Any layout: Scrapy's feed (``[``, one item per line, ``]``), ``FEED_EXPORT_INDENT`` (items
    over several lines), one line holding the whole array. A hostile element (nested too deep to
    parse, larger than ``line_limit``, not well-formed) costs only itself: the elements around
    it are read as usual.
    """
    del counter  # blank lines are not records of an array
    return _ArrayReader(stream, line_limit).units()


_OPENERS = b"{["
_CLOSER_OF = {ord("}"): ord("{"), ord("]"): ord("[")}
_QUOTE, _BACKSLASH, _NEWLINE = ord('"'), ord("\\"), ord("\n")
_INDENT = b" \t"
#: Bytes that matter inside an element, outside its strings.
_STRUCTURE = re.compile(rb'["{}\[\]\n]')
#: The rest of a string's body: stops before its closing quote, a raw newline (not allowed in
#: JSON strings: the element is broken), or a backslash that the buffer ends after.
_STRING_BODY = re.compile(rb'[^"\\\n]*(?:\\[^\n][^"\\\n]*)*')
#: An element that is not an array or an object: up to the next separator.
_SCALAR = re.compile(rb"[^,\]\n]*")
#: Openers whose kind is tracked to pair closers (deeper ones are only counted).
_TRACKED_DEPTH = 1 << 16
_END = -1


class _ArrayReader:
    """Cuts a JSON array into its elements, in one pass over a bounded buffer.

    The principle: an element's extent is found by pairing its brackets outside its strings,
    counted in a loop (never a recursion, so any nesting depth), and bytes are kept only while
    the element is within ``limit`` (a larger one is read to its end and dropped). So a hostile
    element is cut out whole and the next one starts where it should; parsing (and failing to
    parse) is left to :func:`~.base.decode`, which reports the element and its line.

    An element that is not well-formed is cut short and the reading goes on: a closer closes the
    nearest opener of its kind (and what is open inside it), and one that closes nothing of the
    element ends it; a raw newline inside a string (not allowed in JSON), or a line that starts
    at the element's own column with ``{``, ``[`` or ``]`` while brackets are still open, ends it
    there, and the next element is the next line starting at that column (Scrapy's layouts and
    ``json.dump(indent=…)`` put every element at one column). An unclosed string in a one-line
    array takes the rest of that line with it: nothing marks where the next element starts.

    An element written over several lines is passed on with its newlines as spaces (newlines
    are whitespace between tokens of a well-formed element), so the output stays JSON Lines.
    """

    def __init__(self, stream: IO[bytes], limit: int) -> None:
        self.stream = stream
        self.limit = limit
        self.buf = bytearray()
        self.eof = False
        self.line = 1  # line of buf[0]
        self.line_start = 0  # column of buf[0] on its line (bytes since the last newline)
        self.dropping = False  # the element being read is too large: its bytes are not kept

    # -- the buffer ----------------------------------------------------------------------------
    def _more(self) -> bool:
        """Read more of the stream into the buffer; False at its end."""
        if self.eof:
            return False
        data = self.stream.read(_CHUNK)
        if not data:
            self.eof = True
            return False
        self.buf += data
        return True

    def _drop(self, n: int) -> None:
        """Forget ``buf[:n]``, counting its lines."""
        buf = self.buf
        lines = buf.count(b"\n", 0, n)
        if lines:
            self.line += lines
            self.line_start = n - buf.rfind(b"\n", 0, n) - 1
        else:
            self.line_start += n
        del buf[:n]

    # -- elements --------------------------------------------------------------------------------
    def units(self) -> Iterator[Unit]:
        buf = self.buf
        at = self._skip(0, b"\xef\xbb\xbf \t\r\n")
        if at != _END and buf[at] == ord("["):
            at += 1
        while at != _END:
            at = self._skip(at, b" \t\r\n,")
            if at == _END:
                return
            if buf[at] == ord("]"):  # the end of the array, or a stray closer of a broken element
                at = self._skip(at + 1, b" \t\r\n")
                if at == _END:
                    return
                if buf[at] == ord("["):  # another array after it (a feed appended to with -o)
                    at += 1
                continue
            self._drop(at)
            number, column = self.line, self.line_start
            self.dropping = False
            first = buf[0]
            if first in _OPENERS:
                end, resume = self._container(column)
            elif first == _QUOTE:
                end, whole = self._string(1)
                end, resume = (end + 1, end + 1) if whole else (end, None)
            else:
                end = resume = self._scalar()
            if self.dropping:  # too large: read to its end, its bytes gone
                yield Unit(number, JSON, b"", reason=TOO_LARGE)
            else:
                payload = bytes(buf[:end])
                if b"\n" in payload:
                    payload = _LINE_BREAK.sub(b" ", payload)
                yield Unit(number, JSON, payload)
            at = resume if resume is not None else self._resync(end, column)

    def _skip(self, at: int, chars: bytes) -> int:
        """The first position from ``at`` whose byte is not in ``chars``; ``_END`` at the end."""
        buf = self.buf
        while True:
            while at < len(buf) and buf[at] in chars:
                at += 1
            if at < len(buf):
                return at
            if not self._more():
                return _END

    def _keep(self, at: int) -> int:
        """Position ``at`` of the element being read, after dropping what is read of it when it is
        too large (then only its end is looked for)."""
        if not self.dropping and self.limit and at > self.limit:
            self.dropping = True
        if self.dropping and at > _CHUNK:
            self._drop(at)
            return 0
        return at

    def _container(self, column: int) -> tuple[int, int | None]:
        """``(end, resume)`` of the array or object at ``buf[0]``: where the next element is
        looked for from, ``None`` when the element broke (a raw newline in a string, brackets
        left open, the end of the input): then from the next line that starts one."""
        buf = self.buf
        stack = bytearray()
        depth = 0
        at = 0
        while True:
            at = self._keep(at)
            match = _STRUCTURE.search(buf, at)
            if match is None:
                at = len(buf)
                if not self._more():
                    return at, None
                continue
            at = match.start()
            byte = buf[at]
            if byte == _QUOTE:
                end, whole = self._string(at + 1)
                if not whole:
                    return end, None
                at = end + 1
                continue
            if byte == _NEWLINE:
                if self._starts_element(at + 1, column):
                    return at, None  # brackets left open: the next element starts on this line
                at += 1
                continue
            at += 1
            if byte in _OPENERS:
                depth += 1
                if depth <= _TRACKED_DEPTH:
                    stack.append(byte)
                continue
            # a closer closes the nearest opener of its kind, and whatever is open inside it
            if depth > _TRACKED_DEPTH:
                depth -= 1
            else:
                found = stack.rfind(_CLOSER_OF[byte])
                if found < 0:  # it closes nothing of this element: the element ends before it
                    return at - 1, at
                depth = found
                del stack[found:]
            if depth == 0:
                return at, at

    def _string(self, at: int) -> tuple[int, bool]:
        """From inside a string at ``at``: ``(position of its closing quote, True)``, or
        ``(where it breaks, False)`` at a raw newline or the end of the input."""
        buf = self.buf
        while True:
            end = _STRING_BODY.match(buf, at).end()  # type: ignore[union-attr]
            if end < len(buf):
                byte = buf[end]
                if byte == _QUOTE:
                    return end, True
                if byte == _NEWLINE:
                    return end, False
                if end + 1 < len(buf):  # a backslash before a raw newline
                    return end + 1, False
            at = self._keep(end)
            if not self._more():
                return len(buf), False

    def _scalar(self) -> int:
        """The end of an element that is neither an array nor an object nor a string."""
        buf = self.buf
        at = 0
        while True:
            end = _SCALAR.match(buf, at).end()  # type: ignore[union-attr]
            if end < len(buf):
                return end
            at = self._keep(end)
            if not self._more():
                return len(buf)

    def _starts_element(self, at: int, column: int) -> bool:
        """Whether the line starting at ``at`` has ``{``, ``[`` or ``]`` at ``column`` after its indent."""
        buf = self.buf
        while at + column >= len(buf) and self._more():
            pass
        indent = 0
        while indent <= column and at + indent < len(buf) and buf[at + indent] in _INDENT:
            indent += 1
        return indent == column and at + indent < len(buf) and buf[at + indent] in b"{[]"

    def _resync(self, at: int, column: int) -> int:
        """After a broken element: where the next line that starts an element at ``column`` does."""
        buf = self.buf
        while True:
            newline = buf.find(b"\n", at)
            while newline < 0:
                self._drop(len(buf))
                if not self._more():
                    return _END
                newline = buf.find(b"\n")
            if self._starts_element(newline + 1, column):
                return newline + 1 + column
            at = newline + 1


_LINE_BREAK = re.compile(rb"\r?\n")
