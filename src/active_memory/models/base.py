"""The base of every data model: frozen, unknown fields refused, strict, and one error type.

Pydantic reports a bad value as a :class:`pydantic.ValidationError` listing every problem. The
toolkit's callers (admission, the store, the CLI) want one sentence that names the field path
(``scope.files[2]``) and the rule broken, in the package's own exception tree, so:

* constructing a model directly (``RepositoryScope(repository=..., files=...)``) raises
  :class:`~active_memory.errors.LessonValidationError` for the first problem. The conversion sits
  in the metaclass's ``__call__``, not in ``__init__``: pydantic builds nested models without
  calling the class, so the path of a nested problem stays whole (an ``__init__`` override would
  be called for every nested model and cut the path at that level);
* :meth:`Model.parse` does the same for a JSON-like value (a dict read from a file or a wire),
  :meth:`Model.parse_json` for JSON text;
* rules are written as validators that raise :class:`pydantic_core.PydanticCustomError` whose
  message is the rule (``is 120 UTF-8 bytes; the limit is 96``); the path comes from pydantic.
  Pydantic's own refusals keep pydantic's wording, except a missing or unknown field, a value
  that is not an object, and an unknown union tag, which are worded like the rules.

A model may set ``error_root`` (``"scope"``, ``"evidence"``): the name its fields' paths start
with when it is validated on its own, so ``Evidence(...)`` and a lesson's ``evidence`` report the
same ``evidence.reason``. A union discriminated on a tag (``scope``: ``kind``) makes pydantic add
the tag to the location; :func:`first_problem` drops it, so the path is the data's own.
"""

from __future__ import annotations

import threading
import types
from collections.abc import Mapping
from typing import TYPE_CHECKING, Annotated, Any, ClassVar, Self, Union, get_args, get_origin

from pydantic import (
    BaseModel,
    ConfigDict,
    TypeAdapter,
    ValidationError,
    computed_field,
)
from pydantic._internal._model_construction import ModelMetaclass
from pydantic.fields import FieldInfo

from active_memory.errors import LessonValidationError
from active_memory.models.fields import json_type

if TYPE_CHECKING:
    from pydantic._internal._namespace_utils import MappingNamespace

__all__ = ["Model", "Verdict", "dataclass_json", "error_path", "first_problem"]


def error_path(location: tuple[int | str, ...]) -> str:
    """``("scope", "files", 2)`` → ``scope.files[2]``."""
    text = ""
    for part in location:
        if isinstance(part, int):
            text += f"[{part}]"
        else:
            text += f".{part}" if text else str(part)
    return text


def _discriminator(metadata: object) -> str | None:
    found = getattr(metadata, "discriminator", None)
    return found if isinstance(found, str) else None


def _unwrap(annotation: object) -> tuple[object, str | None]:
    """The type under ``Annotated`` and ``| None``, and the tag of a discriminated union."""
    tag = None
    while True:
        origin = get_origin(annotation)
        if origin is Annotated:
            base, *metadata = get_args(annotation)
            tag = next((d for d in map(_discriminator, metadata) if d), tag)
            annotation = base
        elif origin in (Union, types.UnionType):
            members = [arg for arg in get_args(annotation) if arg is not type(None)]
            if len(members) != 1:
                return annotation, tag
            annotation = members[0]
        else:
            return annotation, tag


def _child(parent: object, part: int | str) -> tuple[object, str | None]:
    """The declared type found at ``part`` of ``parent`` (None when unknown), and its tag."""
    if isinstance(parent, type) and issubclass(parent, BaseModel) and isinstance(part, str):
        field: FieldInfo | None = parent.model_fields.get(part)
        if field is None:
            return None, None
        annotation, tag = _unwrap(field.annotation)
        return annotation, field.discriminator if isinstance(field.discriminator, str) else tag
    if get_origin(parent) in (tuple, list) and isinstance(part, int):
        return _unwrap(get_args(parent)[0])
    return None, None


def _member(union: object, tag_field: str, tag: object) -> object:
    for member in get_args(union):
        if isinstance(member, type) and issubclass(member, BaseModel):
            field = member.model_fields.get(tag_field)
            if field is not None and field.default == tag:
                return member
    return None


def _resolve(
    model: object, location: tuple[int | str, ...]
) -> tuple[tuple[int | str, ...], object]:
    """``location`` without discriminator tags, and the declared type of its parent."""
    kept: list[int | str] = []
    current, parent = model, None
    parts = list(location)
    while parts:
        part = parts.pop(0)
        kept.append(part)
        parent = current
        current, tag_field = _child(current, part)
        if tag_field is not None and parts:
            current = _member(current, tag_field, parts.pop(0))
    return tuple(kept), parent


def _or(choices: str) -> str:
    """``"'a', 'b', 'c'"`` → ``"'a', 'b' or 'c'"``."""
    head, _, last = choices.rpartition(", ")
    return f"{head} or {last}" if head else choices


def _rule(detail: Mapping[str, Any], parent: object) -> str:
    """The problem of one pydantic error detail, worded like the toolkit's own rules."""
    kind, value = detail["type"], detail.get("input")
    context: Mapping[str, Any] = detail.get("ctx") or {}
    got = f"got {json_type(value)}"
    if kind == "extra_forbidden":
        if isinstance(parent, type) and issubclass(parent, BaseModel):
            return f"is not a known field; allowed: {sorted(parent.model_fields)}"
        return "is not a known field"
    if kind in ("missing", "union_tag_not_found"):
        return "is required"
    if kind in ("model_type", "model_attributes_type", "dict_type"):
        return f"must be an object, {got}"
    if kind == "union_tag_invalid":
        return f"{context['tag']!r} must be {_or(context['expected_tags'])}"
    if kind == "json_invalid":
        return f"is not valid JSON ({context.get('error', detail['msg'])})"
    if kind in ("tuple_type", "list_type"):
        return f"must be a list, {got}"
    if kind == "too_short":
        least, actual = context.get("min_length"), context.get("actual_length")
        return f"needs at least {least} entr{'y' if least == 1 else 'ies'}, got {actual}"
    if kind == "too_long":
        return (
            f"has {context.get('actual_length')} entries; the limit is {context.get('max_length')}"
        )
    if kind == "string_pattern_mismatch":
        return f"{value!r} does not match the pattern {context.get('pattern')}"
    if kind in ("int_type", "int_from_float", "int_parsing"):
        return f"must be an integer, {got}"
    if kind in ("string_type",):
        return f"must be a string, {got}"
    if kind == "greater_than_equal":
        return f"must be at least {context.get('ge')}, got {value!r}"
    if kind in ("bool_type",):
        return f"must be true or false, {got}"
    return str(detail["msg"])


def first_problem(
    error: ValidationError, prefix: str = "", *, model: object = None
) -> LessonValidationError:
    """The first problem of ``error`` as a LessonValidationError naming its field path.

    ``model`` (the validated type) lets the path drop discriminator tags and an unknown field
    list the known ones; ``prefix`` starts the path (``evidence``, ``line 3``).
    """
    details = error.errors(include_url=False)
    if not details:  # pydantic never raises an empty error; keep the contract anyway
        return LessonValidationError(prefix or error.title, "is not valid")
    detail = details[0]
    location, parent = _resolve(model, tuple(detail["loc"]))
    if detail["type"] in ("union_tag_invalid", "union_tag_not_found"):
        location = (*location, str(detail["ctx"]["discriminator"]).strip("'"))
    path = error_path(location)
    if prefix:
        path = f"{prefix}.{path}" if path and not path.startswith("[") else f"{prefix}{path}"
    return LessonValidationError(path or error.title, _rule(detail, parent))


class _ModelMeta(ModelMetaclass):
    def __call__(cls, *args: Any, **kwargs: Any) -> Any:
        if args:
            # BaseModel's own message ("takes 1 positional argument") names neither the model
            # nor what to write instead.
            fields = ", ".join(f"{name}=..." for name in cls.model_fields)  # type: ignore[attr-defined]
            raise TypeError(
                f"{cls.__name__} takes keyword arguments only: {cls.__name__}({fields})"
            )
        try:
            return super().__call__(*args, **kwargs)
        except ValidationError as error:
            raise first_problem(error, getattr(cls, "error_root", ""), model=cls) from None


# Serialises the first-use schema builds of every model (see Model.model_rebuild).
_BUILD_LOCK = threading.RLock()


class Model(BaseModel, metaclass=_ModelMeta):
    """Frozen, unknown fields refused, no type coercion (``"3"`` is not an int).

    A model's validator is built on its first use, not when its module is imported
    (``defer_build``): building every class's core schema at import cost each CLI command
    about 30 ms of CPU, and most commands validate only a few of the models they import.
    """

    model_config = ConfigDict(
        frozen=True,
        extra="forbid",
        strict=True,
        validate_default=False,
        revalidate_instances="never",
        hide_input_in_errors=True,
        defer_build=True,
    )

    # The name this model's field paths start with when it is validated on its own.
    error_root: ClassVar[str] = ""

    @classmethod
    def model_rebuild(
        cls,
        *,
        force: bool = False,
        raise_errors: bool = True,
        _parent_namespace_depth: int = 2,
        _types_namespace: MappingNamespace | None = None,
    ) -> bool | None:
        """Pydantic's rebuild, one at a time: a deferred model is built by the first thread that
        uses it, and pydantic releases before its own rebuild lock (pydantic#13438) let two
        threads rebuilding at once (the serve broker's, a postmortem's specialists) see a class
        half rebuilt. Re-entrant and shared, as building one model builds the models it holds."""
        depth = _parent_namespace_depth + 1 if _parent_namespace_depth > 0 else 0  # this frame
        with _BUILD_LOCK:
            return super().model_rebuild(
                force=force,
                raise_errors=raise_errors,
                _parent_namespace_depth=depth,
                _types_namespace=_types_namespace,
            )

    @classmethod
    def parse(cls, data: object, *, where: str = "") -> Self:
        """Validate a JSON-like value; LessonValidationError names the first bad field."""
        try:
            return cls.model_validate(data)
        except ValidationError as error:
            raise first_problem(error, where or cls.error_root, model=cls) from None

    @classmethod
    def parse_json(cls, text: str | bytes, *, where: str = "") -> Self:
        """Validate JSON text directly (faster than json.loads, then parse)."""
        try:
            return cls.model_validate_json(text)
        except ValidationError as error:
            raise first_problem(error, where or cls.error_root, model=cls) from None


class Verdict(Model):
    """A check's result: the problems it found; ``ok`` when there are none (the JSON form carries
    ``ok`` too, so a script need not count the problems)."""

    problems: tuple[str, ...]

    @computed_field(repr=False)  # type: ignore[prop-decorator]
    @property
    def ok(self) -> bool:
        return not self.problems


# One serializer per dataclass, built on its first use.
_ADAPTERS: dict[type, TypeAdapter[Any]] = {}


def dataclass_json(value: object) -> dict[str, Any]:
    """A dataclass's fields as JSON data, by pydantic's serializer over its annotations (tuples
    become lists, counters and other mappings dicts), so a plain dataclass needs no hand-written
    ``to_dict``. A field that is a mapping comes out sorted by key, so the data does not depend
    on the order its counts were made in."""
    kind = type(value)
    if kind not in _ADAPTERS:
        _ADAPTERS[kind] = TypeAdapter(kind)
    data: dict[str, Any] = _ADAPTERS[kind].dump_python(value, mode="json")
    return {
        name: dict(sorted(field.items())) if isinstance(field, dict) else field
        for name, field in data.items()
    }
