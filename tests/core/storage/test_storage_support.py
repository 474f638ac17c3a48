"""Helpers shared by the storage tests (generated texts, a private redis-server); no tests here."""

from __future__ import annotations

import contextlib
import os
import random
import shutil
import socket
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

REDIS_SERVER = shutil.which("redis-server") or "/usr/bin/redis-server"
_LETTERS = "abcdefghijklmnopqrstuvwxyz"


def vocabulary(size: int = 5000, seed: int = 7) -> list[str]:
    """Distinct letter-only words (digits would be masked by the normaliser)."""
    rng = random.Random(seed)
    words: set[str] = set()
    while len(words) < size:
        words.add("".join(rng.choice(_LETTERS) for _ in range(rng.randint(3, 9))))
    return sorted(words)


def near_copy(words: list[str], rng: random.Random, edits: int, vocab: list[str]) -> list[str]:
    """``words`` with ``edits`` single-word substitutions spread over the text."""
    out = list(words)
    for _ in range(edits):
        out[rng.randrange(len(out))] = rng.choice(vocab)
    return out


def corpus(
    originals: int, copies: int, *, length: int = 300, seed: int = 1, exact_every: int = 3
) -> list[tuple[str, str, int]]:
    """``(url, text, group)``: ``originals`` random texts, each with ``copies`` near/exact copies.

    Copies are on other hosts (127.0.0.2, ...); every ``exact_every``-th copy is identical.
    Near copies differ in 2 words of ``length`` (Jaccard ~0.93 over 5-word shingles).
    """
    rng = random.Random(seed)
    vocab = vocabulary()
    out: list[tuple[str, str, int]] = []
    for g in range(originals):
        base = [rng.choice(vocab) for _ in range(length)]
        out.append((f"http://127.0.0.1/doc/{g}", " ".join(base), g))
        for c in range(copies):
            words = base if exact_every and (c + 1) % exact_every == 0 else near_copy(base, rng, 2, vocab)
            out.append((f"http://127.0.0.{2 + c % 3}/copy/{g}/{c}", " ".join(words), g))
    return out


def free_port() -> int:
    """A free TCP port on 127.0.0.1."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class RedisServer:
    """A private ``redis-server`` on a free port (started and killed by the test)."""

    def __init__(
        self,
        workdir: Path,
        *,
        appendonly: bool = False,
        port: int | None = None,
        debug: bool = False,
        password: str | None = None,
        unixsocket: Path | None = None,
    ) -> None:
        self.workdir = workdir
        self.appendonly = appendonly
        self.debug = debug  # allow DEBUG SLEEP (to stall the server)
        self.password = password  # requirepass
        self.unixsocket = unixsocket  # also listen on this socket
        self.port = port or free_port()
        self.proc: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def start(self) -> None:
        args = [
            REDIS_SERVER,
            "--port",
            str(self.port),
            "--bind",
            "127.0.0.1",
            "--save",
            "",
            "--dir",
            str(self.workdir),
            "--appendonly",
            "yes" if self.appendonly else "no",
            "--appendfsync",
            "always",
            "--protected-mode",
            "no",
        ]
        if self.debug:
            args += ["--enable-debug-command", "yes"]
        if self.password is not None:
            args += ["--requirepass", self.password]
        if self.unixsocket is not None:
            args += ["--unixsocket", str(self.unixsocket), "--unixsocketperm", "700"]
        self.proc = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", self.port), 0.2) as s:
                s.sendall(b"PING\r\n")
                if s.recv(64).startswith((b"+PONG", b"-NOAUTH")):
                    if self.proc.poll() is not None:  # another server answered on our port
                        raise RuntimeError(f"redis-server could not bind port {self.port}")
                    return
            time.sleep(0.05)
        raise RuntimeError(f"redis-server did not start on port {self.port}")

    def kill(self) -> None:
        if self.proc is not None:
            self.proc.kill()
            self.proc.wait(10)
            self.proc = None

    def __enter__(self) -> RedisServer:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.kill()


def have_redis_server() -> bool:
    """True when the redis-server binary exists -- or under CI=true, where its absence must fail."""
    return os.path.exists(REDIS_SERVER) or os.environ.get("CI", "").lower() in ("1", "true", "yes")


@contextlib.contextmanager
def private_redis(workdir: Path, **kwargs: Any) -> Iterator[RedisServer]:
    server = RedisServer(workdir, **kwargs)
    with server:
        yield server
