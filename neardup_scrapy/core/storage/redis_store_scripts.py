"""The single-server store's Lua scripts (:mod:`.redis_store`): each one atomic round trip."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from .base import BUCKET_CAP
from .lua_scripts import lua_script
from .redis_base import RedisBase
from .redis_common import UNIQUE_TAIL

# The scripts (``lua/*.lua``, see :mod:`.lua_scripts`) by name, each with the parts it is made of.
# ``server_apply`` is the commit shared by ``commit`` and ``lookup_or_insert``; ``mirror`` needs
# the hooks of ``server_common`` (``host_of``) and ``server_hosts`` (the per-cluster host tables).
_APPLY = ("server_hosts", "mirror", "server_promote_doc", "server_apply")
_SHARDS = ("linear_hash", "shards")  # bucket fields in listpack shards
_SCRIPT_PARTS: dict[str, tuple[str, ...]] = {
    "lookup": (*_SHARDS, "server_common", "server_lookup"),
    "fetch": (*_SHARDS, "server_common", "server_fetch"),
    "commit": (*_SHARDS, "server_common", *_APPLY, "server_commit"),
    "lookup_or_insert": (*_SHARDS, "server_common", *_APPLY, "server_lookup_or_insert"),
    "init": ("server_init",),
    "heads": ("server_heads",),
    "promote": (*_SHARDS, "server_common", "server_hosts", "mirror", "server_promote_doc", "server_promote"),
    "parents_hosts": (*_SHARDS, "server_common", "server_parents_hosts"),
}
_SCRIPTS = {
    name: lua_script(parts, {"BUCKET_CAP": BUCKET_CAP, "UNIQUE_TAIL": UNIQUE_TAIL})
    for name, parts in _SCRIPT_PARTS.items()
}


class ServerScripts:
    """The scripts of ``store``, registered with its client and run through its retries."""

    def __init__(self, store: RedisBase) -> None:
        self._store = store
        self.registered: dict[str, Any] = {}

    def register(self, client: Any) -> None:
        """Register every script with ``client`` (run by SHA, sent again when the server lacks it)."""
        for name, source in _SCRIPTS.items():
            self.registered[name] = client.register_script(source)

    def run(self, script: str, args: Sequence[Any], what: str, *, deadline_at: int | None = None) -> Any:
        """Run a script; ``args[deadline_at]`` gets a fresh commit deadline at each attempt."""
        runner = self.registered[script]
        if deadline_at is None:
            return self._store.call(lambda: runner(keys=[], args=list(args)), what)
        import redis

        def attempt() -> Any:
            argv = list(args)
            argv[deadline_at] = repr(self._store.deadline())
            try:
                return runner(keys=[], args=argv)
            except redis.ResponseError as exc:
                if "NEARDUP_LATE" in str(exc):  # refused, nothing applied: as if it timed out
                    raise redis.TimeoutError("the commit reached Redis after the client's timeout") from exc
                raise

        return self._store.call(attempt, what)


__all__ = ["ServerScripts"]
