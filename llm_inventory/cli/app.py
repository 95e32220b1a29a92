"""The `inventory` command: one Typer app, its commands registered in one ordered block.

This module is also the single error boundary: every failure becomes one line on stderr and
an exit code (0 ok, 1 a requested check failed, 2 bad input), never a traceback unless
`--debug` or INVENTORY_DEBUG asks for one.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Sequence
from enum import IntEnum
from typing import Annotated, Any

import typer

from llm_inventory import __version__
from llm_inventory.cli import help_format, lazy


class ExitCode(IntEnum):
    OK = 0
    CHECK_FAILED = 1
    BAD_INPUT = 2
    INTERNAL = 3


def _fail(message: str, code: ExitCode) -> None:
    line = " ".join(message.split())
    sys.stderr.write(f"inventory: error: {line}\n")
    sys.exit(int(code))


def _take_strict(argv: list[str]) -> tuple[list[str], bool]:
    """`--strict` taken from anywhere before `--`: a root option also given after the
    command."""
    end = argv.index("--") if "--" in argv else len(argv)
    return [a for a in argv[:end] if a != "--strict"] + argv[end:], "--strict" in argv[:end]


def _estimate_handler(strict: bool) -> Any:
    """How a command meets an estimated model: one warning per model on stderr, or under
    --strict bad input (exit 2)."""
    warned: set[str] = set()

    def handle(spec: Any) -> None:
        from llm_inventory.errors import InputError

        if strict:
            raise InputError("model", f"{spec.name}: {spec.estimated}; --strict refuses "
                             "estimated figures")
        if spec.estimated not in warned:
            warned.add(spec.estimated)
            sys.stderr.write(f"inventory: warning: {spec.name}: {spec.estimated}\n")

    return handle


class InventoryGroup(lazy.LazyGroup):
    """A Typer group whose `main` turns every error into one line and an exit code."""

    def main(
        self,
        args: Sequence[str] | None = None,
        prog_name: str | None = None,
        complete_var: str | None = None,
        standalone_mode: bool = True,
        windows_expand_args: bool = True,
        **extra: Any,
    ) -> Any:
        from llm_inventory.errors import CheckFailed, InputError

        argv = list(sys.argv[1:] if args is None else args)
        debug = "--debug" in argv or bool(os.environ.get("INVENTORY_DEBUG"))
        argv, self.strict = _take_strict(argv)
        try:
            result = super().main(
                args=argv,
                prog_name=prog_name or "inventory",
                complete_var=complete_var,
                standalone_mode=False,
                windows_expand_args=windows_expand_args,
                **extra,
            )
        except typer.TyperException as exc:
            context = getattr(exc, "ctx", None)
            if type(exc).__name__ == "NoArgsIsHelpError" and context is not None:
                sys.stdout.write(context.get_help() + "\n")
                sys.exit(int(ExitCode.BAD_INPUT))
            _fail(exc.format_message(), ExitCode.BAD_INPUT)
        except typer.Abort:
            _fail("aborted", ExitCode.CHECK_FAILED)
        except InputError as exc:
            _fail(self._flagged(exc, argv), ExitCode.BAD_INPUT)
        except CheckFailed as exc:
            _fail(str(exc), ExitCode.CHECK_FAILED)
        except BrokenPipeError:
            sys.stderr.close()
            sys.exit(int(ExitCode.CHECK_FAILED))
        except Exception as exc:
            if debug:
                raise
            _fail(
                f"unexpected {type(exc).__name__}: {exc} (rerun with --debug for the traceback)",
                ExitCode.INTERNAL,
            )
        sys.exit(result if isinstance(result, int) else 0)

    strict = False

    def invoke(self, ctx: Any) -> Any:
        """Run the command with estimated models met as --strict says, and only while it
        runs (library callers load models after it)."""
        from llm_inventory.spec import estimates

        estimates.handler = _estimate_handler(self.strict)
        try:
            return super().invoke(ctx)
        finally:
            estimates.handler = None

    def _flagged(self, exc: Any, argv: list[str]) -> str:
        """The error with its field spelled as the command's flag when one matches."""
        field = str(exc.field)
        command = next((self.commands[a] for a in argv if a in self.commands), None)
        if command is not None and field:
            flag = "--" + field.replace("_", "-")
            if any(flag in param.opts for param in command.params):
                return f"{flag}: {exc.message}"
        return str(exc)


app = typer.Typer(
    cls=InventoryGroup,
    name="inventory",
    help=(
        "Capacity planner for LLM serving: KV cache, parameters, placement and fit, "
        "exact to the byte."
    ),
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    rich_markup_mode=None,  # Click's layout: option names never cut (see cli/help_format.py)
    context_settings={"help_option_names": ["-h", "--help"]},
)


def _version(value: bool) -> None:
    if value:
        sys.stdout.write(f"inventory {__version__}\n")
        raise typer.Exit()


@app.callback()
def root(
    version: Annotated[
        bool,
        typer.Option(
            "--version", callback=_version, is_eager=True, help="Print the version and exit."
        ),
    ] = False,
    debug: Annotated[
        bool, typer.Option("--debug", help="Show tracebacks for unexpected errors.")
    ] = False,
    strict: Annotated[
        bool, typer.Option("--strict", help="Refuse (exit 2) a model whose figures are a "
                           "generic estimate of an unmodelled architecture; also accepted "
                           "after the command.")
    ] = False,
) -> None:
    """Capacity planner for LLM serving.

    Example: inventory kv --layers 80 --tokens 8000
    """


# --- commands, in the order `inventory --help` lists them; each module loads only when its
# command is looked up (cli/lazy.py) -------------------------------------------------------
lazy.register(app, "kv", "llm_inventory.cli.kv:kv", help_format.Command)
lazy.register(app, "inventory", "llm_inventory.cli.inventory:inventory", help_format.Command)
lazy.register(app, "placement", "llm_inventory.cli.placement:placement", help_format.Command)
lazy.register(app, "recommend", "llm_inventory.cli.recommend:recommend", help_format.Command)
lazy.register(app, "compare", "llm_inventory.cli.inventory:compare", help_format.Command)
lazy.register(app, "launch", "llm_inventory.cli.launch:launch", help_format.Command,
              {"ignore_unknown_options": True, "allow_interspersed_args": False})
lazy.register(app, "engines", "llm_inventory.cli.engines:engines", help_format.Command)
lazy.register(app, "models", "llm_inventory.cli.models:models", help_format.Command)
lazy.register(app, "devices", "llm_inventory.cli.devices:devices", help_format.Command)
lazy.register(app, "route", "llm_inventory.cli.route:route", help_format.Command)
lazy.register(app, "sample", "llm_inventory.cli.sample:sample", help_format.Command)
lazy.register(app, "schema", "llm_inventory.cli.schema:schema", help_format.Command)


def main(argv: Sequence[str] | None = None) -> int:
    """Console entry point: run the app and return its exit code."""
    try:
        app(args=argv, prog_name="inventory")
    except SystemExit as exc:
        code = exc.code
        return code if isinstance(code, int) else (0 if code is None else 1)
    return 0
