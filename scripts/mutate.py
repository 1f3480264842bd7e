"""Mutation testing of the core of ``attn`` with mutmut: how much of the code the quick tests pin down.

    python -m scripts.mutate                       # every core module (make mutate)
    python -m scripts.mutate functional masks      # some of them
    python -m scripts.mutate --summary             # only print the counts of the last runs
    python -m scripts.mutate --again masks         # re-run only the survivors, with the tests as they are now

mutmut changes one operator, constant, comparison or keyword of a module at a time (a *mutant*) and
runs the tests; a mutant that no test notices *survived*. Each module is run in its own folder
(``build/mutate/<module>/``) driven only by the quick unit tests of that module (``-m "not slow"``),
so a run stays bounded on a small machine; within it mutmut runs, for each mutant, only the tests
that execute the mutated function. Not part of CI (minutes of CPU per module).

The survivors are listed with ``cd build/mutate/<module> && mutmut results`` and shown with
``mutmut show <name>``.
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
    "blocks": ("blocks.py", ["tests/test_blocks.py", "tests/test_bad_inputs.py"]),
    "tiled": ("efficient/tiled.py", ["tests/test_efficient.py", "-k", "not measured"]),  # measured: reads book/
}

PYPROJECT = """\
[tool.pytest.ini_options]
testpaths = ["tests"]
pythonpath = ["."]
addopts = "-p no:cacheprovider"
markers = ["slow: not a quick unit test", "site: -", "browser: -", "fresh_env: -"]

[tool.mutmut]
source_paths = ["src"]
only_mutate = ["src/attn/{file}"]
pytest_add_cli_args_test_selection = {tests}
"""


def prepare(name: str) -> pathlib.Path:
    """A folder with the package, the module's tests and a mutmut configuration for that module."""
    file, tests = CORE[name]
    work = WORK / name
    if work.exists():
        shutil.rmtree(work)
    (work / "tests").mkdir(parents=True)
    shutil.copytree(ROOT / "src", work / "src", ignore=shutil.ignore_patterns("__pycache__", "*.egg-info"))
    shutil.copytree(ROOT / "scripts", work / "scripts", ignore=shutil.ignore_patterns("__pycache__"))  # conftest's
    shutil.copy2(ROOT / "tests" / "conftest.py", work / "tests" / "conftest.py")
    for t in (t for t in tests if t.startswith("tests/")):
        shutil.copy2(ROOT / t, work / t)
    selection = json.dumps([*tests, "-m", "not slow"])
    (work / "pyproject.toml").write_text(PYPROJECT.format(file=file, tests=selection))
    return work


def survivors(name: str) -> list[str]:
    work = WORK / name
    out = subprocess.run([sys.executable, "-m", "mutmut", "results"], cwd=work, capture_output=True, text=True,
                         check=True).stdout
    return [line.split(":")[0].strip() for line in out.splitlines() if line.strip().endswith(": survived")]


def refresh_tests(name: str) -> None:
    """Copy the module's tests as they are now into its folder (the source must be unchanged)."""
    work = WORK / name
    for t in ["tests/conftest.py", *(t for t in CORE[name][1] if t.startswith("tests/"))]:
        shutil.copy2(ROOT / t, work / t)
        shutil.copy2(ROOT / t, work / "mutants" / t)
    original = (ROOT / "src" / "attn" / CORE[name][0]).read_text()
    if (work / "src" / "attn" / CORE[name][0]).read_text() != original:
        raise SystemExit(f"src/attn/{CORE[name][0]} changed since the last run: run it in full")


def summary(name: str) -> dict[str, int]:
    """Counts of the last run of ``name``, from ``mutmut results --all true``."""
    work = WORK / name
    if not (work / "mutants").exists():
        return {}
    out = subprocess.run([sys.executable, "-m", "mutmut", "results", "--all", "true"], cwd=work,
                         capture_output=True, text=True, check=True).stdout
    counts: dict[str, int] = {}
    for line in out.splitlines():
        if ":" in line and "__mutmut_" in line:
            status = line.rsplit(":", 1)[1].strip()
            counts[status] = counts.get(status, 0) + 1
    counts["made"] = sum(counts.values())
    return counts


def main(argv: list[str]) -> int:
    only_summary = "--summary" in argv
    again = "--again" in argv
    names = [a for a in argv if not a.startswith("--")] or list(CORE)
    unknown = sorted(set(names) - set(CORE))
    if unknown:
        print(f"unknown module(s) {unknown}; choose from {sorted(CORE)}", file=sys.stderr)
        return 2
    env = dict(os.environ, PYTHONPATH="", TQDM_DISABLE="1", OMP_NUM_THREADS="1")
    for name in names:
        if again:
            refresh_tests(name)
            names_left = survivors(name)
            print(f"== {name}: re-running {len(names_left)} survivors", flush=True)
            if names_left:
                subprocess.run([sys.executable, "-m", "mutmut", "run", "--max-children", "2", *names_left],
                               cwd=WORK / name, env=env, check=False)
        elif not only_summary:
            work = prepare(name)
            print(f"== {name}: mutmut run in {work.relative_to(ROOT)}", flush=True)
            subprocess.run([sys.executable, "-m", "mutmut", "run", "--max-children", "2"], cwd=work, env=env, check=False)
        print(f"== {name}: {json.dumps(summary(name), sort_keys=True)}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
