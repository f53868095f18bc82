"""The real (offline) datasets under LRA_KIT_DATA: split sizes and labels against the published numbers."""
import warnings

import numpy as np
import pytest
import torch
from data_helpers import require_shared_data

from lra_kit.data import load
from lra_kit.data.formats import byte_tokenizer as bt
from lra_kit.data.formats.pixels import rgb_to_gray
from lra_kit.data.tasks.pixel_lm import TRAIN_SIZE

pytestmark = pytest.mark.data


def test_text_imdb_25k_25k_bytes_and_presets():
    require_shared_data("imdb")
    train, test = load("text", "train", scale="paper"), load("text", "test", scale="paper")
    assert (len(train), len(test)) == (25_000, 25_000)
    assert np.bincount(train.labels()).tolist() == [12_500, 12_500] == np.bincount(test.labels()).tolist()
    assert train.vocab_size == 257 and train.max_length == 4000 and train.metadata["val_source"] == "test"
    assert len(load("text", "val", scale="paper")) == 25_000  # LRA: dev = test
    ids, _ = train[int(np.argmax(train.lengths()))]
    assert len(ids) == 4000 and int(ids.min()) >= 1
    nys = load("text", "train", scale="paper", preset="nystromformer")
    batch = nys.collate([nys[0], nys[1]])
    assert batch["input_ids"].shape[1] == 1024 and batch["key_padding_mask"][:, 1000:].all()
    hold_train = load("text", "train", scale="paper", val_source="holdout")
    hold_val = load("text", "val", scale="paper", val_source="holdout")
    assert (len(hold_train), len(hold_val)) == (22_500, 2_500)


def test_byte_round_trip():
    text = "Bromwell High is a cartoon comedy. Caf\u00e9 \u2014 \U0001F600"
    assert bt.decode(bt.encode(text)) == text and bt.encode(text).min() >= 1


def test_image_cifar10_45k_5k_10k_grayscale():
    require_shared_data("cifar10-jpeg")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        sizes = [len(load("image", s, scale="paper")) for s in ("train", "val", "test")]
        test = load("image", "test", scale="paper")
    assert sizes == [45_000, 5_000, 10_000]
    assert test.vocab_size == 256 and test.num_classes == 10 and test.max_length == 1024
    assert np.bincount(test.labels()).tolist() == [1000] * 10
    assert test.metadata["lossy"] is True and "JPEG" in test.metadata["copy"]
    ids, _ = test[0]
    assert len(ids) == 1024 and 0 <= int(ids.min()) and int(ids.max()) <= 255


def test_tf_grayscale_formula():
    rgb = np.array([[[255, 255, 255], [0, 0, 0], [255, 0, 0], [0, 255, 0], [0, 0, 255], [10, 20, 30]]], np.uint8)
    # floor(255.5 * sum(w * x / 255)) with w = (0.2989, 0.5870, 0.1140)
    assert rgb_to_gray(rgb).tolist() == [[255, 0, 76, 149, 29, 18]]


def test_mnist_pixels_for_generation():
    require_shared_data("mnist")
    sizes = [len(load("mnist", s, scale="paper")) for s in ("train", "val", "test")]
    assert sizes == [55_000, 5_000, 10_000] and sizes[0] == TRAIN_SIZE["mnist"]
    test = load("mnist", "test", scale="paper")
    assert test.kind == "lm" and test.max_length == 784 and test.vocab_size == 256 and test.pad_id == 256
    batch = test.collate([test[0], test[1]])
    assert batch["input_ids"].shape == (2, 784) and not batch["key_padding_mask"].any()
    assert int(batch["input_ids"].max()) <= 255 and (batch["input_ids"] == 0).any()


def test_cifar10_pixels_for_generation_flag_lossy_copy():
    require_shared_data("cifar10-jpeg")
    with pytest.warns(UserWarning, match="lossy"):
        test = load("cifar10", "test", scale="smoke")
    assert test[0].shape == (3072,) and test.metadata["lossy"] is True and test.max_length == 3072
    assert test[0].dtype == torch.long
