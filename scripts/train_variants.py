"""Train the model-variants chapter's text models and store their checkpoints.

    PYTHONPATH=src python -m scripts.train_variants [bert gpt t5 bart t5_spans]

Each recipe (``attn.book.pretraining.RECIPES``) is trained from seed 0 on the CPU with one thread, then
stored as a float16 state dict (``src/attn/book/checkpoints/<name>.pt``) next to its training log
(``<name>.json``: the loss of every step, the processor time, the parameter count, the recipe and the
torch version). Re-running it reproduces the files on the same torch version and CPU.
"""

import json
import pathlib
import sys

import torch

from attn.book import pretraining

OUT = pathlib.Path(__file__).resolve().parent.parent / "src" / "attn" / "book" / "checkpoints"


def main(names: list[str]) -> None:
    torch.set_num_threads(1)
    OUT.mkdir(exist_ok=True)
    for name in names or sorted(pretraining.RECIPES):
        model, log = pretraining.train_recipe(name)
        torch.save(model.half().state_dict(), OUT / f"{name}.pt")
        (OUT / f"{name}.json").write_text(json.dumps(log) + "\n", encoding="utf-8")
        print(f"{name}: {log['parameters']} parameters, {log['recipe']['steps']} steps, {log['seconds']} s, "
              f"last loss {log['losses'][-1]}")


if __name__ == "__main__":
    main(sys.argv[1:])
