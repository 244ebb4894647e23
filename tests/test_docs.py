"""The README's dtype table is the code's: ringtypes lists the dtypes once, and the table
must name the same ones, in the same order, with the same abilities."""

import re
from pathlib import Path

from ringtypes import DTYPES, FLOATING, REDUCIBLE

README = Path(__file__).resolve().parent.parent / "README.md"


def _table() -> list[list[str]]:
    text = README.read_text()
    body = re.search(r"<!-- dtypes:.*?-->\n(.*?)<!-- /dtypes -->", text, re.S).group(1)
    rows = [[c.strip() for c in ln.strip("|").split("|")] for ln in body.strip().splitlines()]
    return rows[2:]  # past the header and the rule


def test_the_dtype_table_is_ringtypes():
    want = [[d.name, "yes" if d in REDUCIBLE else "no", "yes" if d in FLOATING else "no", "yes"]
            for d in DTYPES]
    assert _table() == want
