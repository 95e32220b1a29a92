"""The library's public API: every name in `__all__` resolves, loads lazily, and the
README's library example runs on it alone."""

from __future__ import annotations

import re
import subprocess
import sys

import llm_inventory
from tests.conftest import ROOT


def test_every_public_name_resolves() -> None:
    assert set(llm_inventory.__all__) == {"__version__", *llm_inventory._PUBLIC}
    for name in llm_inventory.__all__:
        assert getattr(llm_inventory, name) is not None, name


def test_importing_the_package_loads_no_engine() -> None:
    code = ("import sys, llm_inventory; "
            "print(sorted(m for m in sys.modules if m.startswith('llm_inventory')))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True).stdout
    assert out.strip() == "['llm_inventory']"


def test_readme_library_example_uses_only_the_public_api() -> None:
    text = (ROOT / "README.md").read_text()
    block = re.search(r"## As a library\n.*?```python\n(.*?)```", text, re.DOTALL)
    assert block is not None
    code = block[1]
    imports = re.findall(r"^from (\S+) import", code, re.MULTILINE)
    assert imports == ["llm_inventory"], imports
    exec(compile(code, "README.md", "exec"), {})
