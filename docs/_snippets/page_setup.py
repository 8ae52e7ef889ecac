"""Page setup shared by the tutorials (included into each page's first executed block).

``table(frame)`` prints a polars frame as a Markdown table; ``show(fig)`` embeds a matplotlib
figure as a PNG image. Both only format: every number and figure comes from evalstats.
``shared(...)`` and ``llm_stability_runs()`` locate the real public data, which are read in place
from ``../shared/data`` beside the project (see ``shared_data.py``).
"""

import base64
import io
import sys
import warnings
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import polars as pl  # noqa: E402

if str(Path("docs/_snippets").resolve()) not in sys.path:
    sys.path.insert(0, str(Path("docs/_snippets").resolve()))
from shared_data import llm_stability_runs, shared  # noqa: E402, F401

# Deprecation notices of third-party libraries (seaborn on newer matplotlib) are not
# evalstats output; keep them out of the build log.
warnings.filterwarnings("ignore", category=DeprecationWarning)


def table(frame, *, decimals=3, max_str=60):
    """Print ``frame`` as a Markdown table, floats rounded to ``decimals`` for display."""
    with pl.Config(
        tbl_formatting="MARKDOWN",
        tbl_hide_column_data_types=True,
        tbl_hide_dataframe_shape=True,
        float_precision=decimals,
        tbl_rows=-1,
        tbl_cols=-1,
        tbl_width_chars=65_000,
        fmt_str_lengths=max_str,
        fmt_table_cell_list_len=10,
    ):
        print(frame)
        print()


def show(fig, *, alt="figure drawn by evalstats", dpi=110):
    """Print ``fig`` as an inline PNG image (Markdown) and close it."""
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=dpi, bbox_inches="tight", metadata={"Software": None})
    plt.close(fig)
    data = base64.b64encode(buf.getvalue()).decode("ascii")
    print(f"![{alt}](data:image/png;base64,{data})")
    print()


def cli(command, *, max_lines=15, cwd=None):
    """Run ``evalstats COMMAND`` in-process; print the command line and the start of stdout.

    The build fails if the command exits with a non-zero status, so the command lines shown
    on the site stay valid. ``cwd``: the folder the command runs in (relative paths in the
    command are relative to it), e.g. where an archive of the shared data was extracted.
    """
    import contextlib
    import shlex

    from evalstats.cli import main

    out, err = io.StringIO(), io.StringIO()
    where = contextlib.chdir(cwd) if cwd is not None else contextlib.nullcontext()
    with where, contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        status = main(shlex.split(command))
    if status != 0:
        raise RuntimeError(f"`evalstats {command}` exited with {status}: {err.getvalue()}")
    lines = out.getvalue().splitlines()
    shown = lines[:max_lines] + (
        [f"... ({len(lines) - max_lines} more lines)"] if len(lines) > max_lines else []
    )
    print("```console")
    print(f"$ evalstats {command}")
    print("\n".join(shown))
    print("```")
    print()
