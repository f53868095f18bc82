"""The package's tables of named rows — :data:`lra_kit.attention.ATTENTIONS`, :data:`lra_kit.data.TASK_TABLE` —
built by one function, :func:`name_table`.

It imports nothing from ``lra_kit``, so every subpackage may use it without a dependency on another
(``lra_kit.attention`` knows nothing of the rest of the package: docs/design.md §1).
"""
from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType
from typing import TypeVar

Row = TypeVar("Row")


def name_table(*rows: Row) -> Mapping[str, Row]:
    """A read-only mapping from each row's ``name`` to the row, in the order given.

    A name listed twice is a ValueError: in a plain dict the later row would silently replace the earlier one.
    """
    names = [row.name for row in rows]
    twice = sorted({name for name in names if names.count(name) > 1})
    if twice:
        raise ValueError(f"a table lists each name once; listed more than once: {', '.join(twice)}")
    return MappingProxyType({row.name: row for row in rows})
