"""GLSL sources from ``shaders/``: ``#include "file"`` resolution and injected ``#define`` lines.

GLSL lives in files only. A program (or compute shader) is identified by its stage files and a set
of defines; the :class:`ProgramCache` (owned by a :class:`render.Renderer`) compiles each
combination once.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Mapping

SHADER_DIR = Path(__file__).resolve().parent.parent / "shaders"

_INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"\s*$')
_VERSION = re.compile(r"^\s*#\s*version\b")


class ShaderSourceError(RuntimeError):
    """A shader file is missing or its includes form a cycle; the message names the file."""


def _expand(path: Path, stack: tuple[Path, ...]) -> list[str]:
    if path in stack:
        chain = " -> ".join(p.name for p in stack + (path,))
        raise ShaderSourceError(f"shader include cycle: {chain}")
    try:
        text = path.read_text()
    except OSError as e:
        where = f" (included from {stack[-1]})" if stack else ""
        raise ShaderSourceError(f"cannot read shader file {path}{where}: {e.strerror or e}") from e
    out: list[str] = []
    for number, line in enumerate(text.splitlines(), start=1):
        m = _INCLUDE.match(line)
        if m:
            # includes are relative to the including file first, then to shaders/
            target = (path.parent / m.group(1)).resolve()
            if not target.exists():
                target = (SHADER_DIR / m.group(1)).resolve()
            out.extend(_expand(target, stack + (path,)))
            out.append(f"#line {number + 1}")
        else:
            out.append(line)
    return out


def _define_lines(defines: Mapping[str, object]) -> list[str]:
    lines = []
    for name in sorted(defines):
        if not re.fullmatch(r"[A-Z_][A-Z0-9_]*", name):
            raise ValueError(f"shader define name {name!r} must be UPPER_CASE letters, digits, _")
        value = defines[name]
        if value is True or value is None:
            lines.append(f"#define {name}")
        elif value is False:
            continue
        else:
            lines.append(f"#define {name} {value}")
    return lines


def load_source(name: str, defines: Mapping[str, object] | None = None) -> str:
    """The full source of ``shaders/<name>`` with includes expanded and ``defines`` injected.

    Args:
        name: file name relative to ``shaders/`` (e.g. ``"mesh.frag"``).
        defines: ``{NAME: value}``; ``True``/``None`` give ``#define NAME``, ``False`` omits it.
    """
    lines = _expand((SHADER_DIR / name).resolve(), ())
    define_lines = _define_lines(defines or {})
    for i, line in enumerate(lines):
        if _VERSION.match(line):
            return "\n".join(lines[: i + 1] + define_lines + [f"#line {i + 2}"] + lines[i + 1:]) + "\n"
    raise ShaderSourceError(f"shader {name} has no #version line")


def program_key(vertex: str, fragment: str, defines: Mapping[str, object] | None) -> tuple:
    """The cache key of a program: its files and its defines (order-independent)."""
    return (vertex, fragment, tuple(sorted((k, str(v)) for k, v in (defines or {}).items() if v is not False)))


class ProgramCache:
    """Compiled programs of one GL context, keyed by (files, defines). Owned by the Renderer."""

    def __init__(self, ctx) -> None:
        self._ctx = ctx
        self._programs: dict[tuple, object] = {}

    def get(self, vertex: str, fragment: str, defines: Mapping[str, object] | None = None):
        key = program_key(vertex, fragment, defines)
        program = self._programs.get(key)
        if program is None:
            try:
                program = self._ctx.program(vertex_shader=load_source(vertex, defines),
                                            fragment_shader=load_source(fragment, defines))
            except ShaderSourceError:
                raise
            except Exception as e:  # moderngl.Error carries the driver's compile log
                raise ShaderSourceError(f"compiling {vertex} + {fragment} with {dict(defines or {})}: {e}") from e
            self._programs[key] = program
        return program

    def get_compute(self, name: str, defines: Mapping[str, object] | None = None):
        """The compute shader ``shaders/<name>`` with ``defines``, compiled once per context."""
        key = ("compute", name, program_key(name, "", defines)[2])
        program = self._programs.get(key)
        if program is None:
            try:
                program = self._ctx.compute_shader(load_source(name, defines))
            except ShaderSourceError:
                raise
            except Exception as e:  # moderngl.Error carries the driver's compile log
                raise ShaderSourceError(f"compiling {name} with {dict(defines or {})}: {e}") from e
            self._programs[key] = program
        return program

    def __len__(self) -> int:
        return len(self._programs)

    def release(self) -> None:
        for program in self._programs.values():
            program.release()
        self._programs.clear()
