"""The Redis stores' Lua scripts: ``lua/*.lua`` beside this module, shipped as package data.

A script is the concatenation of its parts (file names without ``.lua``) after a header of
``local NAME = value`` lines for the constants the store passes, so a number such as
``BUCKET_CAP`` has one definition, in Python. Parts define ``local`` functions that later parts
call: ``mirror.lua`` (host counters and mirror evidence) calls the hooks ``host_of``,
``hosts_load``, ``hosts_save``, ``hosts_move`` and ``bump``, which the single-server store
defines in ``server_common.lua`` and ``server_hosts.lua`` and the cluster store in
``cluster_table.lua``. Each file is read once per process.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping, Sequence
from importlib import resources

PACKAGE = "neardup_scrapy.core.storage"


@functools.cache
def lua_part(name: str) -> str:
    """The text of ``lua/<name>.lua`` (read once)."""
    return resources.files(PACKAGE).joinpath("lua", f"{name}.lua").read_text(encoding="utf-8")


def lua_literal(value: int | bytes) -> str:
    """``value`` as a Lua literal: an integer, or a string of decimal escapes."""
    if isinstance(value, bytes):
        return "'" + "".join(f"\\{b}" for b in value) + "'"
    return str(int(value))


def lua_script(parts: Sequence[str], constants: Mapping[str, int | bytes]) -> str:
    """The source of a script: the constants as ``local`` lines, then the parts in order."""
    header = "".join(f"local {name} = {lua_literal(value)}\n" for name, value in constants.items())
    return header + "".join(lua_part(name) for name in parts)
