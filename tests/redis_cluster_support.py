"""A throwaway Redis Cluster on loopback ports, for tests and benchmarks.

:func:`start_cluster` starts 3 primaries and 3 replicas with ``redis-server --cluster-enabled yes``,
joins them with ``redis-cli --cluster create`` and waits for ``cluster_state:ok``;
:meth:`LocalCluster.stop` shuts every node down and removes its files.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path


def _free_ports(n: int) -> list[int]:
    """``n`` distinct loopback ports that are free now, each with port + 10000 free too (cluster bus)."""
    ports: list[int] = []
    while len(ports) < n:
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port = int(s.getsockname()[1])
        if port > 55000 or port in ports:
            continue
        try:
            with socket.socket() as bus:
                bus.bind(("127.0.0.1", port + 10000))
        except OSError:
            continue
        ports.append(port)
    return ports


def _cli(port: int, *args: str, timeout: float = 10.0) -> str:
    done = subprocess.run(
        ["redis-cli", "-h", "127.0.0.1", "-p", str(port), *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )
    return done.stdout


@dataclass
class LocalCluster:
    """A running local cluster: ``ports`` of all nodes (the first three start as primaries)."""

    ports: list[int]
    directory: Path
    stopped: set[int] = field(default_factory=set)

    @property
    def url(self) -> str:
        """A url naming one node (any node will do for ``RedisCluster.from_url``)."""
        return f"redis://127.0.0.1:{self.ports[0]}/0"

    def primaries(self) -> list[int]:
        """Ports of the nodes that are primaries now (live ones only)."""
        out = []
        for port in self.ports:
            if port in self.stopped:
                continue
            if "role:master" in _cli(port, "INFO", "replication"):
                out.append(port)
        return out

    def kill(self, port: int) -> None:
        """Stop one node at once, without saving (as a crash would)."""
        _cli(port, "SHUTDOWN", "NOSAVE")
        self.stopped.add(port)

    def replica_of(self, port: int) -> int:
        """The port of a live replica of the primary on ``port``."""
        for other in self.ports:
            lines = _cli(other, "INFO", "replication").split()
            if other not in self.stopped and f"master_port:{port}" in lines:
                return other
        raise RuntimeError(f"the primary on port {port} has no live replica")

    def wait_promoted(self, port: int, timeout: float = 30.0) -> float:
        """Wait until the node on ``port`` is a primary; returns ``time.time()`` when it was seen so."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if "role:master" in _cli(port, "INFO", "replication"):
                return time.time()
            time.sleep(0.05)
        raise RuntimeError(f"the node on port {port} was not promoted within {timeout} s")

    def wait_ok(self, timeout: float = 30.0) -> None:
        """Wait until every live node reports ``cluster_state:ok``."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            live = [p for p in self.ports if p not in self.stopped]
            if all("cluster_state:ok" in _cli(p, "CLUSTER", "INFO") for p in live):
                return
            time.sleep(0.2)
        raise RuntimeError(f"the local Redis Cluster on {self.ports} did not reach cluster_state:ok")

    def wait_replicated(self, timeout: float = 30.0) -> None:
        """Wait until every live primary's replicas are online and have its whole replication stream."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            behind = False
            for port in self.primaries():
                info = dict(
                    line.split(":", 1)
                    for line in _cli(port, "INFO", "replication").splitlines()
                    if ":" in line
                )
                offset = info.get("master_repl_offset", "").strip()
                replicas = [v for k, v in info.items() if k.startswith("slave") and k[5:].isdigit()]
                if not replicas or any(
                    "state=online" not in r or f"offset={offset}," not in r + "," for r in replicas
                ):
                    behind = True
            if not behind:
                return
            time.sleep(0.1)
        raise RuntimeError("the replicas of the local Redis Cluster did not catch up")

    def stop(self) -> None:
        """Shut down every node this cluster started and remove the cluster's files.

        A node is stopped through its own pid file, so a port some other process took before
        our node could bind it is never shut down by mistake."""
        for port in self.ports:
            if port in self.stopped:
                continue
            self.stopped.add(port)
            pid = _pid_of(self.directory / f"redis-{port}.pid")
            if pid is None:
                continue  # this node never started
            with contextlib.suppress(subprocess.TimeoutExpired):
                _cli(port, "SHUTDOWN", "NOSAVE", timeout=5)
            deadline = time.monotonic() + 5
            while _alive(pid) and time.monotonic() < deadline:
                time.sleep(0.05)
            if _alive(pid):
                with contextlib.suppress(OSError):
                    os.kill(pid, signal.SIGKILL)
        shutil.rmtree(self.directory, ignore_errors=True)


def _pid_of(pidfile: Path) -> int | None:
    try:
        return int(pidfile.read_text().strip())
    except (OSError, ValueError):
        return None


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except OSError:
        return False
    return True


def have_redis_server() -> bool:
    """Whether ``redis-server`` and ``redis-cli`` are on PATH."""
    return shutil.which("redis-server") is not None and shutil.which("redis-cli") is not None


def start_cluster(
    nodes: int = 6, replicas: int = 1, node_timeout_ms: int = 2000, ports: list[int] | None = None
) -> LocalCluster:
    """Start ``nodes`` nodes (``replicas`` per primary) on ``ports`` (default: free loopback ports;
    each port + 10000 is its cluster bus) and form a cluster.

    A port found free can be taken by another process before the node binds it; with ports of
    its own choosing, a start whose nodes do not all answer is stopped and tried again on fresh
    ports (three tries)."""
    tries = 1 if ports is not None else 3
    for attempt in range(tries):
        try:
            return _start_cluster(nodes, replicas, node_timeout_ms, ports)
        except _NodesDidNotStart:
            if attempt == tries - 1:
                raise
    raise AssertionError("unreachable")


class _NodesDidNotStart(RuntimeError):
    pass


def _start_cluster(nodes: int, replicas: int, node_timeout_ms: int, ports: list[int] | None) -> LocalCluster:
    directory = Path(tempfile.mkdtemp(prefix="neardup-cluster-"))
    ports = list(ports) if ports is not None else _free_ports(nodes)
    cluster = LocalCluster(ports=ports, directory=directory)
    try:
        for port in ports:
            subprocess.run(
                [
                    "redis-server",
                    "--port", str(port),
                    "--bind", "127.0.0.1",
                    "--cluster-enabled", "yes",
                    "--cluster-config-file", str(directory / f"nodes-{port}.conf"),
                    "--cluster-node-timeout", str(node_timeout_ms),
                    "--save", "",
                    "--appendonly", "no",
                    "--repl-diskless-sync-delay", "0",
                    "--daemonize", "yes",
                    "--dir", str(directory),
                    "--logfile", str(directory / f"redis-{port}.log"),
                    "--pidfile", str(directory / f"redis-{port}.pid"),
                ],
                check=True,
                capture_output=True,
                timeout=10,
            )  # fmt: skip
        deadline = time.monotonic() + 30
        while silent := [p for p in ports if _cli(p, "PING").strip() != "PONG"]:
            if time.monotonic() > deadline:
                logs = {p: _log_tail(directory / f"redis-{p}.log") for p in silent}
                raise _NodesDidNotStart(f"Redis cluster nodes did not start: {logs}")
            time.sleep(0.1)
        subprocess.run(
            [
                "redis-cli", "--cluster", "create",
                *(f"127.0.0.1:{p}" for p in ports),
                "--cluster-replicas", str(replicas),
                "--cluster-yes",
            ],
            check=True,
            capture_output=True,
            timeout=60,
        )  # fmt: skip
        cluster.wait_ok()
        return cluster
    except BaseException:
        cluster.stop()
        raise


def _log_tail(path: Path, lines: int = 3) -> str:
    try:
        return " | ".join(path.read_text(errors="replace").splitlines()[-lines:])
    except OSError:
        return "(no log)"
