"""Benchmarks: scripts that time and measure, each against a baseline timed in the same run (GUIDE §9)."""
