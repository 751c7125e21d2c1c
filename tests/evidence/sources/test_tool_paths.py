from __future__ import annotations

import pytest

from active_memory.evidence.sources.tool_paths import argument_paths, patch_paths, shell_paths

CWD = "/home/dev/app"


def test_patch_headers_name_every_file_added_updated_deleted_or_moved() -> None:
    patch = (
        "*** Begin Patch\n*** Update File: src/a.py\n*** Move to: src/b.py\n"
        "*** Add File: /home/dev/app/docs/new.md\n*** Delete File: old.txt\n*** End Patch"
    )
    assert patch_paths(patch, CWD) == ["src/a.py", "src/b.py", "docs/new.md", "old.txt"]


@pytest.mark.parametrize(
    ("command", "paths"),
    [
        (["bash", "-lc", "sed -n '1,80p' src/app.py | head"], ["src/app.py"]),
        (["cat", "/home/dev/app/README.md"], ["README.md"]),
        ("rg -n timeout src/ && pytest -q tests/test_x.py", ["src", "tests/test_x.py"]),
        (["bash", "-lc", "echo 'unbalanced"], []),
        ("curl -s https://example.com/x.json > out.json", ["out.json"]),
        ("FOO=1 make build", []),
    ],
)
def test_shell_operands_that_look_like_paths_are_kept(command: object, paths: list[str]) -> None:
    assert shell_paths(command, CWD) == paths


def test_apply_patch_through_shell_argv_yields_the_patch_headers() -> None:
    argv = ["apply_patch", "*** Begin Patch\n*** Update File: tests/conftest.py\n*** End Patch"]
    assert shell_paths(argv, CWD) == ["tests/conftest.py"]


def test_argument_paths_use_the_call_workdir_and_never_values_of_other_keys() -> None:
    arguments = {"path": "/srv/other/x.py", "workdir": "/srv/other", "content": "secret.py",
                 "command": "cat lib/y.py"}  # fmt: skip
    assert argument_paths(arguments, CWD) == ["x.py", "lib/y.py"]
