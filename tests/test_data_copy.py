"""The copy task: 0 w 0 w, symbols 1..10, maximum length 128, seeded, loss on the second copy."""
import torch

from lra_kit.data import load
from lra_kit.data.tasks.copy_task import NUM_SYMBOLS, PAD_ID, SEPARATOR


def test_samples_have_the_papers_form():
    train = load("copy", "train", scale="paper")
    assert train.max_length == 128 and train.vocab_size == 12 and train.kind == "lm" and train.num_classes is None
    lengths = []
    for i in range(500):
        ids = train[i]
        n = (len(ids) - 2) // 2
        assert ids[0] == SEPARATOR and ids[n + 1] == SEPARATOR
        assert torch.equal(ids[1 : n + 1], ids[n + 2 :])
        assert ids[1 : n + 1].min() >= 1 and ids[1 : n + 1].max() <= NUM_SYMBOLS
        lengths.append(len(ids))
    assert max(lengths) <= 128 and min(lengths) >= 4


def test_seeded_and_split_specific():
    a, b = load("copy", "train", scale="smoke"), load("copy", "train", scale="smoke")
    assert all(torch.equal(a[i], b[i]) for i in range(20))
    test = load("copy", "test", scale="smoke")
    assert not all(torch.equal(a[i], test[i]) for i in range(20) if len(a[i]) == len(test[i]))
    assert not torch.equal(load("copy", "train", scale="smoke", seed=1)[0], a[0]) or len(a[0]) < 6


def test_collate_masks_padding_and_marks_second_copy():
    train = load("copy", "train", scale="smoke")
    batch = train.collate([train[i] for i in range(8)])
    ids, pad, loss = batch["input_ids"], batch["key_padding_mask"], batch["loss_mask"]
    assert ids.shape == pad.shape == loss.shape and pad.dtype == torch.bool and loss.dtype == torch.bool
    for row in range(8):
        n = (int((~pad[row]).sum()) - 2) // 2
        assert (ids[row][pad[row]] == PAD_ID).all()
        expected = torch.zeros_like(loss[row])
        expected[n + 2 : 2 * n + 2] = True
        assert torch.equal(loss[row], expected)


def test_paper_scale_word_lengths_follow_the_authors_code():
    """causal-copy/main.py draws |w| in [max_length // 4, (max_length - 1) // 2): 32..62 for 128."""
    from lra_kit.data.tasks.copy_task import load_copy

    data = load_copy("train", scale="paper", size=400)
    words = [(len(data[i]) - 2) // 2 for i in range(400)]
    assert min(words) >= 32 and max(words) <= 62
    assert min(words) <= 34 and max(words) >= 60  # the whole range is used
    assert data.metadata["word_length"] == "uniform 32..62"
    smoke = load_copy("train", scale="smoke", size=200)
    assert min((len(smoke[i]) - 2) // 2 for i in range(200)) == 1
