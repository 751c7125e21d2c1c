"""Every shell and Python block of the pages is run by a test or says, visibly, why it is not;
every tag names a block some test claims. Checked without running a block."""

from __future__ import annotations

import importlib
from collections.abc import Collection, Iterable
from pathlib import Path

import pytest

from docs import pages
from docs.pages import DATA, PAGES, PYTHON, ROOT, SHELL, Block, blocks, parse

HERE = Path(__file__).parent


def claims() -> set[tuple[str, str, str]]:
    """What the tests claim: importing their modules runs their `claim` calls."""
    for module in sorted(HERE.glob("*.py")):
        if module.stem != "__init__":
            importlib.import_module(f"docs.{module.stem}")
    return pages.CLAIMS


def problems(found: Iterable[Block], claimed: Collection[tuple[str, str, str]]) -> list[str]:
    """Why each block is not accounted for: unlabelled, unclaimed, or neither run nor marked."""
    seen: set[tuple[str | None, str | None]] = set()
    wrong: list[str] = []
    for block in found:
        if block.lang not in SHELL | PYTHON | DATA:
            wrong.append(f"{block.where}: fence language {block.lang!r}; use one of "
                         f"{sorted(SHELL | PYTHON | DATA)}")  # fmt: skip
        if block.name is not None:
            if (block.kind, block.name) in seen:
                wrong.append(f"{block.where}: a second block with this tag")
            seen.add((block.kind, block.name))
            if (block.page, block.kind, block.name) not in claimed:
                wrong.append(f"{block.where}: tagged, but no test claims it")
        runnable = block.lang in SHELL | PYTHON
        if runnable and block.kind != "example" and block.not_run is None:
            wrong.append(f"{block.where}: a {block.lang} block neither run by a test (tag it "
                         "<!-- example: NAME --> and claim it) nor marked '*Not run by the "
                         "tests: <why>.*'")  # fmt: skip
        if block.not_run is not None and not runnable:
            wrong.append(f"{block.where}: a 'Not run' marker on a {block.lang} block, which "
                         "nothing would run")  # fmt: skip
    return wrong


def test_the_pages_are_the_readme_and_every_docs_page() -> None:
    on_disk = {"README.md"} | {f"docs/{page.name}" for page in (ROOT / "docs").glob("*.md")}
    assert set(PAGES) == on_disk


@pytest.mark.parametrize("page", PAGES)
def test_every_block_is_run_by_a_test_or_marked_not_run(page: str) -> None:
    wrong = problems(blocks(page), claims())
    assert not wrong, "\n".join(wrong)


def test_every_claim_names_a_tagged_block() -> None:
    tagged = {(b.page, b.kind, b.name) for page in PAGES for b in blocks(page) if b.name}
    assert claims() - tagged == set()


SAMPLE = """\
<!-- example: ran -->
```bash
true
```

*Not run by the tests: needs a Claude login
and an API key.*

```python
login()
```

```sh
unaccounted
```

<!-- example: dead -->
```console
$ true
```

```yaml
a: 1
```
"""


def test_the_check_names_each_unaccounted_block() -> None:
    found = parse("sample.md", SAMPLE)
    assert [b.not_run for b in found] == [None, "needs a Claude login and an API key.", None, None,
                                          None]  # fmt: skip
    assert problems(found, {("sample.md", "example", "ran")}) == [
        "sample.md:13: a sh block neither run by a test (tag it <!-- example: NAME --> and claim "
        "it) nor marked '*Not run by the tests: <why>.*'",
        "sample.md:18 (example: dead): tagged, but no test claims it",
        "sample.md:22: fence language 'yaml'; use one of ['bash', 'console', 'json', 'markdown', "
        "'python', 'sh', 'text']",
    ]


def test_an_unclosed_fence_is_an_error() -> None:
    with pytest.raises(pages.PageError, match=r"sample\.md:2: a fence that is never closed"):
        parse("sample.md", "text\n```bash\ntrue\n")


def test_claiming_a_tag_the_page_lacks_is_an_error() -> None:
    with pytest.raises(pages.PageError, match=r"0 blocks are tagged <!-- example: nowhere -->"):
        pages.claim("README.md", "nowhere")
