"""Numbers quoted from the papers, kept as data in one place so the book imports them instead of retyping.

Each table records where its numbers come from: the paper (a ``references.bib`` key), the table, its
section, and the page. ``page`` is None where the text of the paper the project works from carries no
page numbers; the table and section then locate the numbers.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType

__all__ = ["PaperTable", "MOMENTUM_TABLE1", "MOMENTUM_TABLE4", "LRA_TASKS", "momentum_hyperparameters", "lra_result"]


@dataclass(frozen=True)
class PaperTable:
    """A table of a paper: rows × columns of numbers, with where it was read."""

    paper: str                      # references.bib key
    table: str                      # "Table 1"
    section: str                    # the section the table belongs to
    page: int | None                # None: not recorded (the source text has no page numbers)
    columns: tuple[str, ...]        # the paper's column headings, verbatim
    rows: Mapping[str, Mapping[str, float]]

    def value(self, row: str, column: str) -> float:
        """One number, looked up by the paper's row and column labels."""
        if row not in self.rows:
            raise ValueError(f"{self.table} has no row {row!r}; rows are {sorted(self.rows)}")
        if column not in self.rows[row]:
            raise ValueError(f"{self.table}, row {row!r} has no column {column!r}; it has {sorted(self.rows[row])}")
        return self.rows[row][column]

    def cite(self, row: str | None = None, column: str | None = None) -> str:
        """A short reference, e.g. "Table 1 (§4), row 'Text / Momentum transformer', column 'Stepsize'"."""
        where = f"{self.table} ({self.section}" + (f", p. {self.page})" if self.page is not None else ")")
        if row is not None:
            where += f", row {row!r}"
        if column is not None:
            where += f", column {column!r}"
        return where


def _frozen(rows: dict[str, dict[str, float]]) -> Mapping[str, Mapping[str, float]]:
    return MappingProxyType({name: MappingProxyType(dict(values)) for name, values in rows.items()})


# Momentum Transformer (Nguyen et al.), Table 1: "Momentum and Stepsize Hyperparameters for Momentum-based
# Transformers". Rows are "<task> / <model>"; empty cells of the paper are absent. The text the project works
# from ends the table after the Pathfinder momentum-transformer row.
_MT = "Momentum transformer"
_MC = "Momentum transformer + Momentum connection"
_AD = "Adaptive momentum transformer"  # spelt "Adaptptive" in the paper
MOMENTUM_TABLE1 = PaperTable(
    paper="nguyen2022momentum", table="Table 1", section="§4", page=None,
    columns=("Momentum", "Stepsize", "Momentum in Momentum Connection", "Stepsize in Momentum Connection"),
    rows=_frozen({
        f"Copy Task / {_MT}": {"Momentum": 0.1, "Stepsize": 0.6},
        f"Copy Task / {_MC}": {"Momentum": 0.1, "Stepsize": 0.6, "Momentum in Momentum Connection": 0.99,
                               "Stepsize in Momentum Connection": 0.99},
        f"Copy Task / {_AD}": {"Momentum": 0.1, "Stepsize": 0.6, "Stepsize in Momentum Connection": 0.99},
        f"MNIST Generation / {_MT}": {"Momentum": 0.6, "Stepsize": 0.9},
        f"MNIST Generation / {_MC}": {"Momentum": 0.6, "Stepsize": 0.9, "Momentum in Momentum Connection": 0.1,
                                      "Stepsize in Momentum Connection": 0.99},
        f"MNIST Generation / {_AD}": {"Momentum": 0.6, "Stepsize": 0.9, "Stepsize in Momentum Connection": 0.99},
        f"CIFAR Generation / {_MT}": {"Momentum": 0.1, "Stepsize": 0.9},
        f"CIFAR Generation / {_MC}": {"Momentum": 0.1, "Stepsize": 0.9, "Momentum in Momentum Connection": 0.1,
                                      "Stepsize in Momentum Connection": 0.9},
        f"CIFAR Generation / {_AD}": {"Momentum": 0.1, "Stepsize": 0.9, "Stepsize in Momentum Connection": 0.9},
        f"Non-Autoregressive Machine Translation / {_MT}": {"Momentum": 0.6, "Stepsize": 0.6},
        f"Non-Autoregressive Machine Translation / {_MC}": {"Momentum": 0.6, "Stepsize": 0.6,
                                                            "Momentum in Momentum Connection": 0.3,
                                                            "Stepsize in Momentum Connection": 0.9},
        f"Non-Autoregressive Machine Translation / {_AD}": {"Momentum": 0.6, "Stepsize": 0.6,
                                                            "Stepsize in Momentum Connection": 0.9},
        f"ListOps / {_MT}": {"Momentum": 0.1, "Stepsize": 0.6},
        f"ListOps / {_AD}": {"Momentum": 0.1, "Stepsize": 0.6, "Stepsize in Momentum Connection": 0.4},
        f"Text / {_MT}": {"Momentum": 0.6, "Stepsize": 2.0},
        f"Text / {_AD}": {"Momentum": 0.6, "Stepsize": 2.0, "Stepsize in Momentum Connection": 0.001},
        f"Retrieval / {_MT}": {"Momentum": 0.6, "Stepsize": 1.0},
        f"Retrieval / {_AD}": {"Momentum": 0.6, "Stepsize": 1.0, "Stepsize in Momentum Connection": 0.5},
        f"Image / {_MT}": {"Momentum": 0.9, "Stepsize": 0.9},
        f"Image / {_AD}": {"Momentum": 0.9, "Stepsize": 0.9, "Stepsize in Momentum Connection": 0.001},
        f"Pathfinder / {_MT}": {"Momentum": 0.3, "Stepsize": 0.1},
    }),
)

# Momentum Transformer, Table 4: LRA test accuracy (%). The column headings, lengths included, are the
# paper's; "Text (4K)" is what the paper prints (see book chapter "What the papers' code does differently").
_T4_COLUMNS = ("ListOps (2K)", "Text (4K)", "Retrieval (4K)", "Image (1K)", "Pathfinder (1K)", "Avg")
MOMENTUM_TABLE4 = PaperTable(
    paper="nguyen2022momentum", table="Table 4", section="§4.3", page=None,
    columns=_T4_COLUMNS,
    rows=_frozen({
        name: dict(zip(_T4_COLUMNS, values, strict=True))
        for name, values in {
            "Softmax": (37.10, 64.17, 80.71, 39.06, 72.48, 58.70),
            "Linear": (18.30, 64.22, 81.37, 38.29, 71.17, 54.67),
            "Performer": (18.80, 63.81, 78.62, 37.07, 69.87, 53.63),
            "Reformer": (19.05, 64.88, 78.64, 43.29, 69.36, 55.04),
            "Linformer": (37.25, 55.91, 79.37, 37.84, 67.60, 55.59),
            _MT: (19.56, 64.35, 81.95, 39.40, 73.12, 55.68),
            _AD: (20.16, 64.45, 82.07, 39.53, 74.00, 56.04),
        }.items()
    }),
)

LRA_TASKS = ("ListOps", "Text", "Retrieval", "Image", "Pathfinder")


def momentum_hyperparameters(task: str, model: str = _MT) -> tuple[float, float]:
    """(β, γ) = (Momentum, Stepsize) of Table 1 for a task ("Text", "MNIST Generation", …) and model."""
    if not isinstance(task, str) or not isinstance(model, str):
        raise TypeError(f"task and model must be strings, got {task!r} and {model!r}")
    row = f"{task} / {model}"
    return MOMENTUM_TABLE1.value(row, "Momentum"), MOMENTUM_TABLE1.value(row, "Stepsize")


def lra_result(model: str, task: str) -> float:
    """Test accuracy (%) of Table 4 for a model and an LRA task name without its length ("Text")."""
    if task not in LRA_TASKS:
        raise ValueError(f"task must be one of {LRA_TASKS}, got {task!r}")
    column = next(c for c in MOMENTUM_TABLE4.columns if c.split(" (")[0] == task)
    return MOMENTUM_TABLE4.value(model, column)
