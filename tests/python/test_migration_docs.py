"""docs/migration.md: every ```python unigrad block runs, and every `## ` section shows unigrad
in both Python and C++ (the ```cpp unigrad blocks run as MigrationDocs.* in ug_tests)."""
from pathlib import Path

import pytest

DOC = Path(__file__).resolve().parents[2] / "docs" / "migration.md"


def parse(path):
    """The doc's `## ` sections and its fenced blocks as (section, heading, info, code), where
    heading is the nearest heading of any level above the block."""
    sections, blocks = [], []
    section = heading = "(before the first section)"
    fence, code = None, []
    for line in path.read_text(encoding="utf-8").splitlines(keepends=True):
        stripped = line.rstrip("\n")
        if fence is None:
            if stripped.startswith("```"):
                fence, code = stripped[3:].strip(), []
            elif stripped.startswith("## "):
                section = heading = stripped[3:].strip()
                sections.append(section)
            elif stripped.startswith("#"):
                title = stripped.lstrip("#").strip()
                heading = f"{section} / {title}" if sections else title
        elif stripped.startswith("```"):
            blocks.append((section, heading, fence, "".join(code)))
            fence = None
        else:
            code.append(line)
    assert fence is None, f"{path.name}: a ``` block is not closed"
    return sections, blocks


SECTIONS, BLOCKS = parse(DOC)


def python_blocks():
    cases, seen = [], {}
    for _, heading, info, code in BLOCKS:
        if info == "python unigrad":
            seen[heading] = seen.get(heading, 0) + 1
            cases.append(pytest.param(heading, code, id=f"{heading} #{seen[heading]}"))
    return cases


@pytest.mark.parametrize("heading, code", python_blocks())
def test_python_snippet_runs(heading, code):
    try:
        exec(compile(code, f"{DOC.name}: {heading}", "exec"), {"__name__": "__migration_doc__"})
    except Exception as e:
        pytest.fail(f"the ```python unigrad block under '{heading}' fails: {type(e).__name__}: {e}")


def test_every_section_has_python_and_cpp():
    assert SECTIONS, f"{DOC.name} has no `## ` sections"
    for section in SECTIONS:
        infos = {info for s, _, info, _ in BLOCKS if s == section}
        assert "python unigrad" in infos, f"section '{section}' has no ```python unigrad block"
        assert "cpp unigrad" in infos, f"section '{section}' has no ```cpp unigrad block"
