"""Synthetic long-context tasks and their scoring (RULER-style), shared by the runtime benches
(`benchmarks/runtime`) and the tests: what a task is lives here, how it is timed lives in a bench."""
