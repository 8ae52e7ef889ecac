"""The README's install in a fresh virtual environment: how much disk it takes.

Copies the project (the working tree, or a commit with ``--ref``) to a temporary folder, runs
the README's install there (``python3 -m venv .venv && .venv/bin/pip install -e .``), and
measures the virtual environment with ``du`` (as ``du -sh .venv`` does). With
``--attribution-tests`` it then adds what the attribution tests import besides the package
(pytest, hypothesis, and pyarrow for their statsmodels references) and runs
``tests/test_attribution.py`` (slow tests included) on that environment.

    python benchmarks/install_size.py --json benchmarks/results/install_size.json \\
        --attribution-tests
    python benchmarks/install_size.py --ref <commit> --json /tmp/before.json

``benchmarks/performance.py`` puts the JSON into docs/performance.md ("Install size").
"""

from __future__ import annotations

import argparse
import datetime
import json
import platform
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
PROJECT = HERE.parent

#: Not part of a fresh checkout.
_IGNORE = shutil.ignore_patterns(
    ".venv", ".git", "site", "build", "dist", "*.egg-info", "__pycache__", "evalstats-*"
)


def _copy(ref: str | None, target: Path) -> str:
    """The project at ``ref`` (default: the working tree) in ``target``; return what was copied."""
    if ref is None:
        shutil.copytree(PROJECT, target, ignore=_IGNORE)
        return "working tree"
    target.mkdir(parents=True)
    archive = subprocess.run(
        ["git", "-C", str(PROJECT), "archive", ref], check=True, capture_output=True
    ).stdout
    subprocess.run(["tar", "-x", "-C", str(target)], input=archive, check=True)
    sha = subprocess.run(
        ["git", "-C", str(PROJECT), "rev-parse", "--short", ref],
        check=True,
        capture_output=True,
        text=True,
    ).stdout.strip()
    return f"commit {sha}"


def _du(path: Path) -> tuple[int, str]:
    """(bytes, ``du -sh`` text) of ``path``: blocks on disk, as ``du`` counts them."""
    kib = int(
        subprocess.run(["du", "-sk", str(path)], capture_output=True, text=True).stdout.split()[0]
    )
    human = subprocess.run(["du", "-sh", str(path)], capture_output=True, text=True).stdout.split()[
        0
    ]
    return kib * 1024, human


def measure(ref: str | None, attribution_tests: bool) -> dict:
    """Install into a fresh venv and measure it (see the module docstring)."""
    with tempfile.TemporaryDirectory(prefix="evalstats-install-") as tmp:
        src = Path(tmp) / "evalstats"
        what = _copy(ref, src)
        venv = src / ".venv"
        pip = venv / "bin" / "pip"
        subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
        subprocess.run([str(pip), "install", "-q", "-e", "."], cwd=src, check=True)
        size, human = _du(venv)
        listed = subprocess.run(
            [str(pip), "list", "--format", "json"], capture_output=True, text=True, check=True
        ).stdout
        packages = {p["name"].lower(): p["version"] for p in json.loads(listed)}
        site = next((venv / "lib").glob("python3*/site-packages"))
        largest = sorted(((_du(p)[0], p.name) for p in site.iterdir() if p.is_dir()), reverse=True)[
            :6
        ]
        result = {
            "date": datetime.date.today().isoformat(),
            "source": what,
            "command": "python3 -m venv .venv && .venv/bin/pip install -e .",
            "machine": platform.machine(),
            "python": platform.python_version(),
            "bytes": size,
            "du_sh": human,
            "xgboost": {
                k: packages[k]
                for k in ("xgboost", "xgboost-cpu", "nvidia-nccl-cu12")
                if k in packages
            },
            "largest": [{"folder": name, "mib": round(b / 2**20)} for b, name in largest],
        }
        if attribution_tests:
            subprocess.run(
                [str(pip), "install", "-q", "pytest", "hypothesis", "pyarrow"], cwd=src, check=True
            )
            done = subprocess.run(
                [
                    str(venv / "bin" / "python"),
                    "-m",
                    "pytest",
                    "-q",
                    "-p",
                    "no:cacheprovider",
                    "-m",
                    "slow or not slow",
                    "tests/test_attribution.py",
                ],
                cwd=src,
                capture_output=True,
                text=True,
            )
            tail = done.stdout.strip().splitlines()[-1] if done.stdout.strip() else ""
            result["attribution_tests"] = {
                "status": done.returncode,
                "summary": re.sub(r"\s+in [\d.]+s.*$", "", tail.strip("= ")),
            }
    return result


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ref", default=None, help="a commit to measure (default: working tree)")
    parser.add_argument("--json", type=Path, default=None, help="write the result here")
    parser.add_argument("--attribution-tests", action="store_true")
    args = parser.parse_args(argv)
    result = measure(args.ref, args.attribution_tests)
    text = json.dumps(result, indent=2)
    if args.json is not None:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(text + "\n")
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
