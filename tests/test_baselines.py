import json

import numpy as np
import pytest

from lra_kit.baselines import compare_with_rule, first_token_rule, main
from lra_kit.data.base import SequenceClassificationDataset
from lra_kit.data.formats import listops as fmt
from lra_kit.data.store.ragged import Ragged
from lra_kit.data.generators.listops import ListOpsConfig
from lra_kit.data.tasks.listops import load_listops, write_generated


def dataset(sequences, labels, id_offset=0):
    return SequenceClassificationDataset(Ragged.from_sequences([np.array(s) for s in sequences]), labels,
                                         id_offset=id_offset, task="t", split="train", vocab_size=20, num_classes=10,
                                         max_length=8, pad_id=0)


def test_the_rule_is_each_first_tokens_most_frequent_label():
    # first token 3 → labels 7, 7, 2 (rule 7); first token 4 → 1, 7 (a tie: the smaller, 1); overall 7
    train = dataset([[3, 9], [3], [3, 1, 1], [4, 2], [4]], [7, 7, 2, 1, 7])
    test = dataset([[3, 5], [4, 4], [4], [6, 6]], [7, 1, 2, 7])  # 6 was never first in train: overall label 7
    scored = first_token_rule(train, test)
    assert scored["rule"] == {3: 7, 4: 1}
    assert scored["accuracy"] == 3 / 4 and scored["count"] == 4  # right, right, wrong, right
    assert scored["majority"] == 2 / 4  # always 7


def test_the_rule_reads_token_ids_not_stored_values():
    # bytes are stored raw and shifted by id_offset; the rule is keyed by the ids a model reads
    train = dataset([[0, 5], [1]], [3, 4], id_offset=1)
    assert first_token_rule(train, train)["rule"] == {1: 3, 2: 4}


def test_listops_outermost_operator_beats_answering_one_value(tmp_path, monkeypatch):
    # LRA's generator (depth up to 10, up to 10 arguments) with short expressions, 2,000 to fit, 1,000 to score
    monkeypatch.setenv("LRA_KIT_CACHE", str(tmp_path / "cache"))
    monkeypatch.setenv("LRA_KIT_DATA", str(tmp_path / "data"))
    cfg = ListOpsConfig(2000, 10, 1000, min_length=20, max_length=200, seed=3)
    write_generated(cfg, tmp_path / "data" / "lra_release" / "listops-1000", progress=False)
    train, test = (load_listops(s, scale="paper", source="official") for s in ("train", "test"))
    scored = first_token_rule(train, test)
    assert set(scored["rule"]) <= {fmt.TOKEN_ID[op] for op in fmt.OPERATORS}  # every expression starts with one
    assert scored["rule"][fmt.TOKEN_ID[fmt.MAX]] == 9 and scored["rule"][fmt.TOKEN_ID[fmt.MIN]] == 0
    assert scored["accuracy"] > scored["majority"] + 0.1


def test_bad_input_is_named():
    with pytest.raises(TypeError, match="train must be a SequenceClassificationDataset"):
        first_token_rule([([1], 0)], dataset([[1]], [0]))
    with pytest.raises(ValueError, match="test must hold"):
        first_token_rule(dataset([[1]], [0]), dataset([[1], []], [0, 1]))


def test_the_record_names_its_data_and_scores_dev_and_test(tmp_path, monkeypatch):
    monkeypatch.setenv("LRA_KIT_CACHE", str(tmp_path))
    monkeypatch.setenv("LRA_KIT_DATA", str(tmp_path / "nothing"))
    monkeypatch.setattr("lra_kit.train.configs.PRESETS", {"tiny": {
        "base": "smoke", "tasks": ("listops",), "values": {}, "per_task": {}, "shrunk": ()}})
    assert main(["--task", "listops", "--preset", "tiny", "--record-dir", str(tmp_path / "rec")]) == 0
    record = json.loads((tmp_path / "rec" / "listops-first-token-tiny.json").read_text())
    assert record["scale"] == "tiny" and record["config"]["data_scale"] == "smoke" and record["git_commit"]
    train, test = (load_listops(s, scale="smoke", progress=False) for s in ("train", "test"))
    assert record["metrics"]["test"]["accuracy"] == first_token_rule(train, test)["accuracy"]
    assert set(record["metrics"]) == {"val", "test"}


@pytest.mark.data
def test_agreement_of_a_trained_run_reads_its_best_weights_and_its_data(tmp_path):
    from lra_kit.baselines import rule_agreement
    from lra_kit.data import load
    from lra_kit.train.configs import apply_overrides, get_config
    from lra_kit.train.trainer import Trainer

    cfg = apply_overrides(get_config("listops", "linear", "smoke"), ["train.steps=6", "train.eval_every=3"])
    results = Trainer(cfg, str(tmp_path / "run"), progress=False, log=lambda *a, **k: None).run()
    scored = rule_agreement(str(tmp_path / "run"))
    assert scored["checkpoint"] == "best.pt" and scored["count"] == results["metrics"]["test"]["count"]
    assert scored["model_accuracy"] == pytest.approx(results["metrics"]["test"]["accuracy"])
    train, test = (load("listops", s, scale="smoke") for s in ("train", "test"))
    assert scored["rule_accuracy"] == first_token_rule(train, test)["accuracy"]
    right, wrong = scored["model_accuracy_where_rule_right"], scored["model_accuracy_where_rule_wrong"]
    n, n_wrong = scored["count"], scored["rule_wrong_count"]
    assert right * (n - n_wrong) + wrong * n_wrong == pytest.approx(scored["model_accuracy"] * n)


def test_comparison_with_the_rule_counts_each_case():
    scored = compare_with_rule(by_model=[1, 2, 3, 4, 5], by_rule=[1, 2, 0, 0, 5], labels=[1, 0, 3, 4, 6],
                               first=[11, 11, 12, 12, 12])
    # same answer: 1st, 2nd, 5th; model right: 1st, 3rd, 4th; rule right: 1st
    assert scored["agreement"] == 3 / 5 and scored["model_accuracy"] == 3 / 5 and scored["rule_accuracy"] == 1 / 5
    assert scored["model_accuracy_where_rule_right"] == 1.0 and scored["model_accuracy_where_rule_wrong"] == 2 / 4
    assert scored["rule_wrong_count"] == 4 and scored["count"] == 5
    assert scored["by_first_token"] == {
        11: {"count": 2, "agreement": 1.0, "model_accuracy": 0.5, "rule_accuracy": 0.5},
        12: {"count": 3, "agreement": 1 / 3, "model_accuracy": 2 / 3, "rule_accuracy": 0.0}}
    with pytest.raises(ValueError, match="by_model, by_rule, labels and first must be 1-D of one length"):
        compare_with_rule([1, 2], [1], [1, 2], [3, 3])
