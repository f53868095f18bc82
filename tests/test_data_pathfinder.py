"""Pathfinder-32: generator validity and determinism, official layout round trip, sample grid."""
import math

import numpy as np
import pytest

from lra_kit.data import load
from lra_kit.data.tasks.pathfinder import read_layout, sample_grid, split_indices, write_layout
from lra_kit.data.generators.pathfinder import DIFFICULTIES, PathfinderConfig, generate, generate_sample


def _centre_line(paddles, per=9):
    t = np.linspace(0, 1, per)[:, None]
    return np.concatenate([np.array(p[:2]) + t * (np.array(p[2:]) - np.array(p[:2])) for p in paddles])


@pytest.mark.parametrize("difficulty", tuple(DIFFICULTIES))
def test_markers_sit_on_the_same_path_iff_positive(difficulty):
    cfg = PathfinderConfig(contour_length=DIFFICULTIES[difficulty][1], seed=5)
    for index in range(16):
        sample = generate_sample(cfg, index)
        lines = [_centre_line(p) for p in sample.paths]
        assert all(len(p) == cfg.contour_length for p in sample.paths[:2])
        owners = []
        for x, y, _ in sample.markers:
            # the drawn path nearest to the marker centre, which must be one of its ends
            dist = [np.hypot(*(line - (x, y)).T).min() for line in lines]
            owner = int(np.argmin(dist))
            assert dist[owner] < 1e-6
            ends = [sample.paths[owner][0][:2], sample.paths[owner][-1][2:]]
            assert min(math.dist((x, y), e) for e in ends) < 1e-6
            assert sample.image[min(int(y), 31), min(int(x), 31)] > 100  # a visible marker
            owners.append(owner)
        assert (owners[0] == owners[1]) == bool(sample.label)
        # positive: the two ends of one path; negative: ends of the two different target paths
        if sample.label:
            assert math.dist(sample.markers[0][:2], sample.markers[1][:2]) > 0
        for i in range(len(lines)):  # paths never cross or touch (thickness 1 px)
            for j in range(i + 1, len(lines)):
                gap = np.sqrt(((lines[i][:, None] - lines[j][None]) ** 2).sum(-1)).min()
                assert gap >= 1.0


def test_generator_is_deterministic_and_independent_of_workers():
    cfg = PathfinderConfig(contour_length=9, seed=11)
    a_img, a_lab = generate(cfg, 40, workers=1, chunk=10, progress=False)
    b_img, b_lab = generate(cfg, 40, workers=2, chunk=10, progress=False)
    assert a_img.tobytes() == b_img.tobytes() and a_lab.tolist() == b_lab.tolist()
    assert a_lab.tolist() == [1, 0] * 20  # balanced
    c_img, _ = generate(PathfinderConfig(contour_length=9, seed=12), 4, workers=1, progress=False)
    assert c_img.tobytes() != a_img[:4].tobytes()
    assert a_img.dtype == np.uint8 and a_img.shape == (40, 32, 32) and 0 < a_img.mean() < 128


def test_layout_round_trip_and_loader(tmp_path, monkeypatch):
    monkeypatch.setenv("LRA_KIT_CACHE", str(tmp_path / "cache"))
    cfg = PathfinderConfig(contour_length=14, seed=2)
    images, labels = generate(cfg, 30, workers=1, progress=False)
    folder = write_layout(images, labels, tmp_path / "out", "hard", cfg)
    assert folder.name == "curv_contour_length_14"
    assert (folder / "metadata" / "0.npy").is_file() and (folder / "imgs" / "0" / "sample_0.png").is_file()
    rows = np.load(folder / "metadata" / "0.npy")
    assert rows.shape == (30, 11) and rows[0, 0] == "imgs/0" and rows[0, 1] == "sample_0.png"
    back_images, back_labels = read_layout(folder, progress=False)
    assert np.array_equal(back_images, images) and np.array_equal(back_labels, labels)
    test = load("pathfinder", "test", scale="paper", root=tmp_path / "out", difficulty="hard")
    keep = split_indices(30, "test")
    assert len(test) == 3 and test.metadata["source"] == "layout"
    assert np.array_equal(test[0][0].numpy(), images[keep[0]].reshape(-1))


def test_splits_are_80_10_10_and_disjoint():
    parts = [split_indices(200_000, s) for s in ("train", "val", "test")]
    assert [len(p) for p in parts] == [160_000, 20_000, 20_000]
    assert len(np.unique(np.concatenate(parts))) == 200_000


def test_smoke_dataset_and_sample_grid_artifact(tmp_path, monkeypatch, tmp_path_factory):
    monkeypatch.setenv("LRA_KIT_CACHE", str(tmp_path))
    monkeypatch.setenv("LRA_KIT_DATA", str(tmp_path / "nothing"))
    train = load("pathfinder", "train", scale="smoke", progress=False)
    assert len(train) == 256 and train.vocab_size == 256 and train.pad_id == 256 and train.num_classes == 2
    batch = train.collate([train[i] for i in range(4)])
    assert batch["input_ids"].shape == (4, 1024) and not batch["key_padding_mask"].any()
    assert (batch["input_ids"] == 0).any()  # black pixels are real tokens, not padding
    n = 24
    grid = sample_grid(train.sequences.values[: n * 1024].reshape(n, 32, 32), train.labels()[:n],
                       tmp_path_factory.getbasetemp() / "pathfinder_samples.png")
    assert grid.stat().st_size > 1000
    print(f"Pathfinder sample grid: {grid}")


def test_count_splits_the_first_images_of_the_generated_set(tmp_path, monkeypatch):
    """``count`` images are the first ``count`` of the scale's set (an image depends on its index only)."""
    monkeypatch.setenv("LRA_KIT_CACHE", str(tmp_path))
    monkeypatch.setenv("LRA_KIT_DATA", str(tmp_path / "nothing"))
    full, _ = generate(PathfinderConfig(contour_length=DIFFICULTIES["hard"][1]), 100, workers=1, progress=False)
    test = load("pathfinder", "test", scale="smoke", count=100, workers=1, progress=False)
    keep = split_indices(100, "test")
    assert len(test) == 10 and test.metadata["count"] == 100
    assert np.array_equal(test.sequences.values.reshape(10, 32, 32), full[keep])
    for bad in (0, 9, 2.5, True, "100"):
        with pytest.raises(ValueError, match="count must be an int >= 10"):
            load("pathfinder", "test", scale="smoke", count=bad, progress=False)
