"""Check the provider and setup audit against a hand-written truth on real public dumps.

    python benchmarks/real_corpus/providers.py --dest /tmp/evalstats-providers
        [--fetch-root /work/.mirror] [--figures]

Each dump of ``providers.toml`` is restored from a fetched snapshot (``git show COMMIT:PATH``)
into ``<dest>/<name>/``, read as its ``providers.toml`` header says a user would, audited with
:func:`evalstats.compare.provider_audit`, and compared with the truth: per configuration, the
calls, the errored calls, their classes, and both scores (errors as failures C/N and errors
excluded C/(N-E), to 1e-12). ``--figures`` also writes the audit figure of each dump there.
Prints one line per dump, OK or FAIL with what differs.
"""

from __future__ import annotations

import argparse
import math
import subprocess
import sys
import tomllib
from pathlib import Path

import polars as pl

HERE = Path(__file__).parent


def restore(dump: dict, dest: Path, fetch_root: Path) -> Path:
    gd = fetch_root / dump["repo"].replace("/", "+") / "repo"
    if not gd.exists():
        raise SystemExit(f"MISSING: fetch github:{dump['repo']} first (no {gd})")
    out = dest / dump["name"] / Path(dump["path"]).name
    if not out.exists():
        out.parent.mkdir(parents=True, exist_ok=True)
        data = subprocess.run(
            ["git", "--git-dir", str(gd), "show", f"{dump['commit']}:{dump['path']}"],
            check=True,
            capture_output=True,
        ).stdout
        out.write_bytes(data)
    return out


def as_a_user_reads_it(path: Path, compare: str) -> pl.DataFrame:
    """Letter grades to scores, the error text of failed calls, repeated calls numbered.

    The configuration compared (``compare``) names the judge model and its sampling settings
    together, so the evaluated object is one: ``model = 'judge'``, the judge's model name kept
    as ``judge_model``.
    """
    import json

    records = json.loads(path.read_text())
    raw = pl.DataFrame(records, infer_schema_length=None)
    if "model" in raw.columns:
        raw = raw.rename({"model": "judge_model"})
    keep = [c for c in raw.columns if c not in ("grade", "raw", "item", "top_p", "top_k")]
    return raw.select(
        pl.lit("judge").alias("model"),
        pl.lit("judge").alias("dataset"),
        pl.col("item").cast(pl.String),
        pl.int_range(pl.len()).over(compare, "item").alias("run"),
        pl.col("grade").replace_strict({"C": 1.0, "I": 0.0}, default=None).alias("score"),
        pl.when(pl.col("grade") == "ERROR").then(pl.col("raw")).alias("error"),
        pl.when(pl.col("grade") != "ERROR").then(pl.col("grade")).alias("answer"),
        *[pl.col(c) for c in keep if c != "judge_model" or compare != "label"],
    )


def check(dump: dict, dest: Path, fetch_root: Path, figures: bool) -> list[str]:
    from evalstats.compare import provider_audit

    path = restore(dump, dest, fetch_root)
    table = as_a_user_reads_it(path, dump["compare"])
    audit = provider_audit(table, provider=dump["compare"], n_resamples=999)
    pol = {r[dump["compare"]]: r for r in audit.policies.iter_rows(named=True)}
    errs = audit.errors.filter(pl.col("category") != "any", pl.col("n_errors") > 0)
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
        classes = {
            k: v
            for k, v in errs.filter(pl.col(dump["compare"]) == conf)
            .select("category", "n_errors")
            .rows()
        }
        if classes != dict(want.get("classes", {})):
            problems.append(f"{conf!r}: classes {classes} != {dict(want.get('classes', {}))}")
    if figures:
        from evalstats import plots

        for model in sorted(set(audit.policies["model"].to_list())):
            fig = plots.plot_provider_audit(audit, model=model)
            fig.savefig(dest / dump["name"] / f"audit_{model}.png", dpi=120)
        audit.versus.write_csv(dest / dump["name"] / "versus.csv")
    return problems


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--dest", type=Path, required=True)
    ap.add_argument("--fetch-root", type=Path, default=Path("/work/.mirror"))
    ap.add_argument("--figures", action="store_true")
    args = ap.parse_args(argv)
    dumps = tomllib.loads((HERE / "providers.toml").read_text())["dump"]
    bad = 0
    for dump in dumps:
        problems = check(dump, args.dest, args.fetch_root, args.figures)
        bad += bool(problems)
        print(f"{dump['name']}: {'OK' if not problems else 'FAIL: ' + '; '.join(problems)}")
    print(f"audit right on {len(dumps) - bad} of {len(dumps)} dumps")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
