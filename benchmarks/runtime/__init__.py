"""Benchmarks of the runtime (registered in pipelines/cli/bench.py)."""
