"""pip's package indexes, find-links folders and constraint files, printed as uv options.

    uv pip install $(python -m scripts.uv_args) -r requirements.txt

`make setup` and scripts/fresh_env.py install with uv (pinned in requirements.txt): it unpacks each
package once into its cache and links it from there. uv does not read pip's configuration; this
reads it (`pip config list`: pip's config files and PIP_* variables) so that uv installs from
where `pip install` would. Standard library only: it runs before anything is installed.
"""

from __future__ import annotations

import subprocess
import sys


def pip_index_args(python: str = sys.executable) -> list[str]:
    proc = subprocess.run([python, "-m", "pip", "config", "list"], capture_output=True, text=True)
    values: dict[str, list[str]] = {}
    for line in proc.stdout.splitlines():
        key, _, value = line.partition("=")
        name = key.rsplit(".", 1)[-1]
        values.setdefault(name, []).extend(value.strip().strip("'\"").split())
    args: list[str] = []
    for name, flag in (("index-url", "--index-url"), ("extra-index-url", "--extra-index-url"),
                       ("find-links", "--find-links"), ("constraint", "--constraint")):
        for value in dict.fromkeys(values.get(name, [])):
            args += [flag, value]
    if any(flag in args for flag in ("--extra-index-url", "--find-links")):
        # pip takes the best version from all indexes together; uv's default stops at the first
        # index that has the package (a local folder with one old wheel would then win).
        args += ["--index-strategy", "unsafe-best-match"]
    return args


if __name__ == "__main__":
    print(" ".join(pip_index_args()))
