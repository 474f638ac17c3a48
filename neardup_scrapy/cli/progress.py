"""A one-line progress display for the command-line tool (stderr, terminals only).

The line shows pages done, the rate and, when the amount of input is known, a bar, the share
done and the time left. It is redrawn at most every ``interval`` seconds, so the cost per
page is one clock read. When the stream is not a terminal nothing is drawn.
"""

from __future__ import annotations

import io
import os
import shutil
import time
from typing import TextIO


def _clock(seconds: float) -> str:
    seconds = max(int(seconds), 0)
    hours, rest = divmod(seconds, 3600)
    minutes, secs = divmod(rest, 60)
    return f"{hours}:{minutes:02d}:{secs:02d}" if hours else f"{minutes}:{secs:02d}"


class Progress:
    """Progress line on a terminal stream.

    Args:
        stream: where to draw (normally ``sys.stderr``).
        total: the amount of input in the unit of :meth:`update`'s ``done`` (bytes), or
            ``None`` when unknown (stdin, pipes).
        enabled: draw at all; defaults to whether ``stream`` is a terminal.
        interval: seconds between redraws.
        label: text shown before the line (e.g. which input of several).
    """

    def __init__(
        self,
        stream: TextIO,
        total: int | None = None,
        *,
        enabled: bool | None = None,
        interval: float = 0.2,
        label: str = "",
    ) -> None:
        self.stream = stream
        self.label = label
        self.total = total if total and total > 0 else None
        if enabled is None:
            try:
                enabled = stream.isatty()
            except (AttributeError, ValueError):
                enabled = False
        self.enabled = enabled
        self.interval = interval
        self.started = time.monotonic()
        self._next = self.started + interval
        self._shown = False
        self.pages = 0
        self.duplicates = 0
        self.done = 0

    def update(self, pages: int, done: int = 0, duplicates: int = 0) -> None:
        """Record progress and redraw when due.

        Args:
            pages: pages processed so far.
            done: input consumed so far (same unit as ``total``).
            duplicates: duplicate pages so far.
        """
        self.pages, self.done, self.duplicates = pages, done, duplicates
        if not self.enabled:
            return
        now = time.monotonic()
        if now >= self._next:
            self._next = now + self.interval
            self._draw(now)

    def line(self, now: float | None = None) -> str:
        """The progress text for the current state."""
        now = time.monotonic() if now is None else now
        elapsed = max(now - self.started, 1e-9)
        rate = self.pages / elapsed
        text = f"{self.pages:,} pages  {rate:,.1f} pages/s  {self.duplicates:,} duplicates  {_clock(elapsed)}"
        if self.total:
            fraction = min(self.done / self.total, 1.0)
            width = 24
            filled = int(width * fraction)
            bar = "#" * filled + "-" * (width - filled)
            eta = _clock(elapsed * (1.0 - fraction) / fraction) if fraction > 0 else "?"
            text = f"[{bar}] {100 * fraction:5.1f}%  ETA {eta}  " + text
        return self.label + text

    def _columns(self) -> int:
        try:
            return os.get_terminal_size(self.stream.fileno()).columns or 100
        except (AttributeError, ValueError, OSError, io.UnsupportedOperation):
            return shutil.get_terminal_size((100, 24)).columns

    def _draw(self, now: float) -> None:
        text = self.line(now)[: max(self._columns() - 1, 10)]
        self.stream.write("\r" + text + "\x1b[K")
        self.stream.flush()
        self._shown = True

    def clear(self) -> None:
        """Erase the progress line (before printing other text)."""
        if self._shown:
            self.stream.write("\r\x1b[K")
            self.stream.flush()
            self._shown = False

    def write(self, text: str) -> None:
        """Print a line of text above the progress line."""
        self.clear()
        self.stream.write(text + "\n")
        self.stream.flush()
        if self.enabled:
            self._draw(time.monotonic())

    def close(self) -> None:
        """Erase the progress line for good."""
        self.clear()
        self.enabled = False
