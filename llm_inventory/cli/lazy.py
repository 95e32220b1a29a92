"""Commands that load on first use: `inventory kv` imports the kv module and no other.

The app registers each command by name and the `module:function` that implements it. Typer
is handed a stand-in with no options, so building the group imports nothing; the group's
command table builds the real command — from the function, by Typer, exactly as an eager
registration would — the first time it is looked up: to run it, to show its help, or to
list it in `inventory --help` (which therefore loads every command).
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Iterator, Mapping, MutableMapping
from typing import Any

import typer
from typer.core import TyperCommand, TyperGroup
from typer.main import get_command_from_info
from typer.models import CommandInfo


class Deferred:
    """A command not yet imported: where its function lives and how to build it. (A plain
    class: `dataclasses` would be this module's costliest import.)"""

    __slots__ = ("cls", "context_settings", "name", "pretty_exceptions_short", "target")

    def __init__(self, name: str, target: str, cls: type[TyperCommand],
                 context_settings: dict[str, Any] | None,
                 pretty_exceptions_short: bool) -> None:
        self.name = name
        self.target = target  # "package.module:function"
        self.cls = cls
        self.context_settings = context_settings
        self.pretty_exceptions_short = pretty_exceptions_short

    def build(self, rich_markup_mode: Any) -> typer.core.TyperCommand:
        module, _, attribute = self.target.partition(":")
        function = getattr(importlib.import_module(module), attribute)
        info = CommandInfo(name=self.name, cls=self.cls, callback=function,
                           context_settings=self.context_settings)
        command = get_command_from_info(info, pretty_exceptions_short=self.pretty_exceptions_short,
                                        rich_markup_mode=rich_markup_mode)
        assert isinstance(command, TyperCommand)
        return command


def _stand_in(deferred: Deferred) -> Callable[[], None]:
    def stand_in() -> None:  # never run: the group builds the real command before it runs
        raise RuntimeError(f"command {deferred.name} ran before it was loaded")

    stand_in.deferred = deferred  # type: ignore[attr-defined]
    return stand_in


def _deferred(command: Any) -> Deferred | None:
    # Typer wraps a callback with functools.update_wrapper, which keeps it as __wrapped__.
    found = getattr(getattr(command.callback, "__wrapped__", None), "deferred", None)
    return found if isinstance(found, Deferred) else None


class LazyCommands(MutableMapping[str, Any]):
    """A group's command table whose stand-ins turn into commands when looked up."""

    def __init__(self, commands: Mapping[str, Any], rich_markup_mode: Any) -> None:
        self._commands = dict(commands)
        self._rich_markup_mode = rich_markup_mode

    def __getitem__(self, name: str) -> Any:
        command = self._commands[name]
        deferred = _deferred(command)
        if deferred is not None:
            command = self._commands[name] = deferred.build(self._rich_markup_mode)
        return command

    def __contains__(self, name: object) -> bool:
        return name in self._commands

    def __setitem__(self, name: str, command: Any) -> None:
        self._commands[name] = command

    def __delitem__(self, name: str) -> None:
        del self._commands[name]

    def __iter__(self) -> Iterator[str]:
        return iter(self._commands)

    def __len__(self) -> int:
        return len(self._commands)

    def loaded(self) -> list[str]:
        """The commands built so far (for tests)."""
        return [name for name, command in self._commands.items() if _deferred(command) is None]


class LazyGroup(TyperGroup):
    """A Typer group whose registered stand-ins load on first look-up."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.commands = LazyCommands(self.commands, self.rich_markup_mode)


def register(app: typer.Typer, name: str, target: str, cls: type[TyperCommand],
             context_settings: dict[str, Any] | None = None) -> None:
    """Register `inventory NAME`, implemented by `target` ("module:function"), unloaded."""
    deferred = Deferred(name, target, cls, context_settings, app.pretty_exceptions_short)
    app.registered_commands.append(CommandInfo(name=name, help="", callback=_stand_in(deferred)))
