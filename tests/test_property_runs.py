"""The property tests' runs are reproducible (see conftest.py): a default run
draws the same examples every time; ``--long`` draws new ones from a seed it
prints, and the same seed draws them again."""

from __future__ import annotations

import pytest
from hypothesis import core, given, settings
from hypothesis import strategies as st
from test_model import _settings


def _draws() -> list[int]:
    drawn: list[int] = []

    @settings(max_examples=20)
    @given(st.integers())
    def probe(value: int) -> None:
        drawn.append(value)

    probe()
    return drawn


def test_a_default_run_draws_the_same_examples_every_time(request: pytest.FixtureRequest) -> None:
    if request.config.getoption("--long"):
        pytest.skip("--long explores with a seed of its own")
    assert settings.default.derandomize and settings.default.database is None
    assert _settings(long=False).derandomize, "the model test's own settings keep it"
    assert _draws() == _draws()


def test_a_long_run_draws_from_the_seed_it_prints(request: pytest.FixtureRequest) -> None:
    if not request.config.getoption("--long"):
        pytest.skip("only --long draws from a seed")
    assert not settings.default.derandomize
    assert core.global_force_seed == int(request.config.getoption("hypothesis_seed"))
    assert _draws() == _draws()
