"""Doctest set-up for the package, README and docs: names and a stable polars display."""

from __future__ import annotations

import os

import matplotlib
import numpy as np
import polars as pl
import pytest

matplotlib.use("Agg")
os.environ.setdefault("MPLBACKEND", "Agg")


@pytest.fixture(autouse=True)
def _doctest_namespace(doctest_namespace):
    doctest_namespace["pl"] = pl
    doctest_namespace["np"] = np
    with pl.Config(
        tbl_formatting="ASCII_MARKDOWN",
        tbl_hide_column_data_types=True,
        tbl_hide_dataframe_shape=True,
        float_precision=4,
    ):
        yield
