"""The image-generation tables as typed agree where the papers repeat themselves (a typo check)."""
from __future__ import annotations

import pytest

from lra_kit import paper_numbers as pn


@pytest.mark.parametrize("main,appendix", [(pn.KATHAROPOULOS_TABLE1, pn.KATHAROPOULOS_TABLE4_MNIST),
                                           (pn.KATHAROPOULOS_TABLE2, pn.KATHAROPOULOS_TABLE4_CIFAR10)])
def test_appendix_table_4_repeats_tables_1_and_2(main, appendix):
    for row in main.rows:
        for column in main.columns:
            assert appendix.value(row, column) == main.value(row, column)
    assert appendix.value("Stateful-softmax", "Bits/dim") == main.value("Softmax", "Bits/dim")


@pytest.mark.parametrize("kath,nguyen", [(pn.KATHAROPOULOS_TABLE1, pn.MOMENTUM_TABLE2),
                                         (pn.KATHAROPOULOS_TABLE2, pn.MOMENTUM_TABLE3)])
def test_nguyen_repeats_the_images_per_second(kath, nguyen):
    assert nguyen.value("Standard softmax transformer", "Images/sec") == kath.value("Softmax", "Images/sec")
    assert nguyen.value("Linear transformer", "Images/sec") == kath.value("Linear (ours)", "Images/sec")


def test_the_papers_disagree_on_mnist_bits_per_dim():
    assert pn.MOMENTUM_TABLE2.value("Linear transformer", "Bits/dim") != pn.KATHAROPOULOS_TABLE1.value(
        "Linear (ours)", "Bits/dim")


def test_table_5_linear_is_fastest_on_cpu():
    """Appendix §C.2: linear is the fastest of all methods at batch 1."""
    for table in (pn.KATHAROPOULOS_TABLE5_MNIST, pn.KATHAROPOULOS_TABLE5_CIFAR10):
        for column in table.columns:
            assert min(table.rows, key=lambda r, c=column: table.value(r, c)) == "Linear (ours)"
