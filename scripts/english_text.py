"""Write attn's frozen English corpus, src/attn/book/texts/english.txt.gz, from CPython's pydoc_data.

    python3.11 -m scripts.english_text

The chapters and the trained checkpoints (src/attn/book/checkpoints) use this exact text, so it ships with
the package instead of being read from the running Python: pydoc_data.topics differs between Python
releases (3.12's has other topics). Run it only to replace the corpus on purpose; the checkpoints must
then be retrained (scripts/train_variants.py) and the chapters re-executed. tests/test_models.py
guards the shipped file's hash.
"""

from __future__ import annotations

import gzip
import pathlib
import re
import sys

OUT = pathlib.Path(__file__).resolve().parents[1] / "src" / "attn" / "book" / "texts" / "english.txt.gz"


def clean(topics: dict[str, str]) -> str:
    """The topics joined in key order, lower-cased; other characters become spaces; runs of spaces collapse."""
    text = " ".join(topics[k] for k in sorted(topics))
    text = re.sub(r"[^a-z0-9 .,;:'()\-\n]", " ", text.lower())
    return re.sub(r"\s+", " ", text)


def main() -> int:
    if sys.version_info[:2] != (3, 11):
        print(f"the shipped corpus comes from Python 3.11's pydoc_data; this is {sys.version.split()[0]}")
        return 2
    from pydoc_data.topics import topics

    OUT.write_bytes(gzip.compress(clean(topics).encode("ascii"), 9, mtime=0))  # mtime=0: same bytes each time
    print(f"wrote {OUT} ({OUT.stat().st_size:,} bytes)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
