"""Benchmarks: scripts that time and measure, each against a baseline timed in the same run
(docs/design.md, "§8 Performance and benchmarks"). One timer for all: :mod:`lra_kit.bench.timing`."""
