"""Reporting a model's problems beyond what :mod:`active_memory.models.base` does by default.

* :func:`problem_at` locates a rule below the validator that checks it: a record's model
  validator that finds a repeated execution id reports ``executions[3].id``, not the record.
* :func:`add_unique` is that check for any repeated key (node id, execution id, receipt seq).
* :class:`FamilyModel` is the base of a model family whose callers catch another error of the
  tree than :class:`~active_memory.errors.LessonValidationError`: the run record's parts raise
  :class:`~active_memory.errors.RunRecordError`, the runtime configuration
  :class:`~active_memory.errors.ConfigError`, with the same field path and rule.
"""

from __future__ import annotations

from collections.abc import Hashable
from typing import Any, ClassVar, TypeVar

from pydantic import ValidationError
from pydantic_core import InitErrorDetails, PydanticCustomError

from active_memory.errors import ActiveMemoryError, LessonValidationError
from active_memory.models.base import Model, _ModelMeta, first_problem

__all__ = ["FamilyModel", "add_unique", "family_problem", "problem_at"]

_Key = TypeVar("_Key", bound=Hashable)


def problem_at(location: tuple[int | str, ...], code: str, rule: str) -> ValidationError:
    """A validation error at ``location`` below the validator raising it.

    Pydantic keeps the location of a ValidationError raised inside a validator and prefixes it
    with the validator's own, so ``problem_at(("executions", 3, "id"), ...)`` raised by a
    record's model validator reports ``executions[3].id``.
    """
    detail = InitErrorDetails(type=PydanticCustomError(code, rule), loc=location, input=None)
    return ValidationError.from_exception_data("rule", [detail])


def add_unique(
    seen: set[_Key], key: _Key, location: tuple[int | str, ...], code: str, what: str
) -> None:
    """Adds ``key`` to ``seen``, or fails ``code`` at ``location`` ("repeats {what} 'key'") when
    an earlier entry had it."""
    if key in seen:
        raise problem_at(location, code, f"repeats {what} {key!r}")
    seen.add(key)


def family_problem(error: ValidationError, model: object = None) -> tuple[str, str]:
    """``(field path, rule)`` of the first problem, worded as every model words it; ``model``
    (the validated type) lets an unknown field list the known ones."""
    problem = first_problem(error, model=model)
    return problem.field, problem.problem


class _FamilyMeta(_ModelMeta):
    def __call__(cls, *args: Any, **kwargs: Any) -> Any:
        try:
            return super().__call__(*args, **kwargs)
        except LessonValidationError as error:
            family: type[ActiveMemoryError] = getattr(cls, "validation_error", type(error))
            raise family(error.field, error.problem) from None


class FamilyModel(Model, metaclass=_FamilyMeta):
    """A model whose direct construction raises ``validation_error(field path, rule)``."""

    validation_error: ClassVar[type[ActiveMemoryError]] = LessonValidationError
