"""The Redis Cluster store's Lua scripts (:mod:`.redis_cluster`) and its round trips: a script on
one slot, or a cluster pipeline whose commands go to their nodes together."""

from __future__ import annotations

import hashlib
import logging
from collections.abc import Callable, Sequence
from typing import Any, TypeVar

from .base import BUCKET_CAP
from .lua_scripts import lua_script
from .redis_base import RedisBase
from .redis_cluster_layout import CH_SPAN

logger = logging.getLogger(__name__)

T = TypeVar("T")

# The scripts (``lua/*.lua``, see :mod:`.lua_scripts`) by name, each with the parts it is made of.
# ``cluster_table`` defines the hooks that ``mirror`` (shared with the single-server store) calls:
# ``host_of``, ``hosts_load``/``hosts_save``/``hosts_move`` on packed host tables, and ``bump``,
# which turns each counter change into a delta the client applies with ``counts``.
_SCRIPT_PARTS: dict[str, tuple[str, ...]] = {
    "counts": ("cluster_counts",),
    "group_read": ("linear_hash", "cluster_shards", "cluster_group_read"),
    "group_add": ("linear_hash", "cluster_shards", "cluster_group_add"),
    "init": ("cluster_init",),
    "begin": ("cluster_begin",),
    "release": ("cluster_release",),
    "status": ("cluster_table", "cluster_status"),
    "table": ("cluster_table_range",),
    "commit": ("cluster_table", "mirror", "cluster_promote_in_table", "cluster_commit"),
    "heads": ("cluster_records", "cluster_heads"),
    "promote": ("cluster_table", "cluster_promote_in_table", "cluster_promote"),
    "record_put": ("cluster_records", "cluster_record_put"),
    "set_tail": ("cluster_records", "cluster_set_tail"),
}
_SCRIPTS = {
    name: lua_script(parts, {"BUCKET_CAP": BUCKET_CAP, "CH_SPAN": CH_SPAN})
    for name, parts in _SCRIPT_PARTS.items()
}


class ClusterScripts:
    """The scripts of ``store`` on every node of its cluster, run through its retries."""

    def __init__(self, store: RedisBase) -> None:
        self._store = store
        self.shas = {name: hashlib.sha1(src.encode()).hexdigest() for name, src in _SCRIPTS.items()}

    def load(self) -> None:
        """Load every script on every node (a replica promoted by a failover has them too)."""
        from redis.cluster import RedisCluster

        for source in _SCRIPTS.values():
            self._store.client.execute_command("SCRIPT LOAD", source, target_nodes=RedisCluster.ALL_NODES)

    def script_in(self, pipe: Any, sha: str, key_base: str, *args: Any) -> None:
        """Queue script ``sha`` on the slot of ``key_base`` (its key: ``<key_base>:m``) in a
        cluster pipeline (:meth:`script_on_key`)."""
        self.script_on_key(pipe, sha, f"{key_base}:m", *args)

    def script_on_key(self, pipe: Any, sha: str, key: str, *args: Any) -> None:
        """Queue script ``sha`` with its one key ``key`` in a cluster pipeline.

        The node is named (from the client's slot map): left to find the keys itself, redis-py's
        cluster pipeline asks the server (``COMMAND GETKEYS``) once per script call. A stale map
        gets ``MOVED``, and redis-py then sends the call again by itself, routed by its key.
        """
        node = self._store.client.get_node_from_key(key)
        pipe.execute_command("EVALSHA", sha, 1, key, *args, target_nodes=node)

    def before_probe(self) -> None:
        """Learn the slot map again before probing a cluster that failed: redis-py learns it after a
        failed call, and a map learnt before a replica's promotion still names the dead primary, so
        the probe after the promotion would fail on it and checking wait for the next probe."""
        try:
            self._store.client.nodes_manager.initialize()
        except Exception as exc:  # no node answers: the probe fails and says why
            logger.debug("neardup: cannot read the cluster's slot map: %s", self._store.said(exc))

    def eval(
        self, name: str, key_base: str, args: Sequence[Any], what: str, *, deadline_at: int | None = None
    ) -> Any:
        """Run script ``name`` on the slot of ``key_base``; ``args[deadline_at]`` gets a fresh deadline."""
        import redis

        sha = self.shas[name]
        key = f"{key_base}:m"

        def attempt() -> Any:
            argv = list(args)
            if deadline_at is not None:
                argv[deadline_at] = repr(self._store.deadline())
            try:
                return self.with_scripts(
                    lambda: self._store.client.execute_command("EVALSHA", sha, 1, key, *argv)
                )
            except redis.ResponseError as exc:
                if "NEARDUP_LATE" in str(exc):
                    raise redis.TimeoutError("the commit reached Redis after the client's timeout") from exc
                raise

        return self._store.call(attempt, what)

    def pipeline(self, fill: Callable[[Any], Any], what: str) -> list[Any]:
        """One cluster pipeline (its commands go to their nodes together), retried as a whole."""

        def attempt() -> list[Any]:
            def run() -> list[Any]:
                pipe = self._store.client.pipeline()
                fill(pipe)
                return list(pipe.execute())

            return self.with_scripts(run)

        return self._store.call(attempt, what)

    def with_scripts(self, fn: Callable[[], T]) -> T:
        """``fn()``; when a node lacks a script (restarted, promoted), load them everywhere and retry once."""
        import redis

        try:
            return fn()
        except redis.exceptions.NoScriptError:
            self.load()
            return fn()
        except redis.ResponseError as exc:
            if "NOSCRIPT" not in str(exc):
                raise
            self.load()
            return fn()


__all__ = ["ClusterScripts"]
