"""What `lra-kit bench attention --device cuda` computes from its timings, checked on a CPU with made-up timings:
the HBM bound, the ratios against fla's kernel and SDPA's backends, the targets' verdicts, the rows of methods
that could not run, the device's short name and the bandwidth the bound uses. (The timings themselves need a GPU.)"""
import warnings

import pytest
import torch

from lra_kit.bench import attention
from lra_kit.bench.attention import (
    DEFAULTS,
    GPU_METHODS,
    GPU_TARGETS,
    Unavailable,
    add_ratios,
    bound_ms,
    first_call,
    format_ratios,
    format_table,
    format_targets,
    io_bytes,
    judged_ratios,
    target_verdicts,
)
from lra_kit.bench.device import BANDWIDTH, choose_bandwidth, gpu_slug

SHAPE = dict(batch=4, heads=8, dim=64, element=2)  # the GPU defaults: B 4, H 8, D 64, bfloat16


def test_the_bound_counts_eleven_tensors_at_the_cards_bandwidth():
    # By hand: one tensor of 4 x 8 x 1024 x 64 bf16 elements is 4,194,304 bytes; forward + backward moves 11 of
    # them (read q, k, v, write o; read q, k, v, dO, write dq, dk, dv): 46,137,344 bytes. At 4.3 TB/s that is
    # 46,137,344 / 4.3e12 s = 10.7296 us.
    moved = io_bytes("linear", length=1024, backward=True, **SHAPE)
    assert moved == 46_137_344
    assert bound_ms(moved, 4.3e12) == pytest.approx(0.0107296, rel=1e-5)
    assert io_bytes("fla_chunk_linear", length=1024, backward=False, **SHAPE) == 16_777_216  # q, k, v, o
    assert bound_ms(moved, None) is None and bound_ms(None, 4.3e12) is None


def fake_rows(times_ms: dict, peaks_mib: dict, lengths=(1024, 32768, 65536)) -> list[dict]:
    """Rows as the benchmark makes them, with the given milliseconds (scaled by length / 1024 for all but SDPA,
    which is scaled by its square) and MiB."""
    rows = []
    for n in lengths:
        for m, ms in times_ms.items():
            scale = (n / 1024) ** 2 if m.startswith("sdpa") else n / 1024
            rows.append({"length": n, "method": m, "median_s": ms * scale / 1e3, "spread_s": 0.0, "warmup_s": 1.0,
                         "peak_bytes": int(peaks_mib[m] * n / 1024 * 2**20)})
    return rows


TIMES = {"sdpa_flash": 0.5, "sdpa_cudnn": 0.4, "fla_chunk_linear": 1.0, "linear": 1.1, "momentum": 1.43}
PEAKS = {"sdpa_flash": 30, "sdpa_cudnn": 31, "fla_chunk_linear": 40, "linear": 36, "momentum": 44}


def result_of(rows, unavailable=(), lengths=(1024, 32768, 65536)) -> dict:
    add_ratios(rows, [], bandwidth=4.3e12, **SHAPE)
    return {"config": {"lengths": list(lengths), "methods": list(GPU_METHODS), "batch": 4, "heads": 8, "dim": 64,
                       "dtype": "bfloat16", "repeats": 5, "sdpa_backend": "flash",
                       "bandwidth": {"bytes_per_s": 4.3e12, "source": "table: test", "measured_copy": 4.1e12}},
            "rows": rows, "prefill": [], "unavailable": list(unavailable), "device": "test card", "device_type": "cuda"}


def test_ratios_from_made_up_timings():
    result = result_of(fake_rows(TIMES, PEAKS))
    by = {(r["length"], r["method"]): r for r in result["rows"]}
    linear = by[(32768, "linear")]
    assert linear["time_vs_fla"] == pytest.approx(1.1)
    assert linear["memory_vs_fla"] == pytest.approx(36 / 40, rel=1e-6)
    assert linear["speedup_vs_cudnn"] == pytest.approx(0.4 * 32 / 1.1)  # SDPA's square against linear's line
    assert linear["speedup_vs_flash"] == pytest.approx(0.5 * 32 / 1.1)
    assert linear["bound_ms"] == pytest.approx(32 * 0.0107296, rel=1e-5)
    assert linear["time_over_bound"] == pytest.approx(1.1 * 32 / (32 * 0.0107296), rel=1e-5)
    assert by[(32768, "momentum")]["time_vs_linear"] == pytest.approx(1.3)
    assert by[(32768, "sdpa_cudnn")]["speedup_vs_cudnn"] is None  # SDPA is not compared with itself
    ratios = {r["length"]: r for r in judged_ratios(result)}
    assert ratios[65536]["linear_memory_vs_fla"] == pytest.approx(0.9, rel=1e-6)
    assert ratios[32768]["cudnn_over_linear"] == pytest.approx(0.4 * 32 / 1.1)
    assert ratios[1024]["momentum_over_linear"] == pytest.approx(1.3)
    assert ratios[1024]["linear"] == "linear"
    assert ratios[1024]["fla_over_bound"] == pytest.approx(1 / 0.0107296, rel=1e-5)
    text = format_ratios(result)
    assert "lin÷fla" in text and "cuDNN÷lin" in text and "SDPA÷lin" not in text  # no sdpa_causal in this run


def test_each_target_is_judged_at_its_lengths():
    verdicts = target_verdicts(judged_ratios(result_of(fake_rows(TIMES, PEAKS))))
    got = {(v["ratio"], v["length"], v["target"].split(",")[0]): v["met"] for v in verdicts}
    assert got[("linear_over_fla", 1024, "linear ÷ fla time ≤ 1.2")] is True  # 1.1 ≤ 1.2 at 1K
    assert got[("linear_over_fla", 32768, "linear ÷ fla time ≤ 1.0")] is False  # 1.1 > 1.0 at 32K
    assert ("linear_over_fla", 1024, "linear ÷ fla time ≤ 1.0") not in got  # that target starts at 16K
    assert got[("cudnn_over_linear", 32768, "cuDNN SDPA ÷ linear time ≥ 3.0")] is True  # 0.4 x 32 / 1.1 = 11.6
    assert [v["length"] for v in verdicts if v["ratio"] == "cudnn_over_linear"] == [32768]
    assert got[("momentum_over_linear", 65536, "momentum ÷ linear time ≤ 1.2")] is False  # 1.3
    assert got[("linear_memory_vs_fla", 65536, "linear ÷ fla peak memory (no threshold)")] is None  # printed only
    text = format_targets(result_of(fake_rows(TIMES, PEAKS)))
    assert "linear ÷ fla time ≤ 1.2, at 1K–4K: 1K 1.10 ✓" in text
    assert "cuDNN SDPA ÷ linear time ≥ 3.0, at 32K: 32K 11.64 ✓" in text
    assert "momentum ÷ linear time ≤ 1.2, every length: 1K 1.30 ✗" in text


def test_a_method_that_did_not_run_leaves_its_ratios_empty_and_says_why():
    rows = [r for r in fake_rows(TIMES, PEAKS) if r["method"] != "sdpa_cudnn"]
    why = "RuntimeError: No available kernel. Aborting execution.; cuDNN attention needs a newer card"
    result = result_of(rows, [{"length": n, "method": "sdpa_cudnn", "unavailable": why} for n in (1024, 32768, 65536)])
    ratios = {r["length"]: r for r in judged_ratios(result)}
    assert ratios[32768]["cudnn_over_linear"] is None and ratios[32768]["flash_over_linear"] is not None
    assert [v["met"] for v in target_verdicts(judged_ratios(result)) if v["ratio"] == "cudnn_over_linear"] == [None]
    table = format_table(result)
    assert f"  32768 sdpa_cudnn               unavailable: {why}" in table
    lines = table.splitlines()
    assert lines.index(f"  32768 sdpa_cudnn               unavailable: {why}") == 1 + next(
        i for i, line in enumerate(lines) if line.startswith("  32768 sdpa_flash"))  # in its place in the table
    assert "bound ms" in lines[2] and "bound: 11 tensors" in lines[1] and "4.30 TB/s (table: test" in lines[1]
    assert "cuDNN SDPA ÷ linear time ≥ 3.0, at 32K: 32K -\n" in format_targets(result)


def test_first_call_turns_a_missing_backend_into_a_reason_and_keeps_our_errors():
    def sdpa_without_kernel():
        def step():
            warnings.warn("Flash attention requires q, k, v of the same head size", stacklevel=1)
            raise RuntimeError("No available kernel. Aborting execution.")
        return step

    step, seconds, why = first_call("sdpa_cudnn", sdpa_without_kernel, torch.device("cpu"))
    assert step is None and seconds is None
    assert why == ("RuntimeError: No available kernel. Aborting execution.; "
                   "Flash attention requires q, k, v of the same head size")

    def not_installed():
        raise Unavailable("flash-linear-attention is not installed (pip install fla-core)")

    assert first_call("fla_chunk_linear", not_installed, torch.device("cpu"))[2].startswith("flash-linear")
    with pytest.raises(RuntimeError, match="No available kernel"):  # ours: a bug, not a missing backend
        first_call("linear", sdpa_without_kernel, torch.device("cpu"))
    step, seconds, why = first_call("linear", lambda: (lambda: None), torch.device("cpu"))
    assert callable(step) and seconds >= 0 and why is None


def test_the_gpu_defaults_are_the_rows_and_lengths_a_gpu_user_compares():
    assert attention.default_methods(torch.device("cuda")) == (
        "sdpa_flash", "sdpa_cudnn", "linear", "momentum", "fla_chunk_linear", "fla_chunk_linear_bare")
    assert attention.default_methods(torch.device("cpu")) == attention.METHODS
    assert {1024, 4096, 16384, 32768, 65536} <= set(DEFAULTS["cuda"][0])
    assert DEFAULTS["cuda"][1:] == (4, 8, "bfloat16")
    for t in GPU_TARGETS:  # every target's lengths are lengths of the default run
        assert any(t.applies(n) for n in DEFAULTS["cuda"][0]), t


@pytest.mark.parametrize("name, slug", [
    ("NVIDIA H200", "h200"), ("NVIDIA H100 80GB HBM3", "h100"), ("NVIDIA H100 PCIe", "h100-pcie"),
    ("NVIDIA A100-SXM4-80GB", "a100-sxm4"), ("NVIDIA GeForce RTX 4090", "rtx-4090"), ("NVIDIA GH200 480GB", "gh200"),
    ("cpu", "cpu"), ("NVIDIA", "gpu"),
])
def test_gpu_slug(name, slug):
    assert gpu_slug(name) == slug


def test_the_json_path_names_the_card(monkeypatch, tmp_path):
    monkeypatch.setattr(torch.cuda, "get_device_name", lambda device=None: "NVIDIA H100 80GB HBM3")
    asked = tmp_path / "attention-{gpu}.json"
    assert attention.json_path(asked, torch.device("cuda")) == tmp_path / "attention-h100.json"
    assert attention.json_path(asked, torch.device("cpu")) == tmp_path / "attention-cpu.json"
    assert attention.json_path(tmp_path / "x.json", torch.device("cuda")) == tmp_path / "x.json"


def test_the_bandwidth_comes_from_the_table_else_from_the_copy_measured_in_the_run():
    h200 = choose_bandwidth("NVIDIA H200", 4.21e12)
    assert h200["bytes_per_s"] == 4.3e12 and h200["source"].startswith("table: ") and h200["measured_copy"] == 4.21e12
    assert choose_bandwidth("NVIDIA H100 80GB HBM3", 2.9e12)["bytes_per_s"] == 3.35e12
    other = choose_bandwidth("NVIDIA A100-SXM4-80GB", 1.7e12)
    assert other["bytes_per_s"] == 1.7e12 and other["source"].startswith("measured: ")
    assert choose_bandwidth("cpu", None) == {"bytes_per_s": None, "source": None, "measured_copy": None}
    assert set(BANDWIDTH) == {"h200", "h100"}  # a key is a slug, as the lookup makes it
    with pytest.raises(ValueError, match="name"):
        gpu_slug(None)
