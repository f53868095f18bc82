"""``lra-kit bench ...`` sub-commands."""
from __future__ import annotations

import argparse

from lra_kit.bench import attention, generation, generation_profile, steps, training


def add_parser(subparsers) -> None:
    bench = subparsers.add_parser("bench", help="benchmarks against SDPA measured in the same run")
    sub = bench.add_subparsers(dest="bench_command", metavar="BENCHMARK", required=True)
    p = sub.add_parser("attention", help="forward+backward time and peak memory of each attention vs SDPA",
                       description=attention.__doc__)
    attention.add_arguments(p)
    p.set_defaults(func=attention.main_from_args)
    p = sub.add_parser("generation", help="seconds per generated image: softmax, KV cache, linear, momentum",
                       description=generation.__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    generation.add_arguments(p)
    p.set_defaults(func=generation.main_from_args)
    p = sub.add_parser("decode-profile", help="where a generated pixel's time goes: the lean step under the profiler",
                       description=generation_profile.__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    generation_profile.add_arguments(p)
    p.set_defaults(func=generation_profile.main_from_args)
    p = sub.add_parser("training", help="training steps/s and peak memory of the LRA Text model (Luna Table 2)",
                       description=training.__doc__)
    training.add_arguments(p)
    p.set_defaults(func=training.main_from_args)
    p = sub.add_parser("steps", help="seconds per training step of the recorded CPU runs' presets, one thread",
                       description=steps.__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    steps.add_arguments(p)
    p.set_defaults(func=steps.main_from_args)
