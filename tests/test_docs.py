"""The README stays true: its generated tables are the code's (the dtypes from ringtypes,
the support matrix from ring.algorithms), every relative link of the README, docs/,
results/ and kernels/README.md names a file that exists, and the README stays a page (at most 200
lines)."""

import re
from pathlib import Path

import pytest

from ring.algorithms import BY_NAME
from ring.schedule import Collective
from ringtypes import DTYPES, FLOATING, REDUCIBLE

ROOT = Path(__file__).resolve().parent.parent
README = ROOT / "README.md"
PAGES = [README, ROOT / "kernels" / "README.md", *sorted((ROOT / "docs").glob("*.md")),
         *sorted((ROOT / "results").rglob("*.md"))]
EVERY = [c for c in Collective if c is not Collective.BARRIER]


def _table(name: str) -> list[list[str]]:
    text = README.read_text()
    body = re.search(rf"<!-- {name}:.*?-->\n(.*?)<!-- /{name} -->", text, re.S).group(1)
    rows = [[c.strip() for c in ln.strip("|").split("|")] for ln in body.strip().splitlines()]
    return rows


def test_the_dtype_table_is_ringtypes():
    want = [[d.name, "yes" if d in REDUCIBLE else "no", "yes" if d in FLOATING else "no", "yes"]
            for d in DTYPES]
    assert _table("dtypes")[2:] == want


def _where(alg, c: Collective) -> str:
    devices = [d for d in ("host", "cuda") if c in alg.serves[d]]
    return {2: "both", 1: devices[0] if devices else "-", 0: "-"}[len(devices)]


def test_the_support_matrix_is_the_registry():
    rows = _table("support")
    assert rows[0] == ["algorithm", *(c.label for c in EVERY)]
    assert rows[2:] == [[name, *(_where(alg, c) for c in EVERY)]
                        for name, alg in BY_NAME.items()]


def _links(page: Path) -> list[str]:
    text = re.sub(r"```.*?```", "", page.read_text(), flags=re.S)  # not inside code
    return [m for m in re.findall(r"\]\(([^)\s]+)\)", text)
            if not re.match(r"[a-z]+:", m) and not m.startswith("#")]


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_link_names_a_file_that_exists(page):
    missing = [link for link in _links(page)
               if not (page.parent / link.split("#")[0]).exists()]
    assert missing == []


def test_the_link_check_can_fail(tmp_path):
    page = tmp_path / "page.md"
    page.write_text("[a](here.md) [b](https://example.com) [c](#top)\n```\n[d](no.md)\n```\n")
    assert _links(page) == ["here.md"]


def test_the_readme_is_a_page():
    assert len(README.read_text().splitlines()) <= 200
