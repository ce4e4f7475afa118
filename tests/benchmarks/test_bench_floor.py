"""The naive ingestion floor of the filings bench (benchmarks/documents/floor.py): its chunking and
its per-core sampler; the floor itself runs in `h3 bench --scenario filings`."""

from __future__ import annotations

import time

from benchmarks.documents.floor import CoreSampler, chunk_words


def test_blocks_are_packed_into_chunks_of_the_given_word_count_in_order():
    blocks = [" ".join(f"w{i}" for i in range(start, start + 7)) for start in range(0, 35, 7)]
    chunks = chunk_words(blocks, words=10)
    assert [len(c.split()) for c in chunks] == [10, 10, 10, 5]
    assert " ".join(chunks).split() == [f"w{i}" for i in range(35)]
    assert chunk_words([]) == []


def test_core_sampler_reports_one_figure_per_core():
    with CoreSampler(interval=0.05) as cores:
        end = time.perf_counter() + 0.3
        while time.perf_counter() < end:
            pass
    summary = cores.summary()
    assert summary["samples"] >= 2
    assert len(summary["per_core_percent"]) >= 1
    assert all(0.0 <= p <= 100.0 for p in summary["per_core_percent"])


def test_all_cores_busy_share_counts_the_samples_where_every_core_worked():
    cores = CoreSampler()
    cores.samples = [[100.0, 90.0], [100.0, 10.0], [80.0, 76.0], [0.0, 0.0]]
    summary = cores.summary()
    assert summary["all_cores_busy_share"] == 0.5
    assert summary["per_core_percent"] == [70.0, 44.0]
