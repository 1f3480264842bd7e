"""The GitHub workflows cannot run here: their syntax is checked against GitHub's workflow schema
(check-jsonschema's vendored copy, offline), and the test matrix against what it must cover."""

import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

CHECK = Path(sys.executable).parent / "check-jsonschema"


def _check(*files: Path) -> subprocess.CompletedProcess:
    exe = str(CHECK) if CHECK.exists() else shutil.which("check-jsonschema")
    if exe is None:
        pytest.fail("check-jsonschema is missing: run `make setup` (pinned in requirements.txt)")
    return subprocess.run([exe, "--builtin-schema", "vendor.github-workflows", *map(str, files)],
                          capture_output=True, text=True, timeout=120)


def test_every_workflow_is_valid_against_the_github_workflow_schema(root):
    files = sorted((root / ".github" / "workflows").glob("*.yml"))
    assert {f.name for f in files} >= {"pages.yml", "test.yml"}
    proc = _check(*files)
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_the_schema_check_rejects_a_broken_workflow(root, tmp_path):
    wf = yaml.safe_load((root / ".github/workflows/test.yml").read_text())
    wf["jobs"]["test"]["steps"][0] = {"uses": "actions/checkout@v4", "run": "both is invalid"}
    del wf["jobs"]["test"]["runs-on"]
    broken = tmp_path / "broken.yml"
    broken.write_text(yaml.safe_dump(wf))
    proc = _check(broken)
    assert proc.returncode != 0 and "runs-on" in proc.stdout + proc.stderr


def test_the_matrix_runs_the_readme_test_command_on_linux_and_macos_arm_python_311_312_lock_and_newest(root):
    job = yaml.safe_load((root / ".github/workflows/test.yml").read_text())["jobs"]["test"]
    matrix = job["strategy"]["matrix"]
    assert any(o.startswith("ubuntu") for o in matrix["os"]) and "macos-14" in matrix["os"]  # macos-14: arm64
    assert matrix["python"] == ["3.11", "3.12"]
    assert matrix["versions"] == ["lock", "newest"]
    runs = [s.get("run", "") for s in job["steps"]]
    assert "make test PYTHON=python" in runs
    assert "make test" in (root / "README.md").read_text()
    upgrade = next(s for s in job["steps"] if s.get("if") == "matrix.versions == 'newest'")
    assert "--upgrade torch numpy transformers" in upgrade["run"]
