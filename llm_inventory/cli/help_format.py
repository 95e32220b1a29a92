"""Help that reads at 80 columns: plain usage names, no metavar on flags, Click's type names.

Typer's own help writes required arguments as `{MODEL}`, every value as `<str>` or
`<int range>`, and a flag's default as `[default: no-require-fit]` (which the wrapper then
splits at its hyphens). Click's layout keeps every option name whole: a name longer than the
option column puts its help on the next line instead of cutting the name. Prose is rewrapped
to the terminal; the `Example:` line is kept whole so that it pastes as written.
"""

from __future__ import annotations

import re
from typing import Any

from typer.core import TyperCommand

# Typer's `<type>` labels as the names Click prints for the same types.
_TYPE_NAMES = {
    "str": "TEXT",
    "int": "INTEGER",
    "int range": "INTEGER",
    "float": "FLOAT",
    "float range": "FLOAT",
    "path": "PATH",
    "list[str]": "TEXT",
}
_TYPE = re.compile(r"<([^<>]+)>")


def _type_name(match: re.Match[str]) -> str:
    label = match[1]
    return _TYPE_NAMES.get(label, f"[{label}]" if "|" in label else label.upper())


class Command(TyperCommand):
    """A Typer command whose help follows the rules above."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        if self.help:
            # The example paragraph is printed as written: wrapped, it no longer pastes.
            self.help = re.sub(r"\n\n([ \t]*)Example: ", "\n\n\\1\b\n\\1Example: ", self.help)
        for param in self.params:
            if getattr(param, "is_flag", False):
                # A flag's default is its absence; "[default: no-x]" only adds noise.
                param.show_default = False  # type: ignore[attr-defined]

    def collect_usage_pieces(self, ctx: Any) -> list[str]:
        pieces = [self.options_metavar] if self.options_metavar else []
        for param in self.get_params(ctx):
            for piece in param.get_usage_pieces(ctx):
                piece = re.sub(r"^\{(.*)\}", r"\1", piece)
                # An argument taking several values says so (MODEL...), unless its own
                # name already does (-- COMMAND…); Typer below 0.29 prints the name alone.
                if param.param_type_name == "argument" and param.nargs == -1 \
                        and not piece.endswith(("...", "…")):
                    piece += "..."
                pieces.append(piece)
        return pieces

    def format_options(self, ctx: Any, formatter: Any) -> None:
        arguments: list[tuple[str, str]] = []
        options: list[tuple[str, str]] = []
        for param in self.get_params(ctx):
            record = param.get_help_record(ctx)
            if record is None:
                continue
            name, text = record
            if param.param_type_name == "argument":
                arguments.append((_TYPE.sub("", name).strip(), text))
            else:
                options.append((_TYPE.sub(_type_name, name), text))
        if arguments:
            with formatter.section("Arguments"):
                formatter.write_dl(arguments)
        if options:
            with formatter.section("Options"):
                formatter.write_dl(options)
