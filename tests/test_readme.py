"""The README's Python examples run as written (on the CPU), so they cannot rot."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

README = Path(__file__).resolve().parents[1] / "README.md"
BLOCKS = re.findall(r"```python\n(.*?)```", README.read_text(encoding="utf-8"), flags=re.S)


def test_readme_has_python_examples():
    assert BLOCKS, "README.md has no ```python example"


@pytest.mark.parametrize("index", range(len(BLOCKS)))
def test_readme_python_example_runs(index, capsys, tmp_path, monkeypatch):
    # run where a new user would (the repository root: scenes/ and assets/ resolve), but write the
    # examples' files (panel.obj, drape.cache, ...) into a temporary folder
    for name in ("scenes", "assets"):
        (tmp_path / name).symlink_to(README.parent / name)
    monkeypatch.chdir(tmp_path)
    code = BLOCKS[index]
    exec(compile(code, f"README.md python block {index}", "exec"), {"__name__": "__readme__"})
