"""The `inventory` command: one Typer app, its commands registered in one ordered block.

This module is also the single error boundary: every failure becomes one line on stderr and
an exit code (ExitCode), never a traceback unless `--debug` (anywhere on the command line) or
INVENTORY_DEBUG (any value but empty, 0, false, no or off) asks for one.
"""

from __future__ import annotations

import contextlib
import errno
import io
import os
import re
import sys
from collections.abc import Sequence
from enum import IntEnum
from typing import TYPE_CHECKING, Annotated, Any, NoReturn, TypeGuard

import typer

from llm_inventory import __version__
from llm_inventory.cli import lazy
from llm_inventory.cli.help_format import Command as HelpCommand

if TYPE_CHECKING:
    from pydantic import ValidationError


class ExitCode(IntEnum):
    """The exit statuses of `inventory`, as the README's Conventions list them."""

    OK = 0
    CHECK_FAILED = 1  # a check the user asked for failed (--max-bytes, --require-fit)
    BAD_INPUT = 2  # bad input, or no arguments at all (help on stderr, as Click does)
    INTERNAL = 3  # a bug: one line, and --debug shows the traceback
    OUTPUT_FAILED = 74  # stdout could not take the output (disk full, file too large):
    # EX_IOERR of sysexits.h; one line on stderr, and the output is not complete
    PIPE_CLOSED = 141  # the reader of stdout went away: 128 + SIGPIPE, as a shell reports it


EPILOG = (
    "Exit codes: 0 success; 1 a check you asked for failed (--max-bytes, --require-fit); "
    "2 bad input; 3 internal error (a bug: rerun with --debug); 74 output could not be "
    "written (disk full, file too large); 141 output pipe closed."
)

# A run of this many characters without a space is a value, not prose: a path this long is
# itself hostile input. It is cut to its ends and its length.
_LONG_WORD = re.compile(r"\S{201,}")


def _one_line(message: str) -> str:
    """The message on one bounded line: whitespace collapsed, long runs and the line cut."""
    from llm_inventory.bounds import ERROR_LINE, EXCERPT

    def cut(match: re.Match[str]) -> str:
        word = match[0]
        return f"{word[:EXCERPT]}…{word[-EXCERPT // 2:]} ({len(word):,} characters)"

    line = _LONG_WORD.sub(cut, " ".join(message.split()))
    if len(line) > ERROR_LINE:
        line = f"{line[:ERROR_LINE]}… (cut at {ERROR_LINE:,} of {len(line):,} characters)"
    return line.encode("utf-8", "backslashreplace").decode("utf-8")


def _fail(message: str, code: ExitCode) -> NoReturn:
    sys.stderr.write(f"inventory: error: {_one_line(message)}\n")
    sys.exit(int(code))


def _take_strict(argv: list[str]) -> tuple[list[str], bool]:
    """`--strict` taken from anywhere before `--`: a root option also given after the
    command."""
    end = argv.index("--") if "--" in argv else len(argv)
    return [a for a in argv[:end] if a != "--strict"] + argv[end:], "--strict" in argv[:end]


def _estimate_handler(strict: bool, pending: list[str]) -> Any:
    """How a command meets an estimated model: one warning per model, kept in `pending`
    for stderr once the command has run (bad input stays one line), or under --strict bad
    input (exit 2)."""
    warned: set[str] = set()

    def handle(spec: Any) -> None:
        from llm_inventory.errors import InputError

        if strict:
            raise InputError("model", f"{spec.name}: {spec.estimated}; --strict refuses "
                             "estimated figures")
        if spec.estimated not in warned:
            warned.add(spec.estimated)
            pending.append(f"inventory: warning: {spec.name}: {spec.estimated}\n")

    return handle


def _closed_pipe() -> NoReturn:
    """Leave quietly when stdout's reader has gone, as `head` users expect (Python's
    documented recipe: point stdout at devnull so the final flush cannot fail again)."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError, AttributeError):  # no real file descriptor (a test runner)
        pass
    sys.exit(int(ExitCode.PIPE_CLOSED))


def _internal(exc: Exception, debug: bool) -> NoReturn:
    if debug:
        raise exc
    _fail(f"unexpected {type(exc).__name__}: {exc} (rerun with --debug for the traceback)",
          ExitCode.INTERNAL)


def _split_debug(argv: list[str]) -> tuple[list[str], bool]:
    """Take `--debug` out of the arguments wherever it stands (before a `--`)."""
    end = argv.index("--") if "--" in argv else len(argv)
    kept = [a for a in argv[:end] if a != "--debug"] + argv[end:]
    return kept, len(kept) != len(argv)


def _is_request_validation(exc: Exception) -> TypeGuard[ValidationError]:
    """Whether `exc` is pydantic's ValidationError raised by a `…Request` model."""
    if "pydantic_core" not in sys.modules:
        return False
    from pydantic import ValidationError

    return isinstance(exc, ValidationError) and exc.title.endswith("Request")


def _unnamable(args: list[str]) -> str | None:
    """The message for a path argument no file system can name (a NUL, a lone surrogate)."""
    for index, arg in enumerate(args):
        try:
            os.fsencode(arg)
        except UnicodeError:
            problem = "is not valid text for this system"
        else:
            if "\0" not in arg:
                continue
            problem = "holds a NUL character"
        if arg.startswith("--") and "=" in arg:
            flag = arg.split("=", 1)[0]
        else:
            flag = args[index - 1] if index and args[index - 1].startswith("-") else "a path"
        return f"{flag}: the file name {problem}"
    return None


class _PipeClosed(Exception):
    """stdout's reader went away while a command wrote its result."""


class _OutputFailed(Exception):
    """stdout refused part of the output: a full disk, a file-size limit, an I/O error."""

    def __init__(self, error: OSError) -> None:
        super().__init__(error.strerror or str(error))


class _WholeWrites(io.RawIOBase):
    """File descriptor 1, where every write is written whole or fails.

    Python ignores SIGXFSZ, so past a file-size limit (`ulimit -f`) a write is cut short
    and the next one fails with EFBIG; its own buffered and unbuffered stdout lose the short
    part silently (and exit 0). Here a short write is retried until it completes or fails,
    and a failure (not a closed pipe) becomes _OutputFailed."""

    def __init__(self, fd: int) -> None:
        super().__init__()
        self.fd = fd

    def writable(self) -> bool:
        return True

    def fileno(self) -> int:
        return self.fd

    def isatty(self) -> bool:
        return os.isatty(self.fd)

    def write(self, data: Any) -> int:
        view = memoryview(data).cast("B")
        done = 0
        while done < len(view):
            try:
                written = os.write(self.fd, view[done:])
            except BrokenPipeError:
                raise
            except InterruptedError:
                continue
            except OSError as exc:
                raise _OutputFailed(exc) from exc
            if written == 0:
                raise _OutputFailed(OSError(errno.ENOSPC, os.strerror(errno.ENOSPC)))
            done += written
        return done


def _checked_stdout() -> None:
    """Point sys.stdout at descriptor 1 through _WholeWrites, when it is the real stdout
    (a test runner's captured stream is left alone)."""
    stream: Any = sys.stdout
    original: Any = sys.__stdout__
    if stream is None or stream is not original:
        return
    try:
        fd = stream.fileno()
        stream.flush()
    except (OSError, ValueError, AttributeError):
        return
    sys.stdout = io.TextIOWrapper(
        io.BufferedWriter(_WholeWrites(fd), 1 << 16), encoding=stream.encoding,
        errors=stream.errors, line_buffering=stream.line_buffering)


def _output_failed(exc: _OutputFailed) -> NoReturn:
    """Say once that the output is incomplete; the interpreter's last flush then writes to
    devnull, so it cannot fail a second time."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError, AttributeError):
        pass
    _fail(f"cannot write the output: {exc}; what was written is incomplete",
          ExitCode.OUTPUT_FAILED)


class BoundedCommand(HelpCommand):
    """A command whose integer options are checked against `bounds.OPTIONS` once parsed."""

    def parse_args(self, ctx: Any, args: list[str]) -> list[str]:
        from llm_inventory.bounds import check_option
        from llm_inventory.errors import InputError

        given = list(args)  # Click consumes `args` as it parses
        try:
            rest: list[str] = super().parse_args(ctx, args)
        except ValueError as exc:  # os.stat on a path option's value no file system can name
            message = _unnamable(given)
            if message is None:
                raise
            raise typer.BadParameter(message, ctx=ctx) from exc
        for param in self.params:
            try:
                check_option(str(param.name), ctx.params.get(str(param.name)))
            except InputError as exc:
                raise typer.BadParameter(exc.message, ctx=ctx, param=param) from exc
        return rest


def _env_flag(name: str) -> bool:
    """An on/off environment variable: unset, empty, 0, false, no and off are off."""
    return os.environ.get(name, "").strip().lower() not in ("", "0", "false", "no", "off")


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

        argv, debug = _split_debug(list(sys.argv[1:] if args is None else args))
        debug = debug or _env_flag("INVENTORY_DEBUG")
        argv, self.strict = _take_strict(argv)
        _checked_stdout()
        try:
            result = super().main(
                args=argv,
                prog_name=prog_name or "inventory",
                complete_var=complete_var,
                standalone_mode=False,
                windows_expand_args=windows_expand_args,
                **extra,
            )
            sys.stdout.flush()  # a closed pipe shows here, not in the interpreter's last flush
        except typer.TyperException as exc:
            context = getattr(exc, "ctx", None)
            if type(exc).__name__ == "NoArgsIsHelpError" and context is not None:
                help_text = exc.format_message()  # empty when Rich printed it (to stderr)
                sys.stderr.write(help_text + "\n" if help_text else "")
                sys.exit(int(ExitCode.BAD_INPUT))
            _fail(exc.format_message(), ExitCode.BAD_INPUT)
        except typer.Abort:
            _fail("aborted", ExitCode.CHECK_FAILED)
        except InputError as exc:
            _fail(self._flagged(exc, argv), ExitCode.BAD_INPUT)
        except CheckFailed as exc:
            _fail(str(exc), ExitCode.CHECK_FAILED)
        except (BrokenPipeError, _PipeClosed):
            _closed_pipe()
        except _OutputFailed as exc:
            _output_failed(exc)
        except Exception as exc:
            # A request model (PlacementRequest …) failing validation holds what the user
            # asked for; any other failure is a bug. pydantic is imported only if a command
            # already loaded it (the kv JSON path never does).
            if debug or not _is_request_validation(exc):
                _internal(exc, debug)
            from llm_inventory.spec.errors import from_validation

            _fail(self._flagged(from_validation(exc, ""), argv), ExitCode.BAD_INPUT)
        sys.exit(result if isinstance(result, int) else 0)

    strict = False

    def parse_args(self, ctx: Any, args: list[str]) -> list[str]:
        if args or ctx.resilient_parsing:
            return super().parse_args(ctx, args)
        # Click >= 8.2: no arguments at all is a usage error, its help on stderr; Typer's
        # Rich help prints as the error is built, so stdout is pointed at stderr meanwhile.
        with contextlib.redirect_stdout(sys.stderr):
            return super().parse_args(ctx, args)

    def invoke(self, ctx: Any) -> Any:
        """Run the command with estimated models met as --strict says, and only while it
        runs (library callers load models after it); a closed stdout leaves quietly."""
        from llm_inventory.errors import CheckFailed
        from llm_inventory.spec import estimates

        pending: list[str] = []
        estimates.handler = _estimate_handler(self.strict, pending)
        try:
            result = super().invoke(ctx)
        except BrokenPipeError as exc:  # before Typer turns it into exit status 1
            raise _PipeClosed() from exc
        except _OutputFailed:
            raise
        except CheckFailed:  # the result was printed: its warnings belong with it
            sys.stderr.write("".join(pending))
            raise
        finally:
            estimates.handler = None
        sys.stderr.write("".join(pending))
        return result

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
    epilog=EPILOG,
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


# --- commands, in the order `inventory --help` lists them; each module loads on first use ---
# Every command checks its options' bounds once parsed (BoundedCommand).
lazy.register(app, "kv", "llm_inventory.cli.kv:kv", BoundedCommand)
lazy.register(app, "inventory", "llm_inventory.cli.inventory:inventory", BoundedCommand)
lazy.register(app, "placement", "llm_inventory.cli.placement:placement", BoundedCommand)
lazy.register(app, "recommend", "llm_inventory.cli.recommend:recommend", BoundedCommand)
lazy.register(app, "compare", "llm_inventory.cli.inventory:compare", BoundedCommand)
lazy.register(app, "sweep", "llm_inventory.cli.sweep:sweep", BoundedCommand)
lazy.register(app, "launch", "llm_inventory.cli.launch:launch", BoundedCommand,
              {"ignore_unknown_options": True, "allow_interspersed_args": False})
lazy.register(app, "check", "llm_inventory.cli.check:check", BoundedCommand)
lazy.register(app, "pack", "llm_inventory.cli.pack:pack", BoundedCommand)
lazy.register(app, "calibrate", "llm_inventory.cli.calibrate:calibrate", BoundedCommand)
lazy.register(app, "engines", "llm_inventory.cli.engines:engines", BoundedCommand)
lazy.register(app, "models", "llm_inventory.cli.models:models", BoundedCommand)
lazy.register(app, "devices", "llm_inventory.cli.devices:devices", BoundedCommand)
lazy.register(app, "route", "llm_inventory.cli.route:route", BoundedCommand)
lazy.register(app, "sample", "llm_inventory.cli.sample:sample", BoundedCommand)
lazy.register(app, "schema", "llm_inventory.cli.schema:schema", BoundedCommand)


def main(argv: Sequence[str] | None = None) -> int:
    """Console entry point: run the app and return its exit code."""
    try:
        app(args=argv, prog_name="inventory")
    except SystemExit as exc:
        code = exc.code
        return code if isinstance(code, int) else (0 if code is None else 1)
    return 0
