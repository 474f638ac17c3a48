"""The Redis stores' Lua scripts as assembled from ``core/storage/lua/*.lua`` (no server needed)."""

from __future__ import annotations

import re
from types import ModuleType

import pytest

from neardup_scrapy.core.storage import lua_scripts, redis_cluster_scripts, redis_store_scripts

#: Functions ``mirror.lua`` calls that each store defines before it.
MIRROR_HOOKS = ("host_of", "root_of", "hosts_load", "hosts_save", "hosts_move", "bump")


def _defined(source: str) -> set[str]:
    return set(re.findall(r"^local function (\w+)", source, flags=re.MULTILINE))


@pytest.mark.parametrize(
    "store", [redis_store_scripts, redis_cluster_scripts], ids=["redis", "redis-cluster"]
)
def test_mirror_comes_after_the_hooks_it_calls(store: ModuleType) -> None:
    parts_of: dict[str, tuple[str, ...]] = store._SCRIPT_PARTS
    composed = [parts for parts in parts_of.values() if "mirror" in parts]
    assert composed
    for parts in composed:
        before = "".join(lua_scripts.lua_part(name) for name in parts[: parts.index("mirror")])
        assert set(MIRROR_HOOKS) <= _defined(before), parts


@pytest.mark.parametrize(
    "store", [redis_store_scripts, redis_cluster_scripts], ids=["redis", "redis-cluster"]
)
def test_every_function_a_script_calls_is_defined_once_before(store: ModuleType) -> None:
    scripts: dict[str, str] = store._SCRIPTS
    for name, source in scripts.items():
        seen: set[str] = set()
        for line in source.splitlines():
            found = re.match(r"local function (\w+)", line)
            if found:
                assert found.group(1) not in seen, (name, found.group(1))
                seen.add(found.group(1))
            code = line.split("--", 1)[0]
            for call in re.findall(r"(?<![\w.:])([a-z_][a-z0-9_]*)\(", code):
                if call in {"function", "if", "and", "or", "not", "return", "unpack", "tonumber"}:
                    continue
                if call in {"pairs", "ipairs", "type", "tostring", "next", "select", "error", "assert"}:
                    continue
                assert call in seen, (name, call, line)


def test_constants_are_lua_literals() -> None:
    header = lua_scripts.lua_script((), {"CAP": 64, "TAIL": b"\x00\xff\x07"})
    assert header == "local CAP = 64\nlocal TAIL = '\\0\\255\\7'\n"
