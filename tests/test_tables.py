"""lra_kit.tables.name_table: the constructor of the attention and task tables."""
from __future__ import annotations

from collections import namedtuple

import pytest

from lra_kit.attention import ATTENTIONS, attention_names
from lra_kit.data import TASK_TABLE, task_names
from lra_kit.tables import name_table

Row = namedtuple("Row", "name value")


def test_rows_by_name_in_order_and_read_only():
    table = name_table(Row("b", 1), Row("a", 2))
    assert list(table) == ["b", "a"] and table["a"].value == 2
    with pytest.raises(TypeError):
        table["c"] = Row("c", 3)


def test_a_name_listed_twice_is_an_error():
    with pytest.raises(ValueError, match="listed more than once: b"):
        name_table(Row("b", 1), Row("a", 2), Row("b", 3))


def test_the_two_tables_are_built_by_it():
    assert tuple(ATTENTIONS) == attention_names() and tuple(TASK_TABLE) == task_names()
    assert type(ATTENTIONS) is type(TASK_TABLE) is type(name_table())
