"""The LRA configurations at paper scale are the papers' (Luna Table 7; Nguyen et al. §4.3), and the
lra-cpu preset keeps the Momentum paper's model while saying what it shrinks."""
import pytest

from lra_kit.attention import attention_names
from lra_kit.errors import ConfigError
from lra_kit.paper_numbers import LUNA_TABLE7, MOMENTUM_TABLE1
from lra_kit.train.configs import PRESETS, get_config

TASKS = {"ListOps": "listops", "Text": "text", "Retrieval": "retrieval", "Image": "image", "Pathfinder": "pathfinder"}


@pytest.mark.parametrize("paper_task", sorted(TASKS))
def test_luna_paper_config_is_table7(paper_task):
    cfg = get_config(TASKS[paper_task], "luna", "paper")
    assert cfg.optim.lr == LUNA_TABLE7.value(paper_task, "LR")
    assert cfg.model.dropout == LUNA_TABLE7.value(paper_task, "Dropout")
    assert cfg.model.attention_dropout == LUNA_TABLE7.value(paper_task, "Attn-Dropout")


@pytest.mark.parametrize("task", sorted(TASKS.values()))
def test_momentum_paper_model_is_section_4_3(task):
    # Nguyen et al. §4.3: "2 layers, 64 embedding dimension, 128 hidden dimension, 2 attention heads. Mean pooling"
    m = get_config(task, "momentum", "paper", connection="adaptive").model
    assert (m.layers, m.d_model, m.d_ff, m.n_heads, m.pooling) == (2, 64, 128, 2, "mean")
    assert m.adaptive_over == "token"


@pytest.mark.parametrize("attention", [name for name in attention_names() if name != "luna"])  # Luna: LUNA_LRA
def test_lra_cpu_keeps_the_momentum_model_and_says_what_it_shrinks(attention):
    paper = get_config("image", attention, "paper").model
    cpu = get_config("image", attention, preset="lra-cpu")
    assert (cpu.model.layers, cpu.model.d_model, cpu.model.d_ff, cpu.model.n_heads, cpu.model.pooling) == \
        (paper.layers, paper.d_model, paper.d_ff, paper.n_heads, paper.pooling)
    assert cpu.scale == PRESETS["lra-cpu"]["base"] and cpu.scale_name == "lra-cpu"
    assert cpu.name == f"image-{cpu.attention_label}-lra-cpu"
    assert PRESETS["lra-cpu"]["shrunk"] in cpu.source
    assert cpu.train.steps < get_config("image", attention, "paper").train.steps


def test_lra_cpu_luna_stays_post_ln_and_preset_errors():
    assert get_config("text", "luna", preset="lra-cpu").model.norm == "post"
    assert get_config("text", "linear", preset="lra-cpu").data.options == {"max_length": 1024}
    with pytest.raises(ConfigError, match="preset"):
        get_config("copy", "linear", preset="lra-cpu")
    with pytest.raises(ConfigError, match="preset"):
        get_config("text", "linear", "smoke", preset="lra-cpu")
    with pytest.raises(ConfigError, match="preset"):
        get_config("text", "linear", preset="gpu-huge")


def test_lra_cpu_round_trips_through_a_saved_config():
    from lra_kit.train.configs import from_dict

    cfg = get_config("listops", "momentum", preset="lra-cpu", connection="adaptive")
    again = from_dict(cfg.to_dict())
    assert again.to_dict() == cfg.to_dict()


def test_cli_preset_reaches_the_config_and_refuses_a_second_scale(capsys, monkeypatch):
    from lra_kit.cli import main

    monkeypatch.setenv("LRA_KIT_SCALE", "smoke")  # a preset fixes its own data scale, whatever the environment
    assert main(["train", "--task", "text", "--attention", "linear", "--preset", "lra-cpu",
                 "--set", "train.steps=0"]) == 1
    assert "train.steps must be a positive integer" in capsys.readouterr().err  # the preset's config was built
    assert main(["train", "--task", "text", "--attention", "linear", "--preset", "lra-cpu", "--scale", "smoke"]) == 1
    assert "preset 'lra-cpu' runs on the 'book' scale's data" in capsys.readouterr().err


@pytest.mark.parametrize("paper_task", sorted(TASKS))
def test_momentum_configs_are_nguyen_table1(paper_task):
    # Nguyen et al. Table 1, the task's two rows: momentum attention's β, γ, and the adaptive connection's γ̃ (its β̃
    # is computed, eq. 18). The configs are typed in paper_configs.CONNECTION; this ties them to the paper's numbers.
    task = TASKS[paper_task]
    for row, connection in ((f"{paper_task} / Momentum transformer", "residual"),
                            (f"{paper_task} / Adaptive momentum transformer", "adaptive")):
        for scale in ("paper", "smoke"):
            m = get_config(task, "momentum", scale, connection=connection).model
            assert (m.attention_options["beta"], m.attention_options["gamma"]) == (
                MOMENTUM_TABLE1.value(row, "Momentum"), MOMENTUM_TABLE1.value(row, "Stepsize")), (row, scale)
            if connection == "adaptive":
                assert m.connection_gamma == MOMENTUM_TABLE1.value(row, "Stepsize in Momentum Connection"), (row, scale)
