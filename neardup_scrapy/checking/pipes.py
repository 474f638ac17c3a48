"""The two pipes to one worker process: frames written to its stdin and read from its stdout.

Under a Twisted reactor that can watch pipes (POSIX) they are non-blocking and watched by it
(``addReader``/``addWriter``), so an answer reaches the waiting response without any thread
hand-over; elsewhere (Windows) two helper threads do the I/O. Before :meth:`Pipes.start`, and
for a call whose answer is needed at once (the report at close), they are read and written
blocking, here.
"""

from __future__ import annotations

import contextlib
import os
import pickle
import queue
import select
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from typing import IO, Any

from .frames import HEADER, frame, read_frame

__all__ = ["Pipes"]

_STOP = object()
_F_SETPIPE_SZ = 1031  # Linux fcntl
_CHUNK = 1 << 20


def _widen_pipe(fd: int) -> None:
    """Give a pipe a 1 MiB buffer where the OS allows (Linux), so a page body goes in one write.

    The default 64 KiB makes the reactor wake up several times per body.
    """
    try:
        import fcntl

        fcntl.fcntl(fd, _F_SETPIPE_SZ, _CHUNK)
    except (ImportError, OSError):
        pass


def _reactor() -> Any:
    """The installed Twisted reactor if it can watch pipes (POSIX), else ``None``."""
    if sys.platform == "win32" or "twisted.internet.reactor" not in sys.modules:
        return None
    from twisted.internet import reactor
    from twisted.internet.interfaces import IReactorFDSet

    return reactor if IReactorFDSet.providedBy(reactor) else None


class _Reader:
    """Reactor read descriptor for the worker's stdout (``IReadDescriptor``)."""

    def __init__(self, pipes: Pipes) -> None:
        self.pipes = pipes

    def fileno(self) -> int:
        return self.pipes.out_fd

    def doRead(self) -> object:
        return self.pipes.read_available()

    def connectionLost(self, reason: object) -> None:
        self.pipes.eof()

    def logPrefix(self) -> str:
        return "neardup-worker"


class _Writer(_Reader):
    """Reactor write descriptor for the worker's stdin (``IWriteDescriptor``)."""

    def fileno(self) -> int:
        return self.pipes.in_fd

    def doWrite(self) -> object:
        return self.pipes.write_available()


class Pipes:
    """The stdin and stdout of ``proc``, carrying frames (:mod:`.frames`).

    Args:
        proc: the worker process (started with both pipes).
        use_reactor: watch the pipes with the installed reactor (default: when one is installed
            and can); otherwise two threads do the I/O once started.
        deliver: called with each message read, where it is read (the reactor's thread, the
            reader thread, or the thread that waits in :meth:`pump_until`).
        broken: called with the reason when a pipe fails or the worker's output ends.
    """

    def __init__(
        self,
        proc: subprocess.Popen[bytes],
        use_reactor: bool | None,
        deliver: Callable[[tuple[Any, ...]], None],
        broken: Callable[[str], None],
    ) -> None:
        assert proc.stdin is not None and proc.stdout is not None
        self._proc = proc
        self._stdin: IO[bytes] = proc.stdin
        self._stdout: IO[bytes] = proc.stdout
        self.in_fd = self._stdin.fileno()
        self.out_fd = self._stdout.fileno()
        for fd in (self.in_fd, self.out_fd):
            _widen_pipe(fd)
        self._deliver = deliver
        self._broken = broken
        self._inbuf = bytearray()
        self._outbuf = bytearray()
        self._reactor = _reactor() if use_reactor is None or use_reactor else None
        self._reader = _Reader(self)
        self._writer = _Writer(self)
        self._writing = False
        self._outbox: queue.SimpleQueue[Any] | None = None

    @property
    def threaded(self) -> bool:
        """True when answers arrive in a helper thread (not in the reactor thread)."""
        return self._outbox is not None

    def start(self) -> None:
        """From now on, I/O under the reactor (non-blocking) or on two threads."""
        if self._reactor is not None:
            os.set_blocking(self.in_fd, False)
            os.set_blocking(self.out_fd, False)
            self._reactor.addReader(self._reader)
        else:
            self._outbox = queue.SimpleQueue()
            threading.Thread(target=self._write_loop, name="neardup-worker-writer", daemon=True).start()
            threading.Thread(target=self._read_loop, name="neardup-worker-reader", daemon=True).start()

    def send(self, message: Any) -> None:
        """Send a message (written at once where the pipe takes it)."""
        if self._outbox is not None:
            self._outbox.put(message)
            return
        self._outbuf += frame(message)
        if self._reactor is None:  # only before the threads start: the pipe is written at once
            self._flush_blocking()
        elif not self._writing:
            self.write_available()

    def stop(self) -> None:
        """Stop watching the pipes and close the worker's input (what was sent is written first)."""
        if self._reactor is not None:
            self._reactor.removeReader(self._reader)
            self._reactor.removeWriter(self._writer)
        if self._outbox is not None:
            self._outbox.put(_STOP)
        else:
            with contextlib.suppress(OSError):
                self._flush_blocking()
            with contextlib.suppress(OSError):  # also when the flush met a dead worker
                self._stdin.close()

    def close_output(self) -> None:
        """Close the worker's output (after it exited)."""
        with contextlib.suppress(OSError):
            self._stdout.close()

    # -- under the reactor -----------------------------------------------------------------------
    def write_available(self) -> object:
        """Write what the pipe takes now; watch it for more while some is left."""
        try:
            while self._outbuf:
                written = os.write(self.in_fd, self._outbuf)
                del self._outbuf[:written]
        except BlockingIOError:
            pass
        except OSError as exc:
            self._broken(f"cannot send to the neardup worker process: {exc}")
            return None
        want = bool(self._outbuf)
        if want != self._writing and self._reactor is not None:
            self._writing = want
            if want:
                self._reactor.addWriter(self._writer)
            else:
                self._reactor.removeWriter(self._writer)
        return None

    def read_available(self) -> object:
        """Read what the pipe holds now and deliver the complete messages."""
        try:
            while True:
                data = os.read(self.out_fd, _CHUNK)
                if not data:
                    self.eof()
                    return None
                self._inbuf += data
                if len(data) < _CHUNK:
                    break
        except BlockingIOError:
            pass
        except OSError as exc:
            self._broken(f"cannot read from the neardup worker process: {exc}")
            return None
        self._dispatch()
        return None

    def eof(self) -> None:
        """The worker's output ended: it exited."""
        if self._reactor is not None:
            self._reactor.removeReader(self._reader)
        code = self._proc.poll()
        self._broken(f"the neardup worker process exited (exit code {code})")

    # -- here, blocking --------------------------------------------------------------------------
    def pump_until(self, box: list[Any], deadline: float | None, alive: Callable[[], bool]) -> None:
        """Block until ``box`` is filled, ``deadline`` (``time.monotonic()``) passes or the
        worker is no longer ``alive``, reading the pipe directly (no reactor loop)."""
        self._flush_blocking()
        blocking = os.get_blocking(self.out_fd)
        os.set_blocking(self.out_fd, True)
        try:
            while not box:
                if not alive():
                    return
                if deadline is not None:
                    left = deadline - time.monotonic()
                    if left <= 0 or not select.select([self.out_fd], [], [], left)[0]:
                        return
                data = os.read(self.out_fd, _CHUNK)
                if not data:
                    self.eof()
                    return
                self._inbuf += data
                self._dispatch()
        finally:
            os.set_blocking(self.out_fd, blocking)

    def _flush_blocking(self) -> None:
        blocking = os.get_blocking(self.in_fd)
        os.set_blocking(self.in_fd, True)
        try:
            while self._outbuf:
                written = os.write(self.in_fd, self._outbuf)
                del self._outbuf[:written]
        finally:
            os.set_blocking(self.in_fd, blocking)

    def _dispatch(self) -> None:
        buf = self._inbuf
        while len(buf) >= HEADER.size:
            size = HEADER.unpack_from(buf)[0]
            if len(buf) < HEADER.size + size:
                break
            message = pickle.loads(bytes(buf[HEADER.size : HEADER.size + size]))
            del buf[: HEADER.size + size]
            self._deliver(message)

    # -- threads (no reactor that can watch pipes) -----------------------------------------------
    def _write_loop(self) -> None:
        assert self._outbox is not None
        try:
            while True:
                message = self._outbox.get()
                if message is _STOP:
                    break
                self._stdin.write(frame(message))
                if self._outbox.empty():
                    self._stdin.flush()
        except (OSError, ValueError) as exc:
            self._broken(f"cannot send to the neardup worker process: {exc}")
        finally:
            with contextlib.suppress(OSError):
                self._stdin.close()

    def _read_loop(self) -> None:
        while True:
            try:
                message = read_frame(self._stdout)
            except (EOFError, OSError, ValueError, pickle.UnpicklingError):
                code = self._proc.wait()
                self._broken(f"the neardup worker process exited (exit code {code})")
                return
            self._deliver(message)
