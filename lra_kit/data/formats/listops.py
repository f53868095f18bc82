"""ListOps expressions: the official serialisation, the tokenizer and an exact evaluator.

Facts used (cited, no code copied):

* Serialisation (google-research/long-range-arena ``lra_benchmarks/data/listops.py``,
  ``to_string``; the same as Nangia & Bowman 2018): an operator with arguments a1..ak is
  the left-nested pairs ``((((op a1) a2) ...) ak) ]`` written with ``( `` and `` )``, e.g.
  ``[MAX 2 3]`` -> ``( ( ( [MAX 2 ) 3 ) ] )``.
* Semantics (same file, ``to_value``): MIN, MAX, MED = ``int(np.median)`` (the mean of the
  two middle values, truncated, for an even count), SM = sum mod 10.
* Files: ``basic_{train,val,test}.tsv`` with a ``Source<TAB>Target`` header, written by
  ``csv.writer(delimiter='\\t')`` (so rows end in ``\\r\\n``).
* Tokenizer (LRA ``listops/input_pipeline.py``, docs/reference-implementations.md §6): brackets ``(`` ``)`` are dropped,
  ``]`` kept as a closing token (LRA renames it ``X``), whitespace-separated tokens.

Token ids here are fixed (LRA builds its vocabulary from the validation file, so its ids
depend on the data): 0 = padding, digits 0-9 -> 1..10, ``[MIN [MAX [MED [SM`` -> 11..14,
``]`` -> 15.
"""
from __future__ import annotations

import csv
import io
from pathlib import Path

import numpy as np

MIN, MAX, MED, SM, END = "[MIN", "[MAX", "[MED", "[SM", "]"
OPERATORS = (MIN, MAX, MED, SM)
DIGITS = tuple(str(d) for d in range(10))
PAD_ID = 0
VOCAB = ("<pad>",) + DIGITS + OPERATORS + (END,)
TOKEN_ID = {tok: i for i, tok in enumerate(VOCAB)}
VOCAB_SIZE = len(VOCAB)  # 16
NUM_CLASSES = 10
HEADER = ("Source", "Target")

_SKIP = -1
_LOOKUP = dict(TOKEN_ID, **{"(": _SKIP, ")": _SKIP})


def apply_operator(op: str, args: list[int]) -> int:
    """The value of ``op`` on ``args``, exactly as LRA's ``to_value`` computes it."""
    if op == MIN:
        return min(args)
    if op == MAX:
        return max(args)
    if op == SM:
        return sum(args) % 10
    if op == MED:
        s = sorted(args)
        n = len(s)
        # int(np.median(...)) of non-negative integers: the mean of the middle pair, floored
        return s[n // 2] if n % 2 else (s[n // 2 - 1] + s[n // 2]) // 2
    raise ValueError(f"operator must be one of {OPERATORS}, got {op!r}")


def tokenize(expression: str) -> np.ndarray:
    """Token ids (int16) of an expression in the official bracket serialisation."""
    try:
        ids = np.fromiter(map(_LOOKUP.__getitem__, expression.split()), dtype=np.int16)
    except KeyError as err:
        raise ValueError(f"unknown ListOps token {err.args[0]!r}; tokens are {VOCAB[1:]} and brackets") from None
    return ids[ids != _SKIP]


def detokenize(ids) -> str:
    """Tokens joined by spaces (brackets are not restored: the tokenizer drops them)."""
    return " ".join(VOCAB[int(i)] for i in ids if int(i) != PAD_ID)


def evaluate_ids(ids) -> int:
    """Exact value of a tokenized expression (prefix operators, ``]`` closes), by a stack."""
    stack: list[list] = []
    value = None
    for i in ids:
        tok = VOCAB[int(i)]
        if tok in OPERATORS:
            stack.append([tok])
        elif tok == END:
            if not stack:
                raise ValueError("unbalanced expression: ']' without an operator")
            op, *args = stack.pop()
            if not args:
                raise ValueError(f"operator {op} has no arguments")
            value = apply_operator(op, args)
            if stack:
                stack[-1].append(value)
        elif tok in DIGITS:
            value = int(tok)
            if stack:
                stack[-1].append(value)
        else:
            raise ValueError(f"unexpected token {tok!r}")
    if stack or value is None:
        raise ValueError("unbalanced or empty expression")
    return value


def evaluate(expression: str) -> int:
    """Exact value of an expression in the official serialisation."""
    return evaluate_ids(tokenize(expression))


def write_tsv(path: Path | io.TextIOBase, rows) -> None:
    """Write ``(expression, label)`` rows in the official LRA format (header, tab, csv.writer)."""
    if isinstance(path, (str, Path)):
        with open(path, "w", newline="") as handle:
            write_tsv(handle, rows)
        return
    writer = csv.writer(path, delimiter="\t")
    writer.writerow(HEADER)
    writer.writerows(rows)


def read_tsv(path: Path) -> tuple[list[str], np.ndarray]:
    """Expressions and labels of an official ``basic_*.tsv`` (header ``Source<TAB>Target``)."""
    from lra_kit.data.store.errors import DataUnreadableError

    expressions, labels = [], []
    with open(path, newline="") as handle:
        header = handle.readline().rstrip("\r\n").split("\t")
        if tuple(header) != HEADER:
            raise DataUnreadableError(path, f"first line must be the header {'<TAB>'.join(HEADER)}, got {header!r}")
        for number, line in enumerate(handle, start=2):
            line = line.rstrip("\r\n")
            if not line:
                continue
            parts = line.split("\t")
            if len(parts) != 2 or not parts[1].strip().isdigit():
                raise DataUnreadableError(path, f"line {number}: expected 'expression<TAB>label', got {line[:80]!r}")
            expressions.append(parts[0])
            labels.append(int(parts[1]))
    return expressions, np.asarray(labels, dtype=np.int64)
