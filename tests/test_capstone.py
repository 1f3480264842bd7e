"""The capstone chapter, book/build_it_yourself.ipynb, as an exercise.

(a) Its exercise edition (reader/exercises/, answers left out) run as a reader first meets it: the
first checker, called on the unfilled scaffold, says which step is not written yet instead of
raising. (b) Every answer cell (tagged "solution") sits between its scaffold, which raises
NotImplementedError and defines the same name, and a checker. (c) The numbers the chapter claims:
the loss at initialisation near ln |V|, one batch overfitted, the reader's GPT at least 0.3 nats
below the bigram over the seeds, the shipped model's weights below that.
"""

import json
import math
import pathlib
import re
import shutil

import nbformat
import pytest

from scripts import reader

ROOT = pathlib.Path(__file__).resolve().parents[1]
CHAPTER = ROOT / "book" / "build_it_yourself.ipynb"
EXERCISE = ROOT / "reader" / "exercises" / "build_it_yourself.ipynb"
CHECKER = re.compile(r"book\.exercises\.check_\w+\(")


def _code(path):
    return [c for c in nbformat.read(path, as_version=4).cells if c.cell_type == "code"]


def _defined(source: str) -> set[str]:
    return set(re.findall(r"^(?:def|class) (\w+)", source, re.M))


@pytest.mark.slow
def test_the_exercise_edition_first_checker_says_step_1_is_not_written_yet(tmp_path):
    from nbclient import NotebookClient

    nb = nbformat.read(EXERCISE, as_version=4)
    first = next(i for i, c in enumerate(nb.cells) if c.cell_type == "code" and CHECKER.search(c.source))
    nb.cells = nb.cells[: first + 1]
    shutil.copy(EXERCISE, tmp_path / EXERCISE.name)  # run where a reader would: not in the repository
    NotebookClient(nb, timeout=60, kernel_name="python3", resources={"metadata": {"path": str(tmp_path)}}).execute()
    outputs = nb.cells[first].outputs
    assert [o.output_type for o in outputs] == ["execute_result"], "the checker must not raise"
    text = outputs[0].data["text/plain"]
    assert text == ("scaled dot-product attention: not yet. step 1 is not written yet: `attention` raises "
                    "NotImplementedError; fill in its body above"), text


def test_the_exercise_edition_has_every_scaffold_and_checker_and_no_answer_or_output():
    book_code, exercise_code = _code(CHAPTER), _code(EXERCISE)
    answers = [c for c in book_code if reader.SOLUTION_TAG in c.metadata.get("tags", [])]
    assert len(exercise_code) == len(book_code) - len(answers)
    assert all(not c.outputs for c in exercise_code)
    assert sum("raise NotImplementedError" in c.source for c in exercise_code) == len(answers)


def test_every_answer_sits_between_its_scaffold_and_a_checker():
    code = _code(CHAPTER)
    answers = [i for i, c in enumerate(code) if reader.SOLUTION_TAG in c.metadata.get("tags", [])]
    assert len(answers) == 6, "steps 1 to 5 (3: LayerNorm) and 7 (the KV cache) are exercises"
    for i in answers:
        answer, scaffold, checker = code[i], code[i - 1], code[i + 1]
        assert set(answer.metadata["tags"]) == {"solution", "hide-input"}, answer.id
        assert reader.SOLUTION_TAG not in scaffold.metadata.get("tags", []), scaffold.id
        assert re.search(r'raise NotImplementedError\("step \d: ', scaffold.source), scaffold.id
        assert "NotImplementedError" not in answer.source, answer.id
        assert _defined(scaffold.source) == _defined(answer.source) != set(), (scaffold.id, answer.id)
        assert CHECKER.search(checker.source) and len(checker.source.splitlines()) <= 2, checker.id
        assert not set(checker.metadata.get("tags", [])) & {"remove-cell", "remove-input", "hide-input"}, checker.id
        verdicts = [o.data.get("text/plain", "") for o in checker.outputs if o.output_type == "execute_result"]
        assert verdicts and ": correct (" in verdicts[0], (checker.id, verdicts)


def test_the_capstone_numbers_hold():
    values = {k: float(str(v).replace(",", "")) for k, v in reader.glued_values(nbformat.read(CHAPTER, 4)).items()
              if re.fullmatch(r"-?[\d,]+(\.\d+)?", str(v))}
    assert abs(values["init_loss"] - math.log(values["vocab_size"])) < 0.1
    assert values["uniform"] == round(math.log(values["vocab_size"]), 2)
    assert values["overfit_loss"] < 0.2
    assert values["val_mean"] <= values["bigram"] - 0.3 + 0.005, "the reader's GPT beats the bigram by 0.3 nats"
    assert values["val_min"] <= values["val_mean"] <= values["val_max"]
    assert values["shipped_loss"] < values["val_mean"] < values["bigram"] < values["unigram"] < values["uniform"]
    assert values["seconds"] <= 20, "training per seed stays within the budget (about 10 s on an idle core)"


def test_the_exercise_edition_links_back_and_the_reader_edition_links_to_it():
    ex = json.loads(EXERCISE.read_text())
    assert "colab.research.google.com" in "".join(ex["cells"][0]["source"])
    book_edition = json.loads((ROOT / "reader" / "book" / "build_it_yourself.ipynb").read_text())
    assert "reader/exercises/build_it_yourself.ipynb" in "".join(book_edition["cells"][0]["source"])
