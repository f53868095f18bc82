"""ListOps: tokenizer, evaluator, generator and loaders (lra_kit.data.tasks.listops*)."""
import gzip
import time

import numpy as np
import torch
import pytest
from data_helpers import FIXTURES, require_shared_data

from lra_kit.data.formats import listops as fmt
from lra_kit.data.tasks.listops import load_listops, scale_config, write_generated
from lra_kit.data.generators.listops import ListOpsConfig, generate


@pytest.mark.data
def test_original_listops_test_set_evaluates_to_its_labels():
    """External check: all 10,000 lines of Nangia & Bowman's test_d20s.tsv."""
    path = require_shared_data("listops-nangia-bowman") / "test_d20s.tsv.gz"
    with gzip.open(path, "rt") as handle:
        lines = handle.read().splitlines()
    assert len(lines) == 10_000
    wrong = [line for line in lines if fmt.evaluate_ids(fmt.tokenize(line.split("\t")[1])) != int(line.split("\t")[0])]
    assert wrong == []


def test_official_serialisation_and_tokens():
    expression = "( ( ( [MAX 2 ) 3 ) ] )"
    ids = fmt.tokenize(expression)
    assert fmt.detokenize(ids) == "[MAX 2 3 ]"
    assert fmt.evaluate(expression) == 3
    assert fmt.VOCAB_SIZE == 16 and fmt.PAD_ID == 0 and 0 not in ids


def test_tokenize_round_trip_on_generated_trees():
    rows = generate(ListOpsConfig(20, 0, 0, min_length=5, max_length=100), progress=False)["train"]
    for expression, _ in rows:
        without_brackets = " ".join(t for t in expression.split() if t not in "()")
        assert fmt.detokenize(fmt.tokenize(expression)) == without_brackets


@pytest.mark.parametrize("args,expected", [([1, 2], 1), ([3, 8], 5), ([0, 9], 4), ([9, 1, 4], 4), ([2, 2, 7, 8], 4)])
def test_median_is_lra_int_of_numpy_median(args, expected):
    assert fmt.apply_operator(fmt.MED, args) == expected == int(np.median(args))


def test_unknown_token_is_a_clear_error():
    with pytest.raises(ValueError, match="unknown ListOps token"):
        fmt.tokenize("( [FIRST 1 ) ] )")


def test_generated_trees_are_valid():
    cfg = ListOpsConfig(150, 20, 20, min_length=50, max_length=400, seed=3)
    splits = generate(cfg, progress=False)
    assert {k: len(v) for k, v in splits.items()} == {"train": 150, "val": 20, "test": 20}
    all_rows = [r for rows in splits.values() for r in rows]
    assert len({e for e, _ in all_rows}) == len(all_rows)  # de-duplicated
    for expression, label in all_rows:
        ids = fmt.tokenize(expression)
        assert cfg.min_length < len(ids) < cfg.max_length
        assert fmt.evaluate_ids(ids) == label
        depth = max_depth = 0
        for tok in ids:  # depth and arity within the limits
            if fmt.VOCAB[tok] in fmt.OPERATORS:
                depth += 1
                max_depth = max(max_depth, depth)
            elif fmt.VOCAB[tok] == fmt.END:
                depth -= 1
        assert max_depth <= cfg.max_depth - 1  # leaves sit at depth max_depth at most


def test_generator_is_deterministic_and_independent_of_workers(tmp_path):
    cfg = ListOpsConfig(300, 30, 30, min_length=20, max_length=300, seed=7)
    write_generated(cfg, tmp_path / "a", workers=1, progress=False)
    write_generated(cfg, tmp_path / "b", workers=2, progress=False)
    for name in ("basic_train.tsv", "basic_val.tsv", "basic_test.tsv"):
        assert (tmp_path / "a" / name).read_bytes() == (tmp_path / "b" / name).read_bytes()
    other = generate(ListOpsConfig(300, 30, 30, min_length=20, max_length=300, seed=8), progress=False)
    assert other["train"][0][0] != fmt.read_tsv(tmp_path / "a" / "basic_train.tsv")[0][0]


def test_paper_scale_parameters_are_lra_basic():
    cfg = scale_config("paper")
    assert (cfg.num_train, cfg.num_val, cfg.num_test) == (96_000, 2_000, 2_000)
    assert (cfg.max_depth, cfg.max_args, cfg.min_length, cfg.max_length) == (10, 10, 500, 2000)


def test_full_length_generation_speed():
    """A sample of full-length (500 < L < 2000) trees: fast enough for first-use generation."""
    cfg = ListOpsConfig(200, 0, 0)
    start = time.perf_counter()
    rows = generate(cfg, workers=1, progress=False)["train"]
    assert all(500 < len(fmt.tokenize(e)) < 2000 for e, _ in rows)
    assert time.perf_counter() - start < 10  # about 1 ms per tree here: 100,000 trees in ~1-2 min


def test_official_fixture_loader_and_generated_round_trip(tmp_path, monkeypatch):
    monkeypatch.setenv("LRA_KIT_CACHE", str(tmp_path / "cache"))
    expressions, labels = fmt.read_tsv(FIXTURES / "listops" / "basic_train.tsv")
    assert len(expressions) == 4 and [fmt.evaluate(e) for e in expressions] == labels.tolist()
    # generated files placed where the official release lives are read by the official path
    release = tmp_path / "data" / "lra_release" / "listops-1000"
    cfg = ListOpsConfig(40, 10, 10, min_length=10, max_length=80, seed=1)
    write_generated(cfg, release, progress=False)
    monkeypatch.setenv("LRA_KIT_DATA", str(tmp_path / "data"))
    dataset = load_listops("val", scale="paper", source="official")
    assert dataset.metadata["source"] == "official" and len(dataset) == 10
    rows = fmt.read_tsv(release / "basic_val.tsv")
    for (ids, label), expression, expected in zip(dataset, rows[0], rows[1], strict=True):
        assert ids.tolist() == fmt.tokenize(expression).tolist() and label == expected


def test_smoke_dataset(tmp_path, monkeypatch):
    monkeypatch.setenv("LRA_KIT_CACHE", str(tmp_path))
    monkeypatch.setenv("LRA_KIT_DATA", str(tmp_path / "nothing"))
    train = load_listops("train", scale="smoke", progress=False)
    assert len(train) == 256 and train.num_classes == 10 and train.vocab_size == 16 and train.kind == "classification"
    ids, label = train[0]
    assert ids.dtype == torch.int64 and fmt.evaluate_ids(ids.tolist()) == label
    again = load_listops("train", scale="smoke", progress=False)
    assert all(torch_equal(train[i][0], again[i][0]) for i in range(10))


def torch_equal(a, b):
    return a.shape == b.shape and bool((a == b).all())
