"""Check the provider and setup audit against a hand-written truth on real public dumps.

    python benchmarks/real_corpus/providers.py --dest /tmp/evalstats-providers
        [--fetch-root /work/.mirror] [--figures]

Each dump of ``providers.toml`` is restored from a fetched snapshot (``git show COMMIT:PATH``)
into ``<dest>/<name>/``, audited as a user would (``evalstats providers FILE --compare COL
--json``, with only the dump's ``args``), and compared with the truth: per configuration, the
calls, the errored calls, their classes, and both scores (errors as failures C/N and errors
excluded C/(N-E), to 1e-12). ``--figures`` also writes the audit figure of each dump there.
Prints one line per dump, OK or FAIL with what differs. Dumps marked ``restricted`` (a licence
that reserves text and data mining) are listed as SKIP unless ``--restricted`` is given.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import math
import subprocess
import sys
import tomllib
from pathlib import Path

HERE = Path(__file__).parent


def restore(dump: dict, dest: Path, fetch_root: Path) -> Path:
    """The dump's file (``path``), or a folder of the files under ``under`` whose names hold
    ``match`` (and ``match_also``), restored from the snapshot; returns what ``evalstats`` is
    pointed at."""
    gd = fetch_root / dump["repo"].replace("/", "+") / "repo"
    if not gd.exists():
        raise SystemExit(f"MISSING: fetch github:{dump['repo']} first (no {gd})")
    git = ["git", "--git-dir", str(gd)]
    if "path" in dump:
        paths = [dump["path"]]
        target = dest / dump["name"] / Path(dump["path"]).name
    else:
        listed = subprocess.run(
            [*git, "ls-tree", "-r", "--name-only", dump["commit"], dump["under"]],
            check=True,
            capture_output=True,
            text=True,
        ).stdout.splitlines()
        paths = [
            p
            for p in listed
            if dump["match"] in Path(p).name and dump.get("match_also", "") in Path(p).name
        ]
        target = dest / dump["name"] / "files"
    for p in paths:
        out = target if "path" in dump else target / Path(p).name
        if not out.exists():
            out.parent.mkdir(parents=True, exist_ok=True)
            data = subprocess.run(
                [*git, "show", f"{dump['commit']}:{p}"], check=True, capture_output=True
            ).stdout
            out.write_bytes(data)
    return target


def audit_as_a_user(path: Path, dump: dict, out: Path) -> dict:
    """``evalstats providers PATH --compare COL [ARGS] --json``, as a user would type it.

    Only the options of the dump's ``args`` are given (``--model`` for a file without a model
    column); the grades, errors and repeated calls are read by evalstats' own rules.
    """
    from evalstats.cli import main

    argv = ["providers", str(path), "--compare", dump["compare"], *dump.get("args", [])]
    argv += ["--n-resamples", "999", "--json"]
    buf, log = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(buf), contextlib.redirect_stderr(log):
        code = main(argv)
    (out / "stderr.txt").write_text(log.getvalue())
    if code != 0:
        raise RuntimeError(f"evalstats {' '.join(argv)} exited {code}: {log.getvalue()[-400:]}")
    return json.loads(buf.getvalue())


def check(dump: dict, dest: Path, fetch_root: Path, figures: bool) -> list[str]:
    path = restore(dump, dest, fetch_root)
    col = dump["compare"]
    here = path.parent
    got_json = audit_as_a_user(path, dump, here)

    def key(r: dict) -> str:  # "model / level" where the truth is per model
        if "key" in dump:  # the audit's own groups: "template / temperature"
            return " / ".join(str(r[k]) for k in dump["key"])
        return f"{r['model']} / {r[col]}" if dump.get("per_model") else str(r[col])

    pol = {key(r): r for r in got_json["policies"]}
    errs: dict[str, dict[str, int]] = {}
    for r in got_json["errors"]:
        if r["category"] != "any" and r["n_errors"] > 0:
            errs.setdefault(key(r), {})[r["category"]] = r["n_errors"]
    problems = []
    for conf, want in dump["truth"].items():
        got = pol.get(conf)
        if got is None:
            problems.append(f"{conf!r}: not in the audit")
            continue
        n, e, c = want["n_calls"], want["n_errors"], want["correct"]
        if (got["n_calls"], got["n_errors"]) != (n, e):
            problems.append(f"{conf!r}: calls/errors {got['n_calls']}/{got['n_errors']} != {n}/{e}")
        if not math.isclose(got["as_failures"], c / n, rel_tol=1e-12, abs_tol=1e-12):
            problems.append(f"{conf!r}: as_failures {got['as_failures']} != {c / n}")
        excl = got["excluded"]
        if n > e and not math.isclose(excl, c / (n - e), rel_tol=1e-12):
            problems.append(f"{conf!r}: excluded {excl} != {c / (n - e)}")
        if n == e and excl is not None and not math.isnan(excl):
            problems.append(f"{conf!r}: excluded {excl} though every call failed")
        if errs.get(conf, {}) != dict(want.get("classes", {})):
            problems.append(f"{conf!r}: classes {errs.get(conf, {})} != {want.get('classes', {})}")
    extra = set(pol) - set(dump["truth"])
    if extra:
        problems.append(f"configurations not in the truth: {sorted(extra)}")
    if figures:
        from evalstats import plots
        from evalstats.compare import provider_audit
        from evalstats.io import read

        opts = {k: dump[k] for k in ("model", "dataset") if k in dump}
        obs = read(path, columns={col: "setting"}, **opts).observations
        audit = provider_audit(obs, provider=col, n_resamples=999)
        for model in sorted(set(audit.policies["model"].to_list())):
            fig = plots.plot_provider_audit(audit, model=model)
            fig.savefig(here / f"audit_{_safe(model)}.png", dpi=120)
    return problems


def _safe(name: str) -> str:
    return "".join(ch if ch.isalnum() or ch in "-_." else "_" for ch in name)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--dest", type=Path, required=True)
    ap.add_argument("--fetch-root", type=Path, default=Path("/work/.mirror"))
    ap.add_argument("--figures", action="store_true")
    ap.add_argument(
        "--restricted",
        action="store_true",
        help="also audit the dumps whose licence reserves text and data mining (restricted = "
        "true): only with the rights holder's permission",
    )
    args = ap.parse_args(argv)
    listed = tomllib.loads((HERE / "providers.toml").read_text())["dump"]
    dumps = [d for d in listed if args.restricted or not d.get("restricted")]
    for d in listed:
        if d not in dumps:
            print(f"{d['name']}: SKIP (licence: {d['licence']}; --restricted to audit it)")
    bad = 0
    n_conf = sum(len(d["truth"]) for d in dumps)
    for dump in dumps:
        problems = check(dump, args.dest, args.fetch_root, args.figures)
        bad += bool(problems)
        print(f"{dump['name']}: {'OK' if not problems else 'FAIL: ' + '; '.join(problems)}")
    print(f"audit right on {len(dumps) - bad} of {len(dumps)} dumps ({n_conf} configurations)")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
