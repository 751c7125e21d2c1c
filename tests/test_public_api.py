import active_memory


def test_every_public_name_is_exported_and_resolves() -> None:
    for name in active_memory.__all__:
        assert hasattr(active_memory, name), name
    assert sorted(active_memory.__all__) == active_memory.__all__


def test_public_names_come_from_private_modules_not_redefined() -> None:
    assert active_memory.Lesson.__module__ == "active_memory.lessons"
    assert active_memory.RevisionConflict.__module__ == "active_memory.errors"
