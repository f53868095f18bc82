"""Records name their machine (issue 50, item 6): lscpu's model name, the cores, and the ISA flags that change CPU
timings, read by lra_kit.results.machine_info and written by make_results into every record."""
from lra_kit.bench.generation_tables import machine_label
from lra_kit.results import ISA_FLAGS, machine_info, make_results

LSCPU = """Architecture:                            x86_64
CPU(s):                                  2
Model name:                              Intel(R) Xeon(R) Platinum 8481C CPU @ 2.70GHz
Flags:                                   fpu sse2 avx2 avx512f avx512_bf16 amx_tile amx_bf16 hypervisor
"""
CPUINFO = """processor\t: 0
model name\t: AMD EPYC 7B13
flags\t\t: fpu sse2 avx2
"""


def test_model_and_flags_from_lscpu():
    info = machine_info("cpu", lscpu_text=LSCPU, cpuinfo_text="")
    assert info["cpu_model"] == "Intel(R) Xeon(R) Platinum 8481C CPU @ 2.70GHz"
    assert info["isa"] == ["avx2", "avx512f", "avx512_bf16", "amx_tile", "amx_bf16"]
    assert info["cpu_cores"] >= 1 and info["torch_threads"] >= 1
    assert "gpu" not in info


def test_proc_cpuinfo_where_lscpu_says_nothing():
    info = machine_info("cpu", lscpu_text="", cpuinfo_text=CPUINFO)
    assert info["cpu_model"] == "AMD EPYC 7B13" and info["isa"] == ["avx2"]


def test_every_record_carries_this_machine():
    record = make_results(metrics={}, config={}, scale="smoke", steps=0, seed=0, wall_s=0.0, device="cpu")
    here = machine_info("cpu")
    assert record["machine"]["cpu_model"] == here["cpu_model"]
    assert set(record["machine"]["isa"]) <= set(ISA_FLAGS)


def test_the_generation_tables_name_the_model_and_its_isa():
    record = {"device": "cpu", "config": {"threads": 1}, "machine": machine_info("cpu", LSCPU, "")}
    assert machine_label(record) == "CPU (Intel(R) Xeon(R) Platinum 8481C CPU @ 2.70GHz, AVX-512, AMX, 1 thread)"
    assert machine_label({"device": "cpu", "processor": "x86_64", "config": {}}) == "CPU (x86_64)"  # older records
