"""The papers' numbers in lra_kit.paper_numbers: lookups, their errors, and consistency within each table."""

from __future__ import annotations

import pytest

from lra_kit import paper_numbers as pn


def test_table1_lookup_is_the_row_and_column():
    assert pn.momentum_hyperparameters("Text") == (pn.MOMENTUM_TABLE1.value("Text / Momentum transformer", "Momentum"),
                                                   pn.MOMENTUM_TABLE1.value("Text / Momentum transformer", "Stepsize"))
    beta, gamma = pn.momentum_hyperparameters("MNIST Generation")
    assert 0 <= beta < 1 and gamma > 0


def test_every_momentum_is_a_valid_beta_and_every_row_has_the_two_main_columns():
    for row, values in pn.MOMENTUM_TABLE1.rows.items():
        assert set(values) <= set(pn.MOMENTUM_TABLE1.columns), row
        assert 0 <= values["Momentum"] < 1 and values["Stepsize"] > 0, row


def test_table4_average_is_the_mean_of_the_five_tasks():
    # The paper's Avg column is the mean of its five task columns (to its two printed decimals).
    for model in pn.MOMENTUM_TABLE4.rows:
        tasks = [pn.lra_result(model, task) for task in pn.LRA_TASKS]
        assert sum(tasks) / 5 == pytest.approx(pn.MOMENTUM_TABLE4.value(model, "Avg"), abs=0.011), model


def test_bad_lookups_name_what_is_allowed():
    with pytest.raises(ValueError, match="no row"):
        pn.momentum_hyperparameters("Speech")
    with pytest.raises(ValueError, match="must be one of"):
        pn.lra_result("Linear", "Text (4K)")
    with pytest.raises(ValueError, match="no column"):
        pn.MOMENTUM_TABLE1.value("Pathfinder / Momentum transformer", "Stepsize in Momentum Connection")
    with pytest.raises(TypeError):
        pn.momentum_hyperparameters(0.6)


def test_cite_names_table_section_row_and_column():
    assert pn.MOMENTUM_TABLE1.cite("Text / Momentum transformer", "Stepsize") == (
        "Table 1 (§4), row 'Text / Momentum transformer', column 'Stepsize'")
