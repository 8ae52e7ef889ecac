"""Check evalstats' design and means against a hand-written truth on real public dumps.

    python benchmarks/real_corpus/check.py --dest /tmp/evalstats-corpus [--only NAME]
        [--fetch-root /work/.mirror] [--verbose]

Every dump of ``manifest.toml`` names a public repository, a commit and the paths of its files
inside it. The files are restored from a fetched snapshot of the repository (a bare git
directory, ``<fetch-root>/<owner>+<name>/repo``) with ``git show COMMIT:PATH`` into
``<dest>/<dump name>/`` -- outside the project: no data file is ever committed here. Archives
the authors ship (``.tgz``) are unpacked there, as a user would. Then each dump is read with
evalstats' public API (``evalstats.read`` and ``evalstats.infer_design``) and compared with the
truth written by hand from reading the files themselves.

What is compared (the rule, decided once for every dump)
--------------------------------------------------------
1. **Roles.** Every column the design lists whose ``source`` is not ``canonical`` is put in a
   class and compared with the class of its truth role:

   - ``prompt`` (and ``variant``): a prompt dimension. A column is one when it takes two or more
     values within one (model, dataset, metric, item) cell -- the metric is part of the cell
     because analyses never mix two metrics;
   - ``setting``: a decoding / serving dimension (temperature, provider, quantization, server
     build) that varies within cells;
   - ``model``, ``dataset``, ``metric``, ``item``, ``run``, ``score``: themselves;
   - everything else -- ``text``, ``metadata``, ``item_attribute``, ``model_attribute``,
     ``outcome``, ``measurement``, ``cluster``, ``output``, ``answer``, ``response``,
     ``gold``, ``metric_info`` -- is the one class **not a design dimension**: whether a
     constant-per-item column is called an item attribute, a cluster or metadata is wording;
     whether it makes prompt variants is not.

   A column the truth marks ``alias`` is a one-to-one alias of a prompt factor it also names
   (a prompt file's path or hash beside the condition's name): it may be read as a prompt
   factor or left out -- the variants are the same either way -- but not as anything else.

   A column the design lists that the truth does not name is expected to be *not a design
   dimension* (the truth names every prompt factor and setting of the dump). When the truth has
   prompt factors (settings) and the design gives that role to none of them, that is a failure
   (the truth may name one dimension under several names -- ``model_config`` or the ``prefix``
   key a loader flattens out of it -- and any one of them suffices). The truth's roles
   are written with the structural definitions of issue 40 (a prompt factor varies within a
   cell; constant within every item = item attribute; constant within each model and
   different between models = model attribute; null exactly when right = outcome; many-valued
   numbers = metadata; free text = text).

2. **Counts.** ``models`` and ``datasets`` (distinct values in the observation table; with
   ``dataset_names``, each name must also be found among the datasets),
   ``items`` (distinct (dataset, item) pairs), ``variants`` (the largest ``n_variants`` of the
   design's groups: prompt variants per (model, dataset, metric) with the settings held) and
   ``runs`` (the largest ``runs_max``), each when the truth gives it.

3. **Means.** For each (model, dataset, metric) of the truth, the mean score of the
   observation table's rows of that model, dataset and metric (pooled over variants and runs)
   against the producer's own mean (lm-eval ``results_*.json``, the Inspect header
   ``results``, HELM ``stats.json``, a paper's table), pooled the same way (weighted by the
   producer's sample counts) when the producer wrote one per file. Tolerance 1e-9 unless the
   producer rounded (``tol``). Where the producer wrote no mean the truth says so
   (``means_source``) and, for plain tables, the checker computes it itself from the raw
   files with the standard library (``truth.independent``: which column is the model and the
   score, which score values the producer's own analysis drops). A truth model / dataset matches the table's values when equal or,
   case-insensitively, a substring of them (the loaders keep the producer's spelling: paths,
   ``org/name``, HELM's ``mmlu:subject=...``); the metric matches by name. The mean is taken
   over every row that matches (a dataset the loader splits in two is pooled back).

A dump is ``OK`` when roles and counts agree ("design right") and every mean agrees. A dump
that evalstats cannot read (``expect_readable = false``) is listed and not scored. The total
line also says how many designs would be right if a column with one value in the whole table,
given a prompt or setting role by its name only, were let pass (it makes no variants; the rule
"structure over names" still calls it wrong, and the strict count is the score).
"""

from __future__ import annotations

import argparse
import fnmatch
import io
import subprocess
import sys
import tarfile
import tomllib
import traceback
from pathlib import Path

HERE = Path(__file__).resolve().parent
MANIFEST = HERE / "manifest.toml"

LEFT_OUT = "not a design dimension"
CLASSES = {
    "prompt": "prompt",
    "variant": "prompt",
    "setting": "setting",
    "model": "model",
    "dataset": "dataset",
    "metric": "metric",
    "item": "item",
    "run": "run",
    "score": "score",
}


def role_class(role: str) -> str:
    """The comparison class of a role (see the module docstring, rule 1)."""
    return CLASSES.get(role, LEFT_OUT)


# --- restoring the files ------------------------------------------------------------------


def git_dir(fetch_root: Path, repo: str) -> Path:
    return fetch_root / repo.replace("/", "+") / "repo"


def git(gd: Path, *args: str) -> bytes:
    return subprocess.run(
        ["git", "--git-dir", str(gd), *args], check=True, capture_output=True
    ).stdout


def _member_kept(name: str, globs: list[str]) -> bool:
    """An archive member is kept when it matches a glob and no ``!glob``."""
    keep = [g for g in globs if not g.startswith("!")] or ["*"]
    drop = [g[1:] for g in globs if g.startswith("!")]
    return any(fnmatch.fnmatchcase(name, g) for g in keep) and not any(
        fnmatch.fnmatchcase(name, g) for g in drop
    )


def restore(dump: dict, dest: Path, fetch_root: Path) -> Path:
    """Write the dump's files under ``dest/<name>``; return the path evalstats reads."""
    out = dest / dump["name"]
    marker = out / ".restored"
    if not marker.exists():
        gd = git_dir(fetch_root, dump["repo"])
        if not gd.exists():
            raise FileNotFoundError(
                f"no snapshot of {dump['repo']} under {fetch_root}: fetch it first "
                f"(the `fetch` tool with source github:{dump['repo']}, which lands it in "
                f"{gd}), or pass --fetch-root"
            )
        listing = git(gd, "ls-tree", "-r", "--name-only", dump["commit"]).decode().splitlines()
        strip = dump.get("strip", "")
        n = 0
        for pattern in dump["paths"]:
            hits = [p for p in listing if fnmatch.fnmatchcase(p, pattern)]
            if not hits:
                raise FileNotFoundError(f"{pattern!r} matches no file at {dump['commit'][:12]}")
            for p in hits:
                data = git(gd, "show", f"{dump['commit']}:{p}")
                rel = p[len(strip) :] if strip and p.startswith(strip) else p
                target = out / rel
                if p.endswith((".tgz", ".tar.gz")) and dump.get("unpack", False):
                    target.parent.mkdir(parents=True, exist_ok=True)
                    with tarfile.open(fileobj=io.BytesIO(data), mode="r:gz") as tar:
                        members = [
                            m
                            for m in tar.getmembers()
                            if not Path(m.name).name.startswith("._")
                            and _member_kept(m.name, dump.get("members", ["*"]))
                            or m.isdir()
                        ]
                        tar.extractall(target.parent, members=members, filter="data")
                else:
                    target.parent.mkdir(parents=True, exist_ok=True)
                    target.write_bytes(data)
                n += 1
        marker.write_text(f"{dump['repo']}@{dump['commit']}: {n} files\n")
    return out / dump.get("read", "")


# --- comparing ------------------------------------------------------------------------------


def _match(truth: str, value: str) -> bool:
    if truth.startswith("="):  # exact match wanted ("=gpt-5.4" is not gpt-5.4-mini)
        return str(value) == truth[1:]
    return truth == value or truth.lower() in str(value).lower()


def _metric_match(truth: str | None, value: str) -> bool:
    """A metric matches by name; lm-eval's ``exact_match,get-answer`` is ``exact_match``."""
    return truth is None or value == truth or str(value).split(",")[0] == truth


def check_design(dump: dict, design, obs) -> list[str]:
    import polars as pl

    truth = dump.get("truth", {})
    roles: dict[str, str] = truth.get("roles", {})
    problems = []
    listed = {}
    for c in design.columns:
        if c.source == "canonical":
            continue
        listed[c.column] = c
        want = role_class(roles.get(c.column, LEFT_OUT))
        got = role_class(c.role)
        if roles.get(c.column) == "alias" and got in ("prompt", LEFT_OUT):
            continue  # a one-to-one alias of a prompt factor: either reading is right
        if want != got:
            if got in ("prompt", "setting") and c.n_values == 1:
                role = f"{c.role} [one value in the whole table]"
            else:
                role = c.role
            if c.column in roles:
                problems.append(f"{c.column}: {role} (truth {roles[c.column]})")
            else:
                problems.append(f"{c.column}: {role} (truth: not a design dimension)")
    for cls in ("prompt", "setting"):
        want_cols = [col for col, role in roles.items() if role_class(role) == cls]
        got_cols = [c.column for c in design.columns if role_class(c.role) == cls]
        if want_cols and not set(want_cols) & set(got_cols):
            problems.append(f"no {cls} column (truth: {' or '.join(want_cols)})")

    counts = truth.get("counts", {})
    cols = obs.collect_schema().names()
    if "models" in counts:
        n = obs.select(pl.col("model").n_unique()).collect().item()
        if n != counts["models"]:
            problems.append(f"models {n} (truth {counts['models']})")
    if "datasets" in counts:
        n = obs.select(pl.col("dataset").n_unique()).collect().item()
        if n != counts["datasets"]:
            problems.append(f"datasets {n} (truth {counts['datasets']})")
    if "dataset_names" in counts:
        names = obs.select(pl.col("dataset").unique()).collect()["dataset"].to_list()
        for want in counts["dataset_names"]:
            if not any(_match(want, str(n)) for n in names):
                problems.append(
                    f"no dataset named {want!r} (datasets: {', '.join(map(str, names[:5]))})"
                )
    if "items" in counts and "item" in cols:
        n = obs.select(pl.struct("dataset", "item").n_unique()).collect().item()
        if n != counts["items"]:
            problems.append(f"items {n} (truth {counts['items']})")
    g = design.groups
    if "variants" in counts and "n_variants" in g.columns and g.height:
        n = int(g["n_variants"].max())
        if n != counts["variants"]:
            problems.append(f"variants {n} (truth {counts['variants']})")
    if "runs" in counts and "runs_max" in g.columns and g.height:
        n = int(g["runs_max"].max())
        if n != counts["runs"]:
            problems.append(f"runs {n} (truth {counts['runs']})")
    return problems


def check_means(dump: dict, obs) -> tuple[list[str], int]:
    import polars as pl

    means = dump.get("truth", {}).get("means", [])
    if not means:
        return [], 0
    got = (
        obs.group_by("model", "dataset", "metric")
        .agg(pl.col("score").sum().alias("sum"), pl.len().alias("n"))
        .collect()
    )
    problems = []
    for m in means:
        rows = [
            r
            for r in got.iter_rows(named=True)
            if _match(m["model"], r["model"])
            and _match(m["dataset"], r["dataset"])
            and _metric_match(m.get("metric"), r["metric"])
        ]
        label = f"{m['model']} / {m['dataset']} / {m.get('metric', '')}"
        if not rows:
            problems.append(f"mean {label}: no rows")
            continue
        mean = sum(r["sum"] for r in rows) / sum(r["n"] for r in rows)
        tol = m.get("tol", 1e-9)
        if abs(mean - m["mean"]) > tol:
            problems.append(f"mean {label}: {mean:.6g} (truth {m['mean']:.6g})")
    return problems, len(means)


def independent_means(dump: dict, folder: Path) -> list[dict]:
    """Means computed here from the raw files, without evalstats (``truth.independent``).

    For plain tables whose producer wrote no mean: ``glob`` (files under the restored folder),
    ``model`` (a column, or ``"file"`` for the file's stem), ``score`` (the column), ``drop``
    (score values the producer's own analysis leaves out, e.g. a judge's -1 for an unparsed
    rating) and optionally ``metric``/``dataset`` to match. JSON Lines and CSV only, read with
    the standard library.
    """
    import csv
    import json

    spec = dump.get("truth", {}).get("independent")
    if not spec:
        return []
    sums: dict[str, list[float]] = {}
    for f in sorted(folder.glob(spec["glob"])):
        if f.suffix == ".jsonl":
            rows = [
                json.loads(line)
                for line in f.read_text(encoding="utf-8").split("\n")
                if line.strip()
            ]
        else:
            with f.open(newline="", encoding="utf-8") as fh:
                rows = list(csv.DictReader(fh))
        for r in rows:
            v = r.get(spec["score"])
            if v in (None, ""):
                continue
            v = float(v)
            if v in spec.get("drop", []):
                continue
            key = f.stem if spec["model"] == "file" else str(r[spec["model"]])
            acc = sums.setdefault(key, [0.0, 0])
            acc[0] += v
            acc[1] += 1
    return [
        {
            "model": k,
            "dataset": spec.get("dataset", ""),
            "metric": spec.get("metric"),
            "mean": a[0] / a[1],
        }
        for k, a in sums.items()
    ]


def run_dump(dump: dict, dest: Path, fetch_root: Path, verbose: bool) -> dict:
    import evalstats

    result = {"name": dump["name"], "design_ok": False, "means_ok": None, "problems": []}
    path = restore(dump, dest, fetch_root)
    opts = dict(dump.get("read_options", {}))
    try:
        obs, report = evalstats.read(str(path), format=dump.get("format", "auto"), **opts)
        design = evalstats.infer_design(obs, ingest=report, roles=dump.get("roles") or None)
    except Exception as exc:  # an unreadable dump is a result, not a crash of the checker
        result["readable"] = False
        result["problems"].append(f"not read: {type(exc).__name__}: {str(exc)[:200]}")
        if verbose:
            traceback.print_exc()
        return result
    result["readable"] = True
    if verbose:
        print(design.summary(width=110))
    dp = check_design(dump, design, obs)
    extra = independent_means(dump, dest / dump["name"])
    if extra:
        dump = {**dump, "truth": {**dump["truth"], "means": dump["truth"].get("means", []) + extra}}
    mp, n_means = check_means(dump, obs)
    result["design_ok"] = not dp
    result["only_constant"] = bool(dp) and all("[one value in the whole table]" in x for x in dp)
    result["means_ok"] = (not mp) if n_means else None
    result["problems"] = dp + mp
    return result


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--dest", type=Path, required=True, help="folder to restore the dumps into")
    ap.add_argument("--only", action="append", help="check only this dump (repeatable)")
    ap.add_argument("--fetch-root", type=Path, default=Path("/work/.mirror"))
    ap.add_argument("--manifest", type=Path, default=MANIFEST)
    ap.add_argument("--verbose", action="store_true", help="print each design")
    args = ap.parse_args(argv)

    manifest = tomllib.loads(args.manifest.read_text())
    dumps = manifest["dump"]
    if args.only:
        dumps = [d for d in dumps if d["name"] in args.only]
        if not dumps:
            ap.error(f"no dump named {args.only}")
    args.dest.mkdir(parents=True, exist_ok=True)
    scored = design_ok = with_means = means_ok = only_constant = 0
    unread_expected = []
    for dump in dumps:
        try:
            r = run_dump(dump, args.dest, args.fetch_root, args.verbose)
        except FileNotFoundError as exc:
            print(f"{dump['name']:<34} MISSING: {exc}")
            continue
        if not dump.get("expect_readable", True):
            state = "read (unexpected)" if r["readable"] else "not read, as expected"
            print(f"{dump['name']:<34} SKIP ({state}): {dump.get('reason', '')}")
            unread_expected.append(dump["name"])
            continue
        scored += 1
        design_ok += r["design_ok"]
        only_constant += r.get("only_constant", False)
        if r["means_ok"] is not None:
            with_means += 1
            means_ok += r["means_ok"]
        line = (
            "OK"
            if r["design_ok"] and r["means_ok"] in (True, None)
            else "FAIL: " + "; ".join(r["problems"])
        )
        print(f"{dump['name']:<34} {line}")
    pct = round(100 * design_ok / scored) if scored else 0
    print(
        f"design right on {design_ok} of {scored} dumps ({pct} %); "
        f"means right on {means_ok} of {with_means} dumps that have them"
        + (
            f" ({design_ok + only_constant} of {scored} designs right if a constant column "
            "given a prompt or setting role by its name were let pass)"
            if only_constant
            else ""
        )
        + (f"; {len(unread_expected)} unreadable dumps listed" if unread_expected else "")
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
