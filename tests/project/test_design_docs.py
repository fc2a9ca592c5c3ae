"""The design contracts live in docs/design/, and the tree cites nothing outside itself."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest
from conftest import REPO_ROOT

ROOT = REPO_ROOT
DESIGN = ROOT / "docs" / "design"
# The founding documents' old names: every citation now points into docs/design/.
OLD_NAMES = re.compile(r"CORE_SPEC|TOOLFLOW_SPEC|RECEIVER_SPEC|ARCHITECTURE\.md|shared/design")


def tracked_text_files() -> list[Path]:
    try:
        out = subprocess.run(
            ["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, check=True
        ).stdout
    except (OSError, subprocess.CalledProcessError):
        pytest.skip("not a git checkout")
    files = []
    for name in out.decode().split("\0"):
        path = ROOT / name
        if name and path.is_file():
            try:
                path.read_text()
            except UnicodeDecodeError:
                continue
            files.append(path)
    return files


def test_design_contracts_exist() -> None:
    for name, sections in {
        "core.md": ["## 1. User", "## 2. TX path", "## 3. RX path", "## 4. Control", "## 5. DCMAC"],
        "toolflow.md": ["## jasper:", "## The YellowBlock API", "## The .fpg file"],
        "receiver.md": ["## Sources", "## Placement and accounting", "## GPU delivery"],
        "architecture.md": [
            "## Data flow",
            "## Packages",
            "## Repository layout",
            "## Single sources of truth",
        ],
        "scaleout.md": ["## Topology", "## Switch settings", "## Sizing", "## The capture cluster"],
    }.items():
        text = (DESIGN / name).read_text()
        for heading in sections:
            assert heading in text, f"docs/design/{name} lacks {heading!r}"


def test_no_citation_of_documents_outside_the_repository() -> None:
    this = Path(__file__).resolve()
    bad = []
    for path in tracked_text_files():
        if path == this:
            continue
        for number, line in enumerate(path.read_text().splitlines(), 1):
            if OLD_NAMES.search(line):
                bad.append(f"{path.relative_to(ROOT)}:{number}: {line.strip()[:100]}")
    assert bad == []


def test_design_references_name_existing_sections() -> None:
    """`core.md §n` citations name a section that exists."""
    core = (DESIGN / "core.md").read_text()
    have = set(re.findall(r"^## (\d+)\.", core, flags=re.M))
    cited = set()
    for path in tracked_text_files():
        cited.update(re.findall(r"core\.md §(\d+)", path.read_text()))
    assert cited, "nothing cites docs/design/core.md by section"
    assert cited <= have, f"cited sections {sorted(cited - have)} are not in core.md"


# A merge's conflict markers, at the start of a line (seven of one character, then a space
# or the line's end for the middle one).
CONFLICT = re.compile(r"^(<{7} |={7}$|>{7} )", re.MULTILINE)


def test_no_file_keeps_a_merge_conflict() -> None:
    left = [
        f"{p.relative_to(ROOT)}:{p.read_text()[: m.start()].count(chr(10)) + 1}"
        for p in tracked_text_files()
        for m in [CONFLICT.search(p.read_text())]
        if m
    ]
    assert not left, f"merge conflict markers in: {left}"
