"""LRA Retrieval (AAN): loader on a fixture in the exact official format; unavailability."""
import pytest
from data_helpers import FIXTURES

from lra_kit.data import DataMissingError, DataUnreadableError, load
from lra_kit.data.formats import byte_tokenizer as bt
from lra_kit.data.tasks.retrieval import TEXT_CUT, read_pairs


@pytest.fixture(autouse=True)
def isolated_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("LRA_KIT_CACHE", str(tmp_path / "cache"))


def test_fixture_pairs_load_as_dual_encoder_items():
    train = load("retrieval", "train", scale="paper", root=FIXTURES / "aan")
    assert len(train) == 3 and train.kind == "retrieval" and train.vocab_size == 257 and train.num_classes == 2
    (ids1, ids2), label = train[0]
    assert label == 1 and bt.decode(ids1) == "Parsing with CCG: a survey of methods."
    assert bt.decode(train[2][0][1]) == "Unicode test: na\u00efve caf\u00e9 \u2014 ok."
    assert [train[i][1] for i in range(3)] == [1, 0, 1]
    assert len(train[1][0][1]) == 4000  # long document truncated to 4,000 bytes
    batch = train.collate([train[0], train[1]])
    assert set(batch) == {"input_ids_1", "key_padding_mask_1", "input_ids_2", "key_padding_mask_2", "labels"}
    assert batch["input_ids_2"].shape == (2, 4000)
    assert batch["key_padding_mask_2"][0].sum() == 4000 - len("Statistical parsing of English.")
    assert len(load("retrieval", "val", scale="paper", root=FIXTURES / "aan")) == 1  # val = the .eval file


def test_documents_cut_at_10000_bytes_before_encoding():
    first, second, labels, ids = read_pairs(FIXTURES / "aan" / "new_aan_pairs.train.tsv")
    assert len(second[1]) == TEXT_CUT and ids[0] == ("P00-1001", "P99-1002")


def test_missing_corpus_is_a_clear_error(tmp_path, monkeypatch):
    monkeypatch.setenv("LRA_KIT_DATA", str(tmp_path))
    with pytest.raises(DataMissingError) as info:
        load("retrieval", "test")
    message = str(info.value)
    assert "new_aan_pairs.test.tsv" in message and "missing" in message and "lra-kit data fetch lra" in message
    assert "not in the offline data" in message


def test_malformed_file_is_unreadable(tmp_path):
    (tmp_path / "new_aan_pairs.train.tsv").write_text("label\tonly three\tcolumns\n")
    with pytest.raises(DataUnreadableError, match="line 1"):
        load("retrieval", "train", root=tmp_path)
