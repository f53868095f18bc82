"""A seeded, parallel ListOps generator written from the LRA generation procedure.

Procedure (google-research/long-range-arena ``lra_benchmarks/data/listops.py``, read at
commit cd31e5c; docs/reference-implementations.md §6):

* a node at depth < ``max_depth`` is an operator with probability ``VALUE_P = 0.25``,
  otherwise a digit 0-9; at ``max_depth`` it is always a digit; the root has depth 1;
* an operator (MIN, MAX, MED, SM, uniform) has ``randint(2, max_args)`` arguments;
* ``length`` counts 1 per digit and 2 per operator (the operator and its ``]``), i.e. the
  number of tokens once brackets are dropped; a tree is kept if
  ``min_length < length < max_length``; kept trees are de-duplicated;
* 96,000 / 2,000 / 2,000 train / val / test, ``max_depth = max_args = 10``,
  ``min_length = 500``, ``max_length = 2000``.

The official script has no seed. Here candidate trees are drawn in chunks, chunk ``c``
from ``random.Random`` seeded by ``SeedSequence([seed, c])``; chunks run on all cores and
are merged in chunk order, so the output depends only on the seed and the parameters,
not on the number of processes. A tree is abandoned as soon as it reaches ``max_length``
(it would be rejected anyway), which keeps generation fast.
"""
from __future__ import annotations

import multiprocessing
import os
import random
import sys
from dataclasses import asdict, dataclass

import numpy as np
from tqdm.auto import tqdm

from lra_kit.data.formats.listops import OPERATORS, apply_operator

VALUE_P = 0.25


@dataclass(frozen=True)
class ListOpsConfig:
    """Generation parameters; the defaults are LRA's ``basic`` task."""

    num_train: int = 96_000
    num_val: int = 2_000
    num_test: int = 2_000
    max_depth: int = 10
    max_args: int = 10
    min_length: int = 500
    max_length: int = 2_000
    seed: int = 0

    def __post_init__(self):
        if self.max_depth < 1 or self.max_args < 2:
            raise ValueError(f"max_depth must be >= 1 and max_args >= 2, got {self.max_depth}, {self.max_args}")
        if not 0 <= self.min_length < self.max_length - 1:
            raise ValueError(f"need 0 <= min_length < max_length - 1, got {self.min_length}, {self.max_length}")
        if min(self.num_train, self.num_val, self.num_test) < 0:
            raise ValueError("split sizes must be >= 0")

    @property
    def total(self) -> int:
        return self.num_train + self.num_val + self.num_test

    def as_dict(self) -> dict:
        return asdict(self)


class _TooLong(Exception):
    pass


def _tree(rng: random.Random, depth: int, cfg: ListOpsConfig, out: list, budget: list) -> int:
    """Append the serialisation of a random subtree to ``out``; return its value.

    ``budget[0]`` is the length still allowed; running out raises ``_TooLong``.
    """
    if depth < cfg.max_depth and rng.random() <= VALUE_P:
        k = rng.randint(2, cfg.max_args)
        op = OPERATORS[rng.randrange(4)]
        budget[0] -= 2
        if budget[0] < 0:
            raise _TooLong
        out.append("( " * (k + 1) + op + " ")
        args = []
        for j in range(k):
            if j:
                out.append(" ) ")
            args.append(_tree(rng, depth + 1, cfg, out, budget))
        out.append(" ) ] )")
        return apply_operator(op, args)
    budget[0] -= 1
    if budget[0] < 0:
        raise _TooLong
    value = rng.randrange(10)
    out.append(str(value))
    return value


def sample_tree(rng: random.Random, cfg: ListOpsConfig) -> tuple[str, int, int] | None:
    """One candidate: ``(expression, value, length)``, or None if it reached ``max_length``."""
    out: list[str] = []
    budget = [cfg.max_length - 1]  # length must stay < max_length
    try:
        value = _tree(rng, 1, cfg, out, budget)
    except _TooLong:
        return None
    return "".join(out), value, cfg.max_length - 1 - budget[0]


def _chunk_rng(seed: int, chunk: int) -> random.Random:
    state = np.random.SeedSequence([seed, chunk]).generate_state(2, dtype=np.uint64)
    return random.Random(int(state[0]) << 64 | int(state[1]))


def generate_chunk(args: tuple[dict, int, int]) -> list[tuple[str, int]]:
    """``size`` accepted ``(expression, label)`` pairs of chunk ``chunk`` (a worker's unit)."""
    cfg_dict, chunk, size = args
    cfg = ListOpsConfig(**cfg_dict)
    rng = _chunk_rng(cfg.seed, chunk)
    rows = []
    while len(rows) < size:
        sample = sample_tree(rng, cfg)
        if sample is not None and sample[2] > cfg.min_length:
            rows.append((sample[0], sample[1]))
    return rows


def _pool(workers: int):
    method = "fork" if sys.platform == "linux" else "spawn"
    return multiprocessing.get_context(method).Pool(workers)


def generate(cfg: ListOpsConfig, *, workers: int | None = None, chunk_size: int = 500,
             progress: bool = True) -> dict[str, list[tuple[str, int]]]:
    """Generate the three splits: ``{"train": [(expression, label), ...], "val": ..., "test": ...}``."""
    workers = workers or os.cpu_count() or 1
    seen: dict[str, int] = {}
    next_chunk = 0
    bar = tqdm(total=cfg.total, desc="listops", unit="tree", disable=not progress)

    def consume(rows):
        for expression, label in rows:
            if len(seen) < cfg.total and expression not in seen:
                seen[expression] = label
                bar.update(1)

    while len(seen) < cfg.total:
        missing = cfg.total - len(seen)
        n_chunks = -(-missing // chunk_size)
        jobs = [(cfg.as_dict(), next_chunk + c, chunk_size) for c in range(n_chunks)]
        next_chunk += n_chunks
        if workers == 1 or n_chunks == 1:
            for job in jobs:
                consume(generate_chunk(job))
        else:
            with _pool(min(workers, n_chunks)) as pool:
                for rows in pool.imap(generate_chunk, jobs):  # imap keeps chunk order
                    consume(rows)
    bar.close()
    rows = list(seen.items())
    a, b = cfg.num_train, cfg.num_train + cfg.num_val
    return {"train": rows[:a], "val": rows[a:b], "test": rows[b:]}
