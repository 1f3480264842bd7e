"""How much a reader meets on each chapter's main path: words of prose and lines of visible code,
outside the optional sections (a heading labelled ``(<name>-deeper)=``, folded on the site) and
outside cells the site hides.

    python -m scripts.main_path [book/x.ipynb ...]        # every chapter in _toc.yml by default
    python -m scripts.main_path --rev 07b74eb             # the same, for the chapters at a commit
"""

from __future__ import annotations

import json
import re
import subprocess
import sys

from scripts.notebooks import ROOT, chapters
from scripts.reader import HIDDEN_TAGS

HEADING = re.compile(r"^(#{1,6})\s", re.M)
DEEPER = re.compile(r"^\([\w.-]+-deeper\)=\s*$", re.M)
WORD = re.compile(r"[A-Za-z0-9_]+(?:['’-][A-Za-z0-9_]+)*|[\u4e00-\u9fff]")


def count(nb: dict) -> dict[str, int]:
    """Main-path words and visible code lines, and the same inside optional sections."""
    out = {"words": 0, "code": 0, "deeper_words": 0, "deeper_code": 0}
    deeper_level = None  # the heading level of the optional section we are in
    for cell in nb["cells"]:
        text = "".join(cell["source"])
        if cell["cell_type"] == "markdown":
            lines = text.splitlines()
            for i, line in enumerate(lines):
                m = HEADING.match(line)
                if m:
                    level = len(m.group(1))
                    labelled = i > 0 and DEEPER.match(lines[i - 1])
                    if labelled:
                        deeper_level = level
                    elif deeper_level is not None and level <= deeper_level:
                        deeper_level = None
                if DEEPER.match(line):
                    continue
                n = len(WORD.findall(re.sub(r"\{[\w:-]+\}`[^`]*`", "x", line)))
                out["deeper_words" if deeper_level else "words"] += n
        elif cell["cell_type"] == "code" and not HIDDEN_TAGS & set(cell.get("metadata", {}).get("tags", [])):
            n = sum(1 for line in text.splitlines() if line.strip())
            out["deeper_code" if deeper_level else "code"] += n
    return out


def main(argv: list[str]) -> int:
    rev = None
    if argv[:1] == ["--rev"]:
        rev, argv = argv[1], argv[2:]
    paths = [ROOT / a for a in argv] or chapters()
    print(f"{'chapter':28} {'words':>6} {'code':>5} {'deeper words':>13} {'deeper code':>12}")
    for path in paths:
        rel = path.relative_to(ROOT).as_posix()
        if rev:
            shown = subprocess.run(["git", "show", f"{rev}:{rel}"], cwd=ROOT, capture_output=True, text=True)
            if shown.returncode:
                continue
            nb = json.loads(shown.stdout)
        else:
            nb = json.loads(path.read_text(encoding="utf-8"))
        c = count(nb)
        print(f"{path.stem:28} {c['words']:6} {c['code']:5} {c['deeper_words']:13} {c['deeper_code']:12}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
