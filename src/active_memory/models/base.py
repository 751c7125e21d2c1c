"""The base of every data model: frozen, unknown fields refused, strict, and one error type.

Pydantic reports a bad value as a :class:`pydantic.ValidationError` listing every problem. The
toolkit's callers (admission, the store, the CLI) want one sentence that names the field path
(``scope.files[2]``) and the rule broken, in the package's own exception tree, so:

* constructing a model directly (``RepositoryScope(repository=..., files=...)``) raises
  :class:`~active_memory.errors.LessonValidationError` for the first problem. The conversion sits
  in the metaclass's ``__call__``, not in ``__init__``: pydantic builds nested models without
  calling the class, so the path of a nested problem stays whole (an ``__init__`` override would
  be called for every nested model and cut the path at that level);
* :meth:`Model.parse` does the same for a JSON-like value (a dict read from a file or a wire);
* rules are written as validators that raise :class:`pydantic_core.PydanticCustomError` whose
  message is the rule (``is 120 UTF-8 bytes; the limit is 96``); the path comes from pydantic.
"""

from __future__ import annotations

from typing import Any, Self

from pydantic import BaseModel, ConfigDict, ValidationError
from pydantic._internal._model_construction import ModelMetaclass

from active_memory.errors import LessonValidationError

__all__ = ["Model", "error_path", "first_problem"]


def error_path(location: tuple[int | str, ...]) -> str:
    """``("scope", "files", 2)`` → ``scope.files[2]``."""
    text = ""
    for part in location:
        if isinstance(part, int):
            text += f"[{part}]"
        else:
            text += f".{part}" if text else str(part)
    return text


def first_problem(error: ValidationError, prefix: str = "") -> LessonValidationError:
    """The first problem of ``error`` as a LessonValidationError naming its field path."""
    details = error.errors(include_url=False, include_input=False)
    if not details:  # pydantic never raises an empty error; keep the contract anyway
        return LessonValidationError(prefix or error.title, "is not valid")
    detail = details[0]
    path = error_path(tuple(detail["loc"]))
    if prefix:
        path = f"{prefix}.{path}" if path and not path.startswith("[") else f"{prefix}{path}"
    message = detail["msg"]
    if detail["type"] == "extra_forbidden":
        message = "is not a known field"
    elif detail["type"] == "missing":
        message = "is required"
    return LessonValidationError(path or error.title, message)


class _ModelMeta(ModelMetaclass):
    def __call__(cls, *args: Any, **kwargs: Any) -> Any:
        try:
            return super().__call__(*args, **kwargs)
        except ValidationError as error:
            raise first_problem(error) from None


class Model(BaseModel, metaclass=_ModelMeta):
    """Frozen, unknown fields refused, no type coercion (``"3"`` is not an int)."""

    model_config = ConfigDict(
        frozen=True,
        extra="forbid",
        strict=True,
        validate_default=False,
        revalidate_instances="never",
        hide_input_in_errors=True,
    )

    @classmethod
    def parse(cls, data: object, *, where: str = "") -> Self:
        """Validate a JSON-like value; LessonValidationError names the first bad field."""
        try:
            return cls.model_validate(data)
        except ValidationError as error:
            raise first_problem(error, where) from None

    @classmethod
    def parse_json(cls, text: str | bytes, *, where: str = "") -> Self:
        """Validate JSON text directly (faster than json.loads, then parse)."""
        try:
            return cls.model_validate_json(text)
        except ValidationError as error:
            raise first_problem(error, where) from None
