"""Synthetic long-context tasks and their scoring (RULER-style), shared by the runtime benches
(`h3_runtime/bench`) and the tests: what a task is lives here, how it is timed lives in a bench."""
