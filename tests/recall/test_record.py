from __future__ import annotations

import pytest

from active_memory.recall.record import record


@record
class Sample:
    """A sample record."""

    name: str
    size: int = 0
    tags: tuple[str, ...] = ()

    def __repr__(self) -> str:
        return f"Sample({self.name!r})"


def test_a_record_takes_its_fields_in_order_with_their_defaults() -> None:
    sample = Sample("a", tags=("x",))
    assert (sample.name, sample.size, sample.tags) == ("a", 0, ("x",))
    assert Sample("b", 3).size == 3


def test_a_record_refuses_what_its_fields_do_not_name() -> None:
    with pytest.raises(TypeError):
        Sample()  # type: ignore[call-arg]
    with pytest.raises(TypeError):
        Sample("a", colour="red")  # type: ignore[call-arg]
    with pytest.raises(AttributeError):
        Sample("a").colour = "red"  # type: ignore[attr-defined]


def test_a_record_keeps_its_class_s_own_repr_identity_and_docstring() -> None:
    assert repr(Sample("a")) == "Sample('a')"
    assert Sample("a") != Sample("a")
    assert Sample.__doc__ == "A sample record."
    assert vars(Sample)["__slots__"] == ("name", "size", "tags")
