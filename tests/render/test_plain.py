"""The tables printed without Rich are Rich's, byte for byte: random tables, texts and
widths through `render/plain.py`, and random `kv` flags through `plain_state`, against
what `print_parts` prints through Rich to the same kind of stream."""

from __future__ import annotations

import io
import os
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from llm_inventory.engine.kinds.uniform import uniform_state
from llm_inventory.engine.state import StateRequest, size_state, uniform_layers
from llm_inventory.render import plain, state
from llm_inventory.render.fit import Table, data_console, print_parts
from llm_inventory.render.state import plain_state, state_tables
from llm_inventory.units import DTYPE_BITS

# None: COLUMNS unset (a pipe gets the table's own width, 80 to 160).
widths = st.one_of(st.none(), st.integers(1, 200))
narrow = st.text(alphabet=st.sampled_from(" ·×abcXYZ019,.()-:~"), max_size=40)
cells = narrow.map(str.strip)


@contextmanager
def _env(**values: str | None) -> Iterator[None]:
    saved = {name: os.environ.get(name) for name in values}
    try:
        for name, value in values.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value
        yield
    finally:
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value


def _plain_env(width: int | None) -> Any:
    return _env(COLUMNS=None if width is None else str(width), TTY_COMPATIBLE=None,
                FORCE_COLOR=None)


def _rich(parts: Sequence[Any]) -> str:
    """What `emit` writes for these parts to a pipe."""
    console = data_console(file=io.StringIO())
    with console.capture() as captured:
        print_parts(console, parts)
    return captured.get()


@st.composite
def tables(draw: st.DrawFn) -> tuple[list[str], list[str], list[bool], list[list[str]]]:
    n = draw(st.integers(1, 4))
    headers = draw(st.lists(cells, min_size=n, max_size=n))
    justify = draw(st.lists(st.sampled_from(["left", "right"]), min_size=n, max_size=n))
    fold = draw(st.lists(st.booleans(), min_size=n, max_size=n))
    rows = draw(st.lists(st.lists(cells, min_size=n, max_size=n), max_size=6))
    return headers, justify, fold, rows


@settings(max_examples=400, deadline=None)
@given(before=st.lists(narrow, max_size=2), table=tables(), after=st.lists(narrow, max_size=2),
       width=widths)
@example(before=["Persistent state · 80 layers"], table=(["", "bytes"], ["left", "right"],
         [True, False], [["per token", "4,096 B"]]), after=["release held until the end"],
         width=10)
@example(before=[], table=(["", "bytes"], ["left", "right"], [True, False],
         [["per token", "4,096 B"]]), after=[], width=80)
def test_plain_render_is_richs(before: list[str],
                               table: tuple[list[str], list[str], list[bool], list[list[str]]],
                               after: list[str], width: int | None) -> None:
    """Byte for byte Rich's, or None (Rich prints) only where a prose column must wrap."""
    from rich.text import Text

    headers, justify, fold, rows = table
    fast = plain.PlainTable(headers, justify, fold)
    slow = Table(show_header=True)
    for header, side, prose in zip(headers, justify, fold, strict=True):
        slow.add_column(header, justify=side,  # type: ignore[arg-type]
                        overflow="fold" if prose else "ellipsis")
    for row in rows:
        fast.add_row(*row)
        slow.add_row(*row)
    with _plain_env(width):
        expected = _rich([*map(Text, before), slow, *map(Text, after)])
        text = plain.render([*before, fast, *after], io.StringIO())
    if text is None:
        assert any(fold) and width is not None and fast.width() > width
    else:
        assert text == expected


@settings(max_examples=300, deadline=None)
@given(text=narrow, width=st.integers(1, 50))
def test_wrapping_is_richs(text: str, width: int) -> None:
    from rich.text import Text

    with _plain_env(width):
        assert plain.render([text], io.StringIO()) == _rich([Text(text)])


KINDS = ["full", "sliding", "chunked", "mla"]


@settings(max_examples=300, deadline=None)
@given(
    kind=st.sampled_from(KINDS), layers=st.integers(1, 130), kv_heads=st.integers(1, 80),
    k_head_dim=st.integers(0, 300), v_head_dim=st.integers(0, 300),
    window=st.one_of(st.none(), st.integers(1, 70_000)), latent_dim=st.integers(0, 1200),
    tokens=st.integers(0, 3_000_000), sequences=st.integers(1, 2000),
    dtype=st.sampled_from(sorted(DTYPE_BITS)),
    block_size=st.one_of(st.none(), st.integers(1, 300)),
    tp=st.integers(1, 130), pp=st.integers(1, 140), units=st.sampled_from(["iec", "si"]),
    width=widths,
)
@example(kind="full", layers=80, kv_heads=8, k_head_dim=128, v_head_dim=128, window=None,
         latent_dim=0, tokens=8000, sequences=1, dtype="bf16", block_size=None, tp=1, pp=1,
         units="iec", width=None)
@example(kind="full", layers=80, kv_heads=8, k_head_dim=128, v_head_dim=128, window=None,
         latent_dim=0, tokens=8000, sequences=1, dtype="bf16", block_size=16, tp=16, pp=3,
         units="iec", width=30)
@example(kind="sliding", layers=48, kv_heads=8, k_head_dim=128, v_head_dim=128, window=4096,
         latent_dim=0, tokens=32000, sequences=7, dtype="fp8", block_size=16, tp=1, pp=3,
         units="si", width=60)
def test_the_kv_table_is_richs(kind: str, layers: int, kv_heads: int, k_head_dim: int,
                               v_head_dim: int, window: int | None, latent_dim: int,
                               tokens: int, sequences: int, dtype: str,
                               block_size: int | None, tp: int, pp: int, units: Any,
                               width: int | None) -> None:
    doc = uniform_state(kind, layers, kv_heads=kv_heads, k_head_dim=k_head_dim,
                        v_head_dim=v_head_dim, window=window, latent_dim=latent_dim,
                        tokens=tokens, sequences=sequences, dtype=dtype, block_size=block_size,
                        tp=tp, pp=pp)
    if doc is None:  # the engine refuses it: no table either way (test_uniform.py)
        return
    stack = uniform_layers(kind, layers, kv_heads=kv_heads, head_dim=k_head_dim,
                           v_head_dim=v_head_dim, window=window, latent_dim=latent_dim)
    result = size_state(StateRequest(layers=stack, tokens=tokens, sequences=sequences,
                                     dtype=dtype, block_size=block_size, tp=tp, pp=pp))
    with _plain_env(width):
        fast = plain_state(doc, units, io.StringIO())
        slow = _rich(state_tables(result, units))
    if fast is None:  # only where the labels must wrap, which Rich does
        _, rows = state._summary(doc, units, lambda kind: True)
        whole = plain.PlainTable(state.HEADERS, state.JUSTIFY, state.FOLD)
        for cells in rows:
            whole.add_row(*cells)
        assert width is not None and whole.width() > width
    else:
        assert fast == slow


class _Tty(io.StringIO):
    def isatty(self) -> bool:
        return True


@pytest.mark.parametrize(("stream", "env", "terminal", "covered"), [
    (io.StringIO(), {}, False, True),
    (_Tty(), {}, True, False),  # Rich styles the text and reads the terminal's width
    (_Tty(), {"TTY_COMPATIBLE": "0"}, False, True),
    (io.StringIO(), {"TTY_COMPATIBLE": "1"}, True, False),
    (io.StringIO(), {"FORCE_COLOR": "1"}, True, False),
    (_Tty(), {"FORCE_COLOR": ""}, False, True),
    (io.TextIOWrapper(io.BytesIO(), encoding="latin-1"), {}, False, False),  # an ASCII box
])
def test_what_rich_would_style_goes_to_rich(stream: Any, env: dict[str, str], terminal: bool,
                                            covered: bool) -> None:
    from rich.console import Console

    with _env(TTY_COMPATIBLE=None, FORCE_COLOR=None, COLUMNS="100"), _env(**env):
        assert Console(file=stream).is_terminal is terminal
        text = plain.render(["title", plain.PlainTable(["a"], ["left"])], stream)
        assert (text is not None) is covered


def test_wide_characters_go_to_rich() -> None:
    with _plain_env(100):
        assert plain.render(["naïve"], io.StringIO()) is None
        assert plain.render(["模型"], io.StringIO()) is None
        assert plain.render(["ok · ×"], io.StringIO()) == "ok · ×\n"
