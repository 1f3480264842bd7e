"""Export the trained GPT checkpoint as the JSON the explorers' front end (``_nn.js``) runs.

    PYTHONPATH=src python -m scripts.export_weights [OUT_DIR]

Writes ``OUT_DIR/gpt.model.json`` (default: ``_build/weights``, not committed: an explorer calls
``attn.book.widgets.checkpoint_state`` and carries the same JSON in its widget state) and prints its size
raw and gzip-compressed, in float16 (what the checkpoint stores) and float32 for comparison.
"""

import gzip
import json
import pathlib
import sys

from attn.book.widgets import checkpoint_state

ROOT = pathlib.Path(__file__).resolve().parent.parent


def sizes(state: dict) -> tuple[int, int]:
    """(raw, gzip) bytes of ``state`` as compact JSON (gzip level 9, as a static host would send it)."""
    raw = json.dumps(state, separators=(",", ":")).encode("utf-8")
    return len(raw), len(gzip.compress(raw, 9, mtime=0))


def main(out: pathlib.Path) -> None:
    out.mkdir(parents=True, exist_ok=True)
    state = checkpoint_state("gpt")
    (out / "gpt.model.json").write_text(json.dumps(state, separators=(",", ":")), encoding="utf-8")
    for dtype in ("float16", "float32"):
        raw, gz = sizes(state if dtype == "float16" else checkpoint_state("gpt", dtype=dtype))
        print(f"gpt {dtype}: {raw / 1024:.1f} KiB raw, {gz / 1024:.1f} KiB gzip")
    print(f"wrote {out / 'gpt.model.json'}")


if __name__ == "__main__":
    main(pathlib.Path(sys.argv[1]) if len(sys.argv) > 1 else ROOT / "_build" / "weights")
