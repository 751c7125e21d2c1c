"""One spelling per flag: ``--repository`` is a checkout folder, and renamed flags' old names.

Every command reads ``--repository`` as a checkout folder and derives its key the way recall
and the hooks do (:func:`~active_memory.repository.repository_key`); a key itself is
``--repository-key``. ``lessons list`` and ``server token create`` used to read a key from
``--repository``: for one release such a value, when it is not a folder, still works with a
warning line on stderr. A flag renamed to its concept's one spelling keeps its old name for one
release too, hidden from ``--help`` (:class:`RenamedOption`). The README's reference lists
the renames.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from typing import Any, ParamSpec, TypeVar

import click

from active_memory.cli._common import EXIT_BAD_INPUT, capped, fail
from active_memory.errors import LessonValidationError
from active_memory.repository import repository_key, validate_repository_key

__all__ = ["RenamedOption", "checkout_key", "chosen_repository", "repository_key_option"]

P = ParamSpec("P")
R = TypeVar("R")
_KEY_FORMS = "forge:host/owner/repo, local:<hex> or repo:<name>"


def _warn(text: str) -> None:
    click.echo(f"warning: {text}", err=True)


class RenamedOption(click.Option):
    """An option that also answers to its old spelling ``old`` for one release, with a warning.

    The old spelling is parsed into a slot of its own, so the option can tell which was typed;
    it is then handled exactly as the new one (type, callback, ``required``). Both given with
    different values is bad input."""

    def __init__(self, *args: Any, old: str, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.old = old
        self._old_slot = f"{self.name}\0{old}"  # no parameter name can hold a NUL

    def add_to_parser(self, parser: Any, ctx: click.Context) -> None:
        super().add_to_parser(parser, ctx)
        if self.is_flag:
            parser.add_option(
                obj=self, opts=[self.old], dest=self._old_slot, action="store_const", const=True
            )
        else:
            parser.add_option(
                obj=self, opts=[self.old], dest=self._old_slot, action="store", nargs=self.nargs
            )

    def handle_parse_result(
        self, ctx: click.Context, opts: Mapping[str, Any], args: list[str]
    ) -> tuple[Any, list[str]]:
        if self._old_slot in opts:
            given = dict(opts)
            value = given.pop(self._old_slot)
            new = self.opts[0]
            if self.name in given and given[self.name] != value:
                fail(f"give {new} once; {self.old} is its old spelling", EXIT_BAD_INPUT)
            given[str(self.name)] = value
            if not ctx.resilient_parsing:  # shell completion parses too: stay quiet
                _warn(f"{self.old} is deprecated; use {new}")
            opts = given
        return super().handle_parse_result(ctx, opts, args)


def checkout_key(ctx: click.Context, param: click.Parameter, value: str | None) -> str | None:
    """``--repository``'s callback where it used to take a key: the key of the checkout holding
    the folder ``value``; a key given instead still works, with a warning, for one release."""
    if value is None:
        return None
    if os.path.isdir(value):
        return repository_key(value)
    try:
        key = validate_repository_key("--repository", value)
    except LessonValidationError:
        fail(
            f"--repository {capped(value)!r} is neither a folder nor a repository key; give a "
            f"checkout folder, or a key ({_KEY_FORMS}) with --repository-key",
            EXIT_BAD_INPUT,
        )
    _warn(f"--repository with a key is deprecated; use --repository-key {key}")
    return key


def _valid_key(ctx: click.Context, param: click.Parameter, value: str | None) -> str | None:
    if value is None:
        return None
    try:
        return validate_repository_key("--repository-key", value)
    except LessonValidationError:
        fail(
            f"--repository-key {capped(value)!r} is not a repository key; give one of "
            f"{_KEY_FORMS}, or a checkout folder with --repository",
            EXIT_BAD_INPUT,
        )


def repository_key_option(help: str) -> Callable[[Callable[P, R]], Callable[P, R]]:
    """``--repository-key KEY``, checked as it is parsed (exit 2 when it is not a key)."""
    return click.option(
        "--repository-key", "repository_key", metavar="KEY", callback=_valid_key, help=help
    )


def chosen_repository(from_checkout: str | None, key: str | None) -> str | None:
    """The one key given by ``--repository`` (already a key) or ``--repository-key``; both is
    bad input."""
    if from_checkout is not None and key is not None:
        fail("give --repository or --repository-key, not both", EXIT_BAD_INPUT)
    return key if key is not None else from_checkout
