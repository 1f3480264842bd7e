"""Mutation testing of the core of ``attn`` with mutmut: how much of the code the quick tests pin down.

    python -m scripts.mutate                       # every core module (make mutate)
    python -m scripts.mutate functional masks      # some of them
    python -m scripts.mutate --summary             # only print the counts of the last runs
    python -m scripts.mutate --again masks         # re-run only the survivors, with the tests as they are now

mutmut changes one operator, constant, comparison or keyword of a module at a time (a *mutant*) and
runs the tests; a mutant that no test notices *survived*. Each core module is run against its own
quick tests (``-m "not slow"``), so a run stays bounded on a small machine and says what that
module's tests pin down; within it mutmut runs, for each mutant, only the tests that execute the
mutated function. Not part of CI (minutes of CPU per module).

mutmut reads its configuration (``[tool.mutmut]``) from the ``pyproject.toml`` of the folder it runs
in, and the tests of a run only from there (a mutant-name pattern on the command line narrows the
mutants, not the tests). So each module has a folder, ``build/mutate/<module>/``, with that
configuration and links to ``src/`` and ``tests/``; mutmut copies them into its ``mutants/`` folder
itself (the tests again at every run, a module again when it changed). The survivors are listed
with ``cd build/mutate/<module> && ../../../.venv/bin/mutmut results`` and shown with
``mutmut show <name>`` (or ``mutmut browse``).
"""

from __future__ import annotations

import json
import os
import pathlib
import shutil
import subprocess
import sys

ROOT = pathlib.Path(__file__).resolve().parents[1]
WORK = ROOT / "build" / "mutate"

#: module (file under src/attn) -> the quick tests that drive its mutants
CORE = {
    "functional": ("functional.py", ["tests/test_functional.py"]),
    "masks": ("masks.py", ["tests/test_masks.py"]),
    "attention": ("attention.py", ["tests/test_attention.py", "tests/test_kv_cache.py", "tests/test_bad_inputs.py"]),
    "positional": ("positional.py", ["tests/test_positional.py"]),
    "generation": ("generation.py", ["tests/test_generation.py", "tests/test_kv_cache.py", "tests/test_bad_inputs.py"]),
    "tiled": ("efficient/tiled.py", ["tests/test_efficient.py"]),
}

CONFIG = """\
# Written by scripts/mutate.py: mutmut's configuration for src/attn/{file}.
[tool.mutmut]
source_paths = ["src"]
only_mutate = ["src/attn/{file}"]
pytest_add_cli_args_test_selection = {tests}

[tool.pytest.ini_options]
addopts = "-p no:cacheprovider"
markers = ["slow", "site", "browser", "fresh_env"]
"""


def prepare(name: str) -> pathlib.Path:
    """The module's folder: its mutmut configuration, and links to the package and the tests."""
    file, tests = CORE[name]
    work = WORK / name
    work.mkdir(parents=True, exist_ok=True)
    for folder in ("src", "tests"):
        if not (work / folder).is_symlink():
            shutil.rmtree(work / folder, ignore_errors=True)  # a copy, from before mutmut copied them itself
            (work / folder).symlink_to(ROOT / folder, target_is_directory=True)
    (work / "pyproject.toml").write_text(CONFIG.format(file=file, tests=json.dumps([*tests, "-m", "not slow"])))
    return work


def mutmut(name: str, *args: str, **kw) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONPATH="", TQDM_DISABLE="1", OMP_NUM_THREADS="1")
    return subprocess.run([sys.executable, "-m", "mutmut", *args], cwd=WORK / name, env=env, text=True, **kw)


def survivors(name: str) -> list[str]:
    if not (WORK / name / "mutants").exists():
        return []
    out = mutmut(name, "results", capture_output=True, check=True).stdout
    return [line.split(":")[0].strip() for line in out.splitlines() if line.strip().endswith(": survived")]


def summary(name: str) -> dict[str, int]:
    """Counts of the last run of ``name``, as mutmut exports them (``mutmut export-cicd-stats``)."""
    if not (WORK / name / "mutants").exists():
        return {}
    mutmut(name, "export-cicd-stats", capture_output=True, check=True)
    counts = json.loads((WORK / name / "mutants" / "mutmut-cicd-stats.json").read_text())
    return {k: v for k, v in counts.items() if v}


def main(argv: list[str]) -> int:
    names = [a for a in argv if not a.startswith("--")] or list(CORE)
    unknown = sorted(set(names) - set(CORE))
    if unknown:
        print(f"unknown module(s) {unknown}; choose from {sorted(CORE)}", file=sys.stderr)
        return 2
    for name in names:
        if "--summary" not in argv:
            prepare(name)
            left = survivors(name) if "--again" in argv else []
            print(f"== {name}: mutmut run in {(WORK / name).relative_to(ROOT)}"
                  + (f", the {len(left)} survivors" if "--again" in argv else ""), flush=True)
            if "--again" not in argv:  # a full run starts clean: mutmut would reuse results from older code
                shutil.rmtree(WORK / name / "mutants", ignore_errors=True)
            if left or "--again" not in argv:
                mutmut(name, "run", "--max-children", "2", *left)
        print(f"== {name}: {json.dumps(summary(name), sort_keys=True)}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
