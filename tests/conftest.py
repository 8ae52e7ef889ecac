"""Shared fixtures: seeded data, paths to fixtures, doctest namespace, hypothesis profiles."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, settings

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"

settings.register_profile(
    "ci", max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow]
)
settings.register_profile(
    "nightly", max_examples=500, deadline=None, suppress_health_check=[HealthCheck.too_slow]
)
settings.load_profile(os.environ.get("EVALSTATS_HYPOTHESIS_PROFILE", "ci"))


@pytest.fixture
def fixtures() -> Path:
    """The repository's fixtures folder."""
    return FIXTURES


@pytest.fixture
def rng() -> np.random.Generator:
    """A seeded generator."""
    return np.random.default_rng(12345)


@pytest.fixture(autouse=True)
def _close_figures():
    """Close matplotlib figures after each test (plots tests run on Agg)."""
    yield
    import sys

    if "matplotlib.pyplot" in sys.modules:
        import matplotlib.pyplot as plt

        plt.close("all")
