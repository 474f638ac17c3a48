"""The ``.pyi`` stubs of the compiled modules say what the compiled modules hold.

mypy reads the stubs, never the ``.pyx``: a stub that lists a name the module lost, misses one it
gained, or gives a function other parameters lets typed code call what does not exist. For every
compiled module of ``neardup_scrapy.core.native`` this compares the public names of the module and
of its classes with the stub's, and each function's parameters (names, kinds, which have defaults)
with the stub's wherever the compiled function exposes a signature (Cython's ``binding=True``).
"""

from __future__ import annotations

import ast
import importlib
import importlib.machinery
import inspect
import types
from pathlib import Path
from typing import Any

import pytest

import neardup_scrapy.core.native as native

NATIVE_DIR = Path(native.__path__[0])


def compiled_modules() -> list[str]:
    names = set()
    for path in NATIVE_DIR.iterdir():
        if any(path.name.endswith(suffix) for suffix in importlib.machinery.EXTENSION_SUFFIXES):
            names.add(path.name.split(".", 1)[0])
    return sorted(names)


def test_every_compiled_module_has_a_stub() -> None:
    compiled = compiled_modules()
    stubs = sorted(path.stem for path in NATIVE_DIR.glob("*.pyi"))
    assert compiled, f"no compiled module in {NATIVE_DIR}: build the extensions first"
    assert compiled == stubs


class Stub:
    """The public names of a ``.pyi`` file: functions, classes (with their members), variables."""

    def __init__(self, path: Path) -> None:
        tree = ast.parse(path.read_text(encoding="utf-8"))
        self.functions: dict[str, ast.FunctionDef] = {}
        self.classes: dict[str, dict[str, ast.FunctionDef | None]] = {}
        self.variables: set[str] = set()
        for node in tree.body:
            if isinstance(node, ast.FunctionDef):
                self.functions[node.name] = node
            elif isinstance(node, ast.ClassDef):
                members: dict[str, ast.FunctionDef | None] = {}
                for item in node.body:
                    if isinstance(item, ast.FunctionDef):
                        members[item.name] = item
                    elif isinstance(item, ast.AnnAssign) and isinstance(item.target, ast.Name):
                        members[item.target.id] = None
                self.classes[node.name] = members
            elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
                self.variables.add(node.target.id)
            elif isinstance(node, ast.Assign):
                self.variables.update(t.id for t in node.targets if isinstance(t, ast.Name))

    def names(self) -> set[str]:
        return {n for n in (*self.functions, *self.classes, *self.variables) if not n.startswith("_")}


def public(name: str) -> bool:
    return not name.startswith("_")


def module_names(module: types.ModuleType) -> set[str]:
    """Names the module defines: not underscored, not a module, not imported from elsewhere."""
    names = set()
    for name, value in vars(module).items():
        if not public(name) or isinstance(value, types.ModuleType):
            continue
        owner = getattr(value, "__module__", module.__name__)
        if (inspect.isclass(value) or callable(value)) and owner != module.__name__:
            continue
        names.add(name)
    return names


def class_members(cls: type) -> set[str]:
    return {name for name in vars(cls) if public(name)}


def parameters(stub: ast.FunctionDef) -> list[tuple[str, str, bool]]:
    """(name, kind, has a default) of each parameter the stub declares, ``self`` dropped."""
    args = stub.args
    positional = [*args.posonlyargs, *args.args]
    defaults = [False] * (len(positional) - len(args.defaults)) + [True] * len(args.defaults)
    out = []
    for index, (arg, has_default) in enumerate(zip(positional, defaults, strict=True)):
        kind = "POSITIONAL_ONLY" if index < len(args.posonlyargs) else "POSITIONAL_OR_KEYWORD"
        out.append((arg.arg, kind, has_default))
    if args.vararg is not None:
        out.append((args.vararg.arg, "VAR_POSITIONAL", False))
    for arg, default in zip(args.kwonlyargs, args.kw_defaults, strict=True):
        out.append((arg.arg, "KEYWORD_ONLY", default is not None))
    if args.kwarg is not None:
        out.append((args.kwarg.arg, "VAR_KEYWORD", False))
    return [p for p in out if p[0] not in ("self", "cls")]


def compiled_parameters(function: Any) -> list[tuple[str, str, bool]] | None:
    """The same for a compiled function, or None when it exposes no signature.

    A ``cdef class``'s ``__init__`` is a slot wrapper whose signature reads ``(*args, **kwargs)``:
    that says nothing, so it counts as none.
    """
    try:
        signature = inspect.signature(function)
    except (TypeError, ValueError):
        return None
    kinds = [p.kind for p in signature.parameters.values() if p.name not in ("self", "cls")]
    if kinds == [inspect.Parameter.VAR_POSITIONAL, inspect.Parameter.VAR_KEYWORD]:
        return None
    return [
        (p.name, p.kind.name, p.default is not inspect.Parameter.empty)
        for p in signature.parameters.values()
        if p.name not in ("self", "cls")
    ]


def compare_signature(where: str, function: Any, stub: ast.FunctionDef | None, checked: list[str]) -> None:
    if stub is None or any(
        isinstance(d, ast.Name) and d.id in ("property", "staticmethod") for d in stub.decorator_list
    ):
        return
    found = compiled_parameters(function)
    if found is None:
        return
    assert parameters(stub) == found, f"{where}: the stub's parameters differ from the compiled ones"
    checked.append(where)


@pytest.mark.parametrize("name", compiled_modules())
def test_stub_matches_compiled_module(name: str) -> None:
    module = importlib.import_module(f"{native.__name__}.{name}")
    stub = Stub(NATIVE_DIR / f"{name}.pyi")
    assert module_names(module) == stub.names(), f"{name}: public names of the module and of its stub differ"
    checked: list[str] = []
    for function_name, node in stub.functions.items():
        compare_signature(f"{name}.{function_name}", getattr(module, function_name), node, checked)
    for class_name, members in stub.classes.items():
        cls = getattr(module, class_name)
        declared = {m for m in members if public(m)}
        assert class_members(cls) == declared, (
            f"{name}.{class_name}: members of the class and its stub differ"
        )
        for member, node in members.items():
            if public(member) or member == "__init__":
                compare_signature(f"{name}.{class_name}.{member}", getattr(cls, member), node, checked)
    functions = [n for n in stub.functions if public(n)]
    if functions:
        assert checked, f"{name}: no compiled function exposes a signature to compare (binding=True?)"
