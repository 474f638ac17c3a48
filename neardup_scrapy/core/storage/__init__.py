"""Index stores behind the detector, and :func:`open_storage` to pick one by name.

* ``"memory"`` (:class:`~.memory.MemoryStorage`): this process only, nothing persisted.
* ``"disk"`` (:class:`~.sqlite.SQLiteStorage`): one SQLite file; survives pause/resume.
* ``"redis"`` (:class:`~.redis_store.RedisStorage`): one index shared by many crawler processes,
  with an atomic check-and-insert per page. Needs the ``redis`` extra.
* ``"redis-cluster"`` (:class:`~.redis_cluster.RedisClusterStorage`): the same, spread over the
  shards of a Redis Cluster (``redis_url`` names any node). Needs the ``redis`` extra.
* a dotted import path (``"myproject.stores.MyStore"``): a class implementing
  :class:`~.base.IndexStorage`, built with the keyword arguments of :func:`open_storage`.
"""

from __future__ import annotations

import importlib
from typing import Any

from .base import IndexStorage, ParameterMismatchError, StorageError

__all__ = ["IndexStorage", "ParameterMismatchError", "StorageError", "open_storage"]

#: neardup-scrapy is not on PyPI yet: name the package itself, and the extra for a checkout.
REDIS_HINT = 'pip install "redis[hiredis]>=5.0" (or pip install -e ".[redis]" in a neardup-scrapy checkout)'
DEFAULT_DISK_PATH = "neardup-index.sqlite"


def open_storage(
    kind: str,
    *,
    path: str | None = None,
    redis_url: str | None = None,
    prefix: str = "neardup",
    ttl: float | None = None,
    **options: Any,
) -> IndexStorage:
    """Build (not yet open) the store named ``kind``.

    Args:
        kind: ``"memory"``, ``"disk"``, ``"redis"``, ``"redis-cluster"`` or the dotted import path of a class.
        path: SQLite file of the disk store (default ``neardup-index.sqlite`` in the current
            directory; the Scrapy glue puts it in ``JOBDIR``).
        redis_url: Redis url of the redis store (default ``redis://127.0.0.1:6379/0``), or any node
            of the cluster for ``"redis-cluster"``.
        prefix: key prefix of the redis stores (one index per prefix).
        ttl: seconds after which indexed pages are forgotten (``None``: never).
        **options: extra keyword arguments passed to the store's constructor (e.g.
            ``batch_size`` for disk, ``retry`` for redis).

    Returns:
        The store; the detector calls its ``open()`` with the index parameters.

    Raises:
        StorageError: unknown kind, missing optional dependency, or a class that cannot be
            imported or built.
    """
    name = kind.strip()
    if name == "memory":
        from .memory import MemoryStorage

        return MemoryStorage(ttl=ttl)
    if name in ("disk", "sqlite"):
        from .sqlite import SQLiteStorage

        return SQLiteStorage(path or DEFAULT_DISK_PATH, ttl=ttl, **options)
    if name in ("redis", "redis-cluster"):
        try:
            import redis  # noqa: F401
        except ImportError as exc:
            raise StorageError(
                f"the redis store needs the 'redis' package, which is not installed: {REDIS_HINT}"
            ) from exc
        if name == "redis-cluster":
            from .redis_cluster import DEFAULT_CLUSTER_URL, RedisClusterStorage

            return RedisClusterStorage(redis_url or DEFAULT_CLUSTER_URL, prefix=prefix, ttl=ttl, **options)
        from .redis_store import DEFAULT_URL, RedisStorage

        return RedisStorage(redis_url or DEFAULT_URL, prefix=prefix, ttl=ttl, **options)
    if "." not in name:
        raise StorageError(
            f"unknown storage {kind!r}: expected 'memory', 'disk', 'redis', 'redis-cluster' "
            "or the import path of a class"
        )
    module_name, _, class_name = name.rpartition(".")
    try:
        cls = getattr(importlib.import_module(module_name), class_name)
    except (ImportError, AttributeError) as exc:
        raise StorageError(f"cannot import storage class {kind!r}: {exc}") from exc
    try:
        store = cls(path=path, redis_url=redis_url, prefix=prefix, ttl=ttl, **options)
    except TypeError as exc:
        raise StorageError(
            f"storage class {kind!r} must accept the keyword arguments path, redis_url, prefix and ttl: {exc}"
        ) from exc
    if not isinstance(store, IndexStorage):
        raise StorageError(f"storage class {kind!r} does not implement the IndexStorage protocol")
    return store
