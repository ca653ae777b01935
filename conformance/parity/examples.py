"""Paddle's own ``>>>`` examples, read from the installed wheel's source files.

Nothing of Paddle's is copied into this repository: the docstrings are parsed at run time from
``site-packages/paddle``. An :class:`Example` is one ``.. code-block::`` of a docstring, split
into :class:`Part` s the way xdoctest splits it: a statement (``>>>`` plus its ``...`` lines)
and the output written under it. Directives follow xdoctest: ``# doctest: +SKIP`` on a line of
its own skips the parts up to ``# doctest: -SKIP``; on a statement it skips that statement;
``+REQUIRES(env:GPU)`` (or any other environment) skips the rest of the block.
"""

from __future__ import annotations

import ast
import importlib.util
import re
from dataclasses import dataclass, field
from pathlib import Path

#: the files the report covers, relative to the ``paddle`` package
FILES = (
    *(f"tensor/{m}.py" for m in ("math", "creation", "manipulation", "linalg", "logic", "search", "stat")),
    *(f"tensor/{m}.py" for m in ("random", "attribute")),
    *(f"nn/functional/{m}.py" for m in ("activation", "common", "loss", "norm", "pooling", "conv")),
    *(f"nn/layer/{m}.py" for m in ("activation", "common", "norm", "pooling", "conv", "loss")),
)

_DIRECTIVE = re.compile(r"#\s*(?:x?doctest)\s*:\s*([+-])\s*(SKIP|REQUIRES)\b")


@dataclass
class Part:
    """One statement of an example and the output its docstring shows under it."""

    source: str
    want: str = ""
    #: not executed (a ``+SKIP`` region, an inline ``+SKIP``, a ``+REQUIRES`` environment)
    skipped: bool = False


@dataclass
class Example:
    """One code block of a docstring: ``id`` is ``file::qualname#n``."""

    id: str
    file: str
    parts: list[Part] = field(default_factory=list)

    @property
    def source(self) -> str:
        return "\n".join(p.source for p in self.parts)


def paddle_root() -> Path:
    """The installed paddle package's folder, found without importing paddle."""
    spec = importlib.util.find_spec("paddle")
    if spec is None or not spec.submodule_search_locations:
        raise ModuleNotFoundError("[parity] paddle is not installed; pip install paddlepaddle==3.3.1")
    return Path(next(iter(spec.submodule_search_locations)))


def _docstrings(tree: ast.Module):
    """(qualname, docstring) of every function, class and method, in source order."""

    def walk(node, prefix):
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                name = f"{prefix}{child.name}"
                doc = ast.get_docstring(child, clean=True)
                if doc:
                    yield name, doc
                if isinstance(child, ast.ClassDef):
                    yield from walk(child, name + ".")

    yield from walk(tree, "")


def _blocks(doc: str) -> list[list[str]]:
    """The docstring cut at each ``code-block`` line; the pieces that hold ``>>>`` lines."""
    pieces: list[list[str]] = [[]]
    for line in doc.splitlines():
        if "code-block" in line:
            pieces.append([])
        else:
            pieces[-1].append(line)
    return [p for p in pieces if any(ln.strip().startswith(">>>") for ln in p)]


def _parts(lines: list[str]) -> list[Part]:
    parts: list[Part] = []
    region_skip = False
    rest_skip = False
    want: list[str] = []
    indent = None
    #: a blank line ends the output of a statement; prose may follow until the next ``>>>``
    in_output = False

    def close_want():
        if parts and want:
            parts[-1].want = "\n".join(want).strip("\n")
        want.clear()

    for raw in lines:
        stripped = raw.strip()
        if stripped.startswith(">>>"):
            close_want()
            in_output = True
            indent = len(raw) - len(raw.lstrip())
            code = stripped[4:] if stripped.startswith(">>> ") else stripped[3:]
            m = _DIRECTIVE.search(code)
            if m and code.lstrip().startswith("#"):
                sign, kind = m.groups()
                if kind == "REQUIRES" and sign == "+":
                    rest_skip = True
                elif kind == "SKIP":
                    region_skip = sign == "+"
                # the directive line owns the output written under it
                parts.append(Part(source="", skipped=region_skip or rest_skip or sign == "+"))
                continue
            inline = bool(m and m.group(1) == "+")
            parts.append(Part(source=code, skipped=region_skip or rest_skip or inline))
        elif stripped.startswith("...") and parts and not want:
            code = stripped[4:] if stripped.startswith("... ") else stripped[3:]
            parts[-1].source += "\n" + code
        elif stripped == "":
            close_want()
            in_output = False
        elif parts and in_output:
            want.append(raw[indent:] if indent is not None and len(raw) >= indent else stripped)
    close_want()
    return [p for p in parts if p.source.strip() or p.want]


def collect(root: Path | None = None, files=FILES) -> list[Example]:
    """Every example of ``files`` (paths under the paddle package), in source order."""
    root = root or paddle_root()
    out: list[Example] = []
    for rel in files:
        tree = ast.parse((root / rel).read_text(encoding="utf-8"))
        for qualname, doc in _docstrings(tree):
            for n, block in enumerate(_blocks(doc)):
                parts = _parts(block)
                if any(p.source.strip() for p in parts):
                    out.append(Example(id=f"{rel}::{qualname}#{n}", file=rel, parts=parts))
    return out
