"""Reading a validated TOML table: each value checked for type and range, unknown keys an error (with the
closest valid key suggested), every message starting with the file and the key path
(``scenes/tshirt.toml: simulation.substeps: expected an integer in [1, 1000], got -3``). Used by
:mod:`clothsim.scene.schema`; no Warp, no GL."""

from __future__ import annotations

import difflib
import math
from pathlib import Path
from typing import Any

from ..errors import InputError


class Table:
    """A TOML table being read: tracks the key path for messages and which keys were consumed."""

    def __init__(self, file: Path, path: str, data: Any, allowed: tuple[str, ...]):
        self.file = file
        self.path = path
        if not isinstance(data, dict):
            raise self.error_at(path, f"expected a table, got {type_name(data)} {short(data)}")
        self.data = data
        unknown = [k for k in data if k not in allowed]
        if unknown:
            k = unknown[0]
            close = difflib.get_close_matches(k, allowed, n=1, cutoff=0.6)
            hint = f"; did you mean {close[0]!r}?" if close else ""
            raise self.error_at(self.key(k), f"unknown key{hint} (expected one of: {', '.join(allowed)})")

    def key(self, k: str) -> str:
        return f"{self.path}.{k}" if self.path else k

    def error_at(self, keypath: str, msg: str) -> InputError:
        return InputError(f"{self.file}: {keypath or '(top level)'}: {msg}")

    def error(self, k: str, msg: str) -> InputError:
        return self.error_at(self.key(k), msg)

    def has(self, k: str) -> bool:
        return k in self.data

    def raw(self, k: str, default=None):
        return self.data.get(k, default)

    def table(self, k: str, allowed: tuple[str, ...], *, required: bool = False) -> "Table | None":
        if k not in self.data:
            if required:
                raise self.error(k, "missing table (expected a [" + self.key(k) + "] section)")
            return None
        return Table(self.file, self.key(k), self.data[k], allowed)

    def array_of_tables(self, k: str, allowed: tuple[str, ...], *, max_count: int, required: bool = False) -> list["Table"]:
        if k not in self.data:
            if required:
                raise self.error(k, f"missing (expected at least one [[{self.key(k)}]] entry)")
            return []
        v = self.data[k]
        if not isinstance(v, list):
            raise self.error(k, f"expected an array of tables ([[{self.key(k)}]]), got {type_name(v)}")
        if required and not v:
            raise self.error(k, f"expected at least one [[{self.key(k)}]] entry, got none")
        if len(v) > max_count:
            raise self.error(k, f"expected at most {max_count} entries, got {len(v)}")
        return [Table(self.file, f"{self.key(k)}[{i}]", item, allowed) for i, item in enumerate(v)]

    def string(self, k: str, default: Any = ..., choices: tuple[str, ...] | None = None) -> str:
        if k not in self.data:
            if default is ...:
                raise self.error(k, "missing (expected a string" + (f": one of {', '.join(choices)})" if choices else ")"))
            return default
        v = self.data[k]
        if not isinstance(v, str):
            raise self.error(k, f"expected a string, got {type_name(v)} {short(v)}")
        if choices is not None and v not in choices:
            close = difflib.get_close_matches(v, choices, n=1, cutoff=0.6)
            hint = f" (did you mean {close[0]!r}?)" if close else ""
            raise self.error(k, f"expected one of {', '.join(choices)}, got {v!r}{hint}")
        return v

    def boolean(self, k: str, default: bool) -> bool:
        v = self.data.get(k, default)
        if not isinstance(v, bool):
            raise self.error(k, f"expected true or false, got {type_name(v)} {short(v)}")
        return v

    def number(self, k: str, default: Any = ..., *, lo: float | None = None, hi: float | None = None,
               lo_open: bool = False, unit: str = "") -> float:
        if k not in self.data:
            if default is ...:
                raise self.error(k, f"missing (expected a number{unit_text(unit)})")
            return default
        return check_number(self, self.key(k), self.data[k], lo, hi, lo_open, unit)

    def integer(self, k: str, default: Any = ..., *, lo: int, hi: int) -> int:
        if k not in self.data:
            if default is ...:
                raise self.error(k, f"missing (expected an integer in [{lo}, {hi}])")
            return default
        v = self.data[k]
        if isinstance(v, bool) or not isinstance(v, int):
            raise self.error(k, f"expected an integer in [{lo}, {hi}], got {type_name(v)} {short(v)}")
        if not (lo <= v <= hi):
            raise self.error(k, f"expected an integer in [{lo}, {hi}], got {v}")
        return v

    def vec3(self, k: str, default: Any = ..., *, unit: str = "m", max_abs: float = 1.0e3) -> tuple[float, float, float]:
        if k not in self.data:
            if default is ...:
                raise self.error(k, f"missing (expected 3 numbers{unit_text(unit)})")
            return default
        v = self.data[k]
        if not isinstance(v, list) or len(v) != 3:
            raise self.error(k, f"expected an array of 3 numbers{unit_text(unit)}, got {type_name(v)} {short(v)}")
        return tuple(check_number(self, f"{self.key(k)}[{i}]", x, -max_abs, max_abs, False, unit)
                     for i, x in enumerate(v))  # type: ignore[return-value]

    def path_(self, k: str, base: Path, *, required: bool = True) -> Path | None:
        if k not in self.data:
            if required:
                raise self.error(k, "missing (expected a file path, relative to the scene file)")
            return None
        v = self.data[k]
        if not isinstance(v, str) or not v.strip():
            raise self.error(k, f"expected a file path string, got {type_name(v)} {short(v)}")
        p = Path(v).expanduser()
        return (p if p.is_absolute() else base / p).resolve()

    def existing_file(self, k: str, base: Path, *, required: bool = True) -> Path | None:
        p = self.path_(k, base, required=required)
        if p is None:
            return None
        if not p.exists():
            raise self.error(k, f"file not found: {p} (paths are relative to the scene file's folder {base})")
        if not p.is_file():
            raise self.error(k, f"expected a file, but {p} is a folder")
        return p


def check_number(t: Table, keypath: str, v: Any, lo, hi, lo_open, unit) -> float:
    rng = range_text(lo, hi, lo_open)
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        raise t.error_at(keypath, f"expected a number{unit_text(unit)}{rng}, got {type_name(v)} {short(v)}")
    v = float(v)
    if not math.isfinite(v):
        raise t.error_at(keypath, f"expected a finite number{unit_text(unit)}{rng}, got {v}")
    if lo is not None and (v < lo or (lo_open and v == lo)):
        raise t.error_at(keypath, f"expected a number{unit_text(unit)}{rng}, got {v:g}")
    if hi is not None and v > hi:
        raise t.error_at(keypath, f"expected a number{unit_text(unit)}{rng}, got {v:g}")
    return v


def range_text(lo, hi, lo_open) -> str:
    if lo is None and hi is None:
        return ""
    if hi is None:
        return f" {'>' if lo_open else '>='} {lo:g}"
    if lo is None:
        return f" <= {hi:g}"
    return f" in {'(' if lo_open else '['}{lo:g}, {hi:g}]"


def unit_text(unit: str) -> str:
    return f" [{unit}]" if unit else ""


def type_name(v: Any) -> str:
    return {dict: "a table", list: "an array", str: "a string", bool: "a boolean", int: "an integer",
            float: "a number"}.get(type(v), type(v).__name__)


def short(v: Any) -> str:
    s = repr(v)
    return s if len(s) <= 60 else s[:57] + "..."
