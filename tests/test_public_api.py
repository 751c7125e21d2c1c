import subprocess
import sys

import pytest

import active_memory


def test_every_public_name_is_exported_and_resolves() -> None:
    for name in active_memory.__all__:
        assert getattr(active_memory, name) is not None, name
    assert len(set(active_memory.__all__)) == len(active_memory.__all__)


def test_public_names_come_from_private_modules_not_redefined() -> None:
    assert active_memory.Lesson.__module__ == "active_memory.models.lessons"
    assert active_memory.RevisionConflict.__module__ == "active_memory.errors"
    assert active_memory.Session.__module__ == "active_memory.agents.tool_loop"


def test_unknown_attribute_is_an_attribute_error() -> None:
    with pytest.raises(AttributeError, match="NoSuchThing"):
        _ = active_memory.NoSuchThing


def test_importing_the_package_loads_no_third_party_library() -> None:
    # The hook helper's store fallback imports the package on every tool call.
    code = (
        "import sys, active_memory; "
        "heavy = {'jsonschema', 'tenacity', 'git', 'click', 'anthropic', 'openai', 'httpx2'}; "
        "print(sorted(heavy & {m.split('.')[0] for m in sys.modules}))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_the_hook_console_script_loads_no_other_module_of_the_package() -> None:
    # `active-memory-hook` imports the package first: it must not pull recall, store or agents.
    code = (
        "import sys, active_memory.hooks.helper; "
        "print(sorted(m for m in sys.modules if m.startswith('active_memory')))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == str(
        ["active_memory", "active_memory.hooks", "active_memory.hooks.helper"]
    )
