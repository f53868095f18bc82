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


def _table(paper: str, table: str, section: str, columns: tuple[str, ...], rows: dict) -> PaperTable:
    return PaperTable(paper=paper, table=table, section=section, page=None, columns=columns,
                      rows=_frozen({name: dict(zip(columns, values, strict=True)) for name, values in rows.items()}))


# Momentum Transformer (Nguyen et al.), Table 1: "Momentum and Stepsize Hyperparameters for Momentum-based
# Transformers". Rows are "<task> / <model>"; empty cells of the paper are absent. The LRA tasks have no
# momentum-connection row; their adaptive rows give the connection's stepsize γ̃ alone (β̃ is computed, eq. 18).
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
        f"Pathfinder / {_AD}": {"Momentum": 0.3, "Stepsize": 0.1, "Stepsize in Momentum Connection": 0.8},
    }),
)

# Momentum Transformer, Table 4: LRA test accuracy (%). The column headings, lengths included, are the
# paper's; "Text (4K)" is what the paper prints (see book chapter "What the papers' code does differently").
_T4_COLUMNS = ("ListOps (2K)", "Text (4K)", "Retrieval (4K)", "Image (1K)", "Pathfinder (1K)", "Avg")
MOMENTUM_TABLE4 = _table("nguyen2022momentum", "Table 4", "§4.3", _T4_COLUMNS, {
        "Softmax": (37.10, 64.17, 80.71, 39.06, 72.48, 58.70),
        "Linear": (18.30, 64.22, 81.37, 38.29, 71.17, 54.67),
        "Performer": (18.80, 63.81, 78.62, 37.07, 69.87, 53.63),
        "Reformer": (19.05, 64.88, 78.64, 43.29, 69.36, 55.04),
        "Linformer": (37.25, 55.91, 79.37, 37.84, 67.60, 55.59),
        _MT: (19.56, 64.35, 81.95, 39.40, 73.12, 55.68),
        _AD: (20.16, 64.45, 82.07, 39.53, 74.00, 56.04),
})

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


# ---------------------------------------------------------------------------------------------
# The copy task and autoregressive image generation (notebooks/copy_task.md, notebooks/image_generation.md).
# Katharopoulos et al. Tables 1-2 (§4.2.1,
# §4.2.2), appendix Tables 4-5 (§C.1, §C.2), and Nguyen et al. Tables 2-3 (§4.2). The "(1×)" ratios the
# papers print beside images/s and seconds are derived numbers and are not stored: the notebooks recompute
# them. Where the papers disagree (MNIST bits/dim of softmax and linear: Katharopoulos Table 1 vs Nguyen
# Table 2), both tables are kept as printed.
_KT = "katharopoulos2020transformers"
_NG = "nguyen2022momentum"




KATHAROPOULOS_TABLE1 = _table(_KT, "Table 1", "§4.2.1", ("Bits/dim", "Images/sec"), {
    "Softmax": (0.621, 0.45), "LSH-1": (0.745, 0.68), "LSH-4": (0.676, 0.27), "Linear (ours)": (0.644, 142.8)})
KATHAROPOULOS_TABLE2 = _table(_KT, "Table 2", "§4.2.2", ("Bits/dim", "Images/sec"), {
    "Softmax": (3.47, 0.004), "LSH-1": (3.39, 0.015), "LSH-4": (3.51, 0.005), "Linear (ours)": (3.40, 17.85)})
# Appendix Table 4 (a) MNIST, (b) CIFAR-10: Tables 1-2 plus the stateful-softmax (key/value cache) row.
KATHAROPOULOS_TABLE4_MNIST = _table(_KT, "Table 4 (a)", "§C.1", ("Bits/dim", "Images/sec"), {
    "Softmax": (0.621, 0.45), "Stateful-softmax": (0.621, 7.56), "LSH-1": (0.745, 0.68), "LSH-4": (0.676, 0.27),
    "Linear (ours)": (0.644, 142.8)})
KATHAROPOULOS_TABLE4_CIFAR10 = _table(_KT, "Table 4 (b)", "§C.1", ("Bits/dim", "Images/sec"), {
    "Softmax": (3.47, 0.004), "Stateful-softmax": (3.47, 0.32), "LSH-1": (3.39, 0.015), "LSH-4": (3.51, 0.005),
    "Linear (ours)": (3.40, 17.85)})
# Appendix Table 5: seconds to generate one image at batch size 1, (a) MNIST, (b) CIFAR-10.
KATHAROPOULOS_TABLE5_MNIST = _table(_KT, "Table 5 (a)", "§C.2", ("Seconds (CPU)", "Seconds (GPU)"), {
    "Softmax": (72.6, 10.2), "Stateful-softmax": (7.4, 10.4), "LSH-1": (46.0, 19.2), "LSH-4": (112.0, 55.8),
    "Linear (ours)": (5.5, 7.3)})
KATHAROPOULOS_TABLE5_CIFAR10 = _table(_KT, "Table 5 (b)", "§C.2", ("Seconds (CPU)", "Seconds (GPU)"), {
    "Softmax": (8651.4, 300.1), "Stateful-softmax": (71.9, 70.4), "LSH-1": (2318.9, 221.6),
    "LSH-4": (5263.7, 683.9), "Linear (ours)": (45.1, 61.3)})
# Nguyen et al. Tables 2 (MNIST) and 3 (CIFAR-10); their images/s repeat Katharopoulos Tables 1-2 for the
# softmax and linear rows.
_MOMENTUM_ROWS = ("Standard softmax transformer", "Linear transformer", _MT, _MC, _AD)
MOMENTUM_TABLE2 = _table(_NG, "Table 2", "§4.2", ("Bits/dim", "Images/sec"), dict(zip(_MOMENTUM_ROWS, (
    (0.84, 0.45), (0.85, 142.8), (0.84, 139.7), (0.82, 135.5), (0.80, 134.9)), strict=True)))
MOMENTUM_TABLE3 = _table(_NG, "Table 3", "§4.2", ("Bits/dim", "Images/sec"), dict(zip(_MOMENTUM_ROWS, (
    (3.20, 0.004), (3.44, 17.85), (3.43, 17.52), (3.41, 17.11), (3.38, 17.07)), strict=True)))


@dataclass(frozen=True)
class TimingMachine:
    """What a paper says of the machine behind one column of timings: ``kind`` ("GPU", "CPU"; None where the
    paper does not say), ``card`` (None where the paper names none for these timings), the ``section`` that
    says it, and ``context``: the cards the paper does name, and for what."""

    kind: str | None
    card: str | None
    section: str
    context: str

    def describe(self, section: bool = True) -> str:
        """Short, for a table's row: "GPU, card not named (§C.2)", "machine not stated (§4.2)"."""
        where = f" ({self.section})" if section else ""
        if self.kind is None:
            return f"machine not stated{where}"
        return f"{self.kind}, {self.card or ('card' if self.kind == 'GPU' else 'model') + ' not named'}{where}"


# Neither paper names the card that timed its image generation. Katharopoulos et al. tie the MNIST throughput to
# what "a single GPU" holds (10,000 images generated at once, §4.2.1), and §C.2 times Table 5 "on the GPU" and on
# a CPU and compares the GPU column with Table 4's throughput; the cards the paper names are an NVidia GTX 1080 Ti
# (11 GB) for the synthetic benchmark of §4.1 and an NVidia P40 (24 GB), "the largest GPU that is available to
# us", for training the CIFAR-10 softmax model at batch 1 (§4.2.2). Nguyen et al. say nothing of the machine
# behind their images/s (§4.2), whose softmax and linear rows repeat Katharopoulos et al.'s; they name an NVIDIA
# V100 as the largest GPU available to them for training on CIFAR-10 (§4.2).
_K_CARDS = ("the paper names an NVidia GTX 1080 Ti for its synthetic benchmark (§4.1) and an NVidia P40 (24 GB) "
            "as the largest GPU it had, for training on CIFAR-10 (§4.2.2)")
_N_CARDS = ("the softmax and linear rows repeat Katharopoulos et al.'s; the paper names an NVIDIA V100 as the "
            "largest GPU it had, for training on CIFAR-10 (§4.2)")
_K_GPU = TimingMachine("GPU", None, "§C.2", _K_CARDS)
_GENERATION_MACHINES = {
    **{(_KT, t.table, "Images/sec"): TimingMachine("GPU", None, "§4.2.1, §C.2", _K_CARDS)
       for t in (KATHAROPOULOS_TABLE1, KATHAROPOULOS_TABLE2, KATHAROPOULOS_TABLE4_MNIST, KATHAROPOULOS_TABLE4_CIFAR10)},
    **{(_KT, t.table, "Seconds (GPU)"): _K_GPU for t in (KATHAROPOULOS_TABLE5_MNIST, KATHAROPOULOS_TABLE5_CIFAR10)},
    **{(_KT, t.table, "Seconds (CPU)"): TimingMachine("CPU", None, "§C.2", "the paper does not describe the CPU")
       for t in (KATHAROPOULOS_TABLE5_MNIST, KATHAROPOULOS_TABLE5_CIFAR10)},
    **{(_NG, t.table, "Images/sec"): TimingMachine(None, None, "§4.2", _N_CARDS)
       for t in (MOMENTUM_TABLE2, MOMENTUM_TABLE3)},
}


def timing_machine(table: PaperTable, column: str) -> TimingMachine:
    """What the paper says of the machine behind ``column`` of an image-generation ``table`` (images/s, seconds
    per image: Katharopoulos et al. Tables 1, 2, 4, 5; Nguyen et al. Tables 2, 3)."""
    if not isinstance(table, PaperTable):
        raise ValueError(f"table must be a PaperTable, got {table!r}")
    key = (table.paper, table.table, column)
    if key not in _GENERATION_MACHINES:
        timed = sorted(f"{p} {t}, {c!r}" for p, t, c in _GENERATION_MACHINES)
        raise ValueError(f"column {column!r} of {table.paper} {table.table} is not a generation timing; "
                         f"those are: {'; '.join(timed)}")
    return _GENERATION_MACHINES[key]


# Nguyen et al. Figure 1 caption (§4.1): training seconds per epoch of the copy task.
MOMENTUM_FIGURE1_EPOCH_SECONDS = _table(_NG, "Figure 1 (caption)", "§4.1", ("Seconds per epoch",), {
    "Softmax": (7.1,), "Reformer": (6.9,), "Linear": (6.4,), _MT: (6.5,), _MC: (6.6,), _AD: (6.8,)})

__all__ += ["KATHAROPOULOS_TABLE1", "KATHAROPOULOS_TABLE2", "KATHAROPOULOS_TABLE4_MNIST",
            "KATHAROPOULOS_TABLE4_CIFAR10", "KATHAROPOULOS_TABLE5_MNIST", "KATHAROPOULOS_TABLE5_CIFAR10",
            "MOMENTUM_TABLE2", "MOMENTUM_TABLE3", "MOMENTUM_FIGURE1_EPOCH_SECONDS", "TimingMachine",
            "timing_machine"]
# ---------------------------------------------------------------------------------------------------------------
# Long Range Arena and the speed/memory tables (notebooks/lra.md, notebooks/speed_memory.md).

# Momentum Transformer, Table 4: the numbers in parentheses, which the paper quotes from Xiong et al. (2021)
# (Nyströmformer) for the softmax Transformer.
MOMENTUM_TABLE4_XIONG = PaperTable(
    paper="nguyen2022momentum", table="Table 4 (parenthesised: Xiong et al. 2021)", section="§4.3", page=None,
    columns=_T4_COLUMNS,
    rows=_frozen({"Softmax": dict(zip(_T4_COLUMNS, (37.10, 65.02, 79.35, 38.20, 74.16, 58.77), strict=True))}),
)

# Luna (Ma et al. 2021), Table 1: LRA test accuracy (%); rows other than Luna are quoted by the paper from
# Tay et al. (2021), except "Transformer (re-impl)".
_L1_COLUMNS = ("ListOps", "Text", "Retrieval", "Image", "Pathfinder", "Avg.", "Avg. (w/o rtl)")
LUNA_TABLE1 = _table("ma2021luna", "Table 1", "§4.1", _L1_COLUMNS, {
        "Transformer": (36.37, 64.27, 57.46, 42.44, 71.40, 54.39, 53.62),
        "Transformer (re-impl)": (37.11, 65.21, 79.14, 42.94, 71.83, 59.24, 54.27),
        "Local Attention": (15.82, 52.98, 53.39, 41.46, 66.63, 46.06, 44.22),
        "Sparse Trans.": (17.07, 63.58, 59.59, 44.24, 71.71, 51.24, 49.15),
        "Longformer": (35.63, 62.85, 56.89, 42.22, 69.71, 53.46, 52.60),
        "Linformer": (35.70, 53.94, 52.27, 38.56, 76.34, 51.36, 51.14),
        "Reformer": (37.27, 56.10, 53.40, 38.07, 68.50, 50.67, 49.99),
        "Sinkhorn Trans.": (33.67, 61.20, 53.83, 41.23, 67.45, 51.39, 50.89),
        "Synthesizer": (36.99, 61.68, 54.67, 41.61, 69.45, 52.88, 52.43),
        "BigBird": (36.05, 64.02, 59.29, 40.83, 74.87, 55.01, 53.94),
        "Linear Trans.": (16.13, 65.90, 53.09, 42.34, 75.30, 50.55, 49.92),
        "Performer": (18.01, 65.40, 53.82, 42.77, 77.05, 51.41, 50.81),
        "Luna-16": (37.43, 65.74, 79.38, 46.39, 78.36, 61.46, 56.98),
        "Luna-128": (38.01, 65.74, 79.55, 47.47, 78.89, 61.93, 57.53),
        "Luna-256": (37.98, 65.78, 79.56, 47.86, 78.55, 61.95, 57.54),
})

# Luna, Table 2: training steps per second and peak memory on byte-level Text at 1K-4K, both relative to the
# Transformer (= 1.0). Columns "Steps/s <length>" and "Memory <length>".
_LENGTHS = ("1K", "2K", "3K", "4K")
_L2_COLUMNS = tuple(f"Steps/s {n}" for n in _LENGTHS) + tuple(f"Memory {n}" for n in _LENGTHS)
LUNA_TABLE2 = _table("ma2021luna", "Table 2", "§4.1", _L2_COLUMNS, {
        "Transformer": (1.0, 1.0, 1.0, 1.0, 1.00, 1.00, 1.00, 1.00),
        "Local Attention": (1.1, 1.7, 3.2, 5.3, 0.49, 0.29, 0.19, 0.14),
        "Linformer": (1.2, 1.9, 3.7, 5.5, 0.44, 0.21, 0.18, 0.10),
        "Reformer": (0.5, 0.4, 0.7, 0.8, 0.56, 0.37, 0.28, 0.24),
        "Sinkhorn Trans": (1.1, 1.6, 2.9, 3.8, 0.55, 0.31, 0.21, 0.16),
        "Synthesizer": (1.1, 1.2, 2.9, 1.4, 0.76, 0.75, 0.74, 0.74),
        "BigBird": (0.9, 0.8, 1.2, 1.1, 0.91, 0.56, 0.40, 0.30),
        "Linear Trans.": (1.1, 1.9, 3.7, 5.6, 0.44, 0.22, 0.15, 0.11),
        "Performer": (1.2, 1.9, 3.8, 5.7, 0.44, 0.22, 0.15, 0.11),
        "Luna-16": (1.2, 1.8, 3.7, 5.5, 0.44, 0.23, 0.17, 0.10),
        "Luna-128": (1.1, 1.7, 3.4, 5.1, 0.49, 0.28, 0.21, 0.14),
        "Luna-256": (1.1, 1.7, 3.3, 4.9, 0.60, 0.33, 0.23, 0.16),
})

# Luna, Table 3: the [CLS] token against mean pooling over the last layer's P. The paper leaves the P rows'
# average empty; those cells are absent.
LUNA_TABLE3 = PaperTable(
    paper="ma2021luna", table="Table 3", section="§4.1", page=None,
    columns=("ListOps", "Text", "Retrieval", "Avg."),
    rows=_frozen({
        "Luna-16, [CLS]": {"ListOps": 37.43, "Text": 65.74, "Retrieval": 79.38, "Avg.": 60.85},
        "Luna-16, P": {"ListOps": 38.06, "Text": 65.81, "Retrieval": 80.22},
        "Luna-128, [CLS]": {"ListOps": 38.01, "Text": 65.74, "Retrieval": 79.55, "Avg.": 61.10},
        "Luna-128, P": {"ListOps": 38.27, "Text": 65.89, "Retrieval": 80.27},
        "Luna-256, [CLS]": {"ListOps": 37.98, "Text": 65.78, "Retrieval": 79.56, "Avg.": 61.11},
        "Luna-256, P": {"ListOps": 38.36, "Text": 66.07, "Retrieval": 80.25},
    }),
)

# Luna, Table 7 (Appendix A.1): the hyper-parameters the authors tuned per LRA task.
LUNA_TABLE7 = PaperTable(
    paper="ma2021luna", table="Table 7", section="Appendix A.1", page=None,
    columns=("LR", "Dropout", "Attn-Dropout"),
    rows=_frozen({
        "ListOps": {"LR": 1e-4, "Dropout": 0.1, "Attn-Dropout": 0.1},
        "Text": {"LR": 5e-5, "Dropout": 0.3, "Attn-Dropout": 0.3},
        "Retrieval": {"LR": 5e-5, "Dropout": 0.1, "Attn-Dropout": 0.1},
        "Image": {"LR": 5e-3, "Dropout": 0.1, "Attn-Dropout": 0.3},
        "Pathfinder": {"LR": 1e-3, "Dropout": 0.2, "Attn-Dropout": 0.1},
    }),
)

__all__ += ["MOMENTUM_TABLE4_XIONG", "LUNA_TABLE1", "LUNA_TABLE2", "LUNA_TABLE3", "LUNA_TABLE7"]
