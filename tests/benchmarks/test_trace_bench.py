"""`h3 bench --scenario trace`: its streams are replayable and of the kind they say, and the
replay's figures separate the policies (placeholder blocks here; the scenario reads real KV)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from benchmarks.cli import SCENARIOS
from benchmarks.runtime.trace import (
    KINDS,
    Unit,
    dry_figures,
    load_corpus,
    make_trace,
    seed_spread,
)
from h3_runtime.config import H3Config

ROOT = Path(__file__).resolve().parents[2]


def shipped_config() -> H3Config:
    return H3Config.load(ROOT / "h3_config.yaml", strict=False)


def corpus(docs: int = 3, per_doc: int = 30, topics: int = 6, seed: int = 0) -> list[Unit]:
    """Units with clustered vectors (a topic per cluster), in reading order per document."""
    rng = np.random.default_rng(seed)
    centres = rng.normal(size=(topics, 16))
    units = []
    for d in range(docs):
        for i in range(per_doc):
            v = centres[rng.integers(topics)] + 0.3 * rng.normal(size=16)
            units.append(Unit(f"d{d}:c{i}", f"d{d}", i, 1, "text", "", v / np.linalg.norm(v)))
    return units


def test_scenario_is_registered():
    assert SCENARIOS["trace"] == "benchmarks.runtime.trace:run_trace"


@pytest.mark.parametrize("kind", KINDS)
def test_streams_are_replayable_and_well_formed(kind):
    units = corpus()
    a, b = make_trace(kind, units, 24), make_trace(kind, units, 24)
    assert [q.evidence for q in a] == [q.evidence for q in b]
    assert len(a) == 24 and all(len(q.evidence) == 3 and q.evidence[0] == q.focus for q in a)


def test_sequential_stream_reads_forward_in_one_document():
    units = corpus()
    trace = make_trace("sequential", units, 8)
    orders = [units[j].order for q in trace for j in q.evidence]
    assert len({units[j].doc for q in trace for j in q.evidence}) == 1
    assert orders == list(range(orders[0], orders[0] + len(orders)))


def test_short_documents_read_in_order_only_where_a_passage_fits():
    # a store of one- and two-chunk documents (small PDFs) has no passage of 3 chunks: a clear
    # error, not a stream that never fills; one longer document is enough for every reading
    short = corpus(docs=4, per_doc=2)
    with pytest.raises(ValueError, match="at least 3 usable chunks; the largest here has 2"):
        make_trace("sequential", short, 8)
    mixed = short + [u for u in corpus(docs=5, per_doc=6) if u.doc == "d4"]
    trace = make_trace("sequential", mixed, 8)
    assert len(trace) == 8 and {mixed[q.focus].doc for q in trace} == {"d4"}
    for kind in ("zipf", "drift", "burst"):  # the others need no passage
        assert len(make_trace(kind, short, 8)) == 8


def test_a_home_without_a_store_is_an_error_naming_it(tmp_path):
    # (the bench turns FileNotFoundError into one line: h3 bench: scenario trace: ...)
    with pytest.raises(FileNotFoundError, match="no document store"):
        load_corpus(tmp_path / "nowhere", 2, 4)
    assert not (tmp_path / "nowhere").exists()  # looking created nothing
    (tmp_path / "empty" / "lancedb").mkdir(parents=True)
    with pytest.raises(FileNotFoundError, match="no documents stored"):
        load_corpus(tmp_path / "empty", 2, 4)


def _store(home: Path, chunks_of: dict[str, int]) -> None:
    """A LanceDB store of documents (file name -> chunk count) whose chunks all fit a unit."""
    import lancedb

    db = lancedb.connect(str(home / "lancedb"))
    db.create_table("documents", [{"doc_id": f"id{i}", "source": f"pdfs/{name}", "status": "ok"}
                                  for i, name in enumerate(chunks_of)])
    rng = np.random.default_rng(0)
    db.create_table("chunks", [
        {"doc_id": f"id{i}", "chunk_id": f"id{i}:c{c}", "page": 1, "text": "figures",
         "fts_text": "", "section": "", "token_count": 120,
         "vector": rng.normal(size=8).astype(np.float32).tolist()}
        for i, n in enumerate(chunks_of.values()) for c in range(n)])


def test_each_half_takes_documents_with_a_full_share_of_chunks_first(tmp_path):
    # the companies alternate tune / check alphabetically: AAA, CCC tune; BBB, DDD check. A
    # short file (an 8-K's few chunks) sorting first must not shrink its half's corpus
    _store(tmp_path, {"AAA_2023_8K.pdf": 3, "AAA_2022_10K.pdf": 10, "CCC_2021_10K.pdf": 10,
                      "BBB_2022_10K.pdf": 10, "DDD_2022_10K.pdf": 2})
    halves = load_corpus(tmp_path, 2, 10)
    assert len(halves["tune"]) == 20
    assert {u.doc for u in halves["tune"]} == {"id1", "id2"}
    # where too few documents have a full share, the shorter ones are used
    assert len(halves["check"]) == 12


def test_unknown_kind_is_an_error_naming_it():
    with pytest.raises(ValueError, match="spiral"):
        make_trace("spiral", corpus(), 4)


def test_prefetch_makes_the_next_passage_warm_and_no_cache_never_is():
    units = corpus()
    sizes = {u.key: 1 << 20 for u in units}
    warm = len(units) // 4 << 20
    trace = make_trace("sequential", units, 24)
    cfg = shipped_config()
    ahas = dry_figures(units, trace, cfg, warm, sizes, "ahas")
    lru = dry_figures(units, trace, cfg, warm, sizes, "lru")
    none = dry_figures(units, trace, cfg, warm, sizes, "none")
    assert ahas["next_section_first_use_warm"] >= 0.5 > lru["next_section_first_use_warm"]
    # the prefetches replace blocks this stream reads again only once: AHAS reads no more bytes
    # from disk than no cache at all, but for the stream's first question's deep prefetch (a
    # jump with no reading before it), and serves most reads from memory
    first_guess = cfg.hbf.corpus_jump_prefetch_window * (1 << 20)
    assert none["warm_hit_rate"] == 0
    assert ahas["cold_bytes_read"] <= none["cold_bytes_read"] + first_guess
    off = dry_figures(units, trace, cfg, warm, sizes, "ahas", off=("sequential_prefetch",))
    assert off["warm_hit_rate"] < ahas["warm_hit_rate"]


def test_seed_spread_is_the_mean_of_each_streams_replay():
    units = corpus()
    sizes = {u.key: 1 << 20 for u in units}
    warm = len(units) // 4 << 20
    cfg = shipped_config()
    spread = seed_spread(units, cfg, warm, sizes, "sequential", seeds=3, n=16)
    own = [dry_figures(units, make_trace("sequential", units, 16, seed=s), cfg, warm, sizes,
                       "ahas")["warm_hit_rate"] for s in range(3)]
    assert spread["warm_hit_rate_mean"]["ahas"] == round(sum(own) / 3, 4)
    assert spread["warm_hit_rate_mean"]["none"] == 0
    margin = spread["ahas_minus_lru"]
    assert margin["min"] <= margin["mean"] <= margin["max"] and margin["min"] > 0  # prefetch


def test_drift_misses_count_every_read_once_and_only_prefetch_saves_a_first_read():
    from benchmarks.runtime.trace import drift_misses

    units = corpus()
    sizes = {u.key: 1 << 20 for u in units}
    warm = len(units) // 4 << 20
    cfg = shipped_config()
    tally = drift_misses(units, cfg, warm, sizes, seeds=2, n=20,
                         policies=("ahas", "lru", "none"))
    reads = sum(len(q.evidence) for s in range(2) for q in make_trace("drift", units, 20, seed=s))
    for parts in tally.values():
        assert sum(row["hit"] + row["miss"] for row in parts.values()) == reads
    # a block's first read is a hit only when something brought it before it was asked for
    for policy in ("lru", "none"):
        assert tally[policy]["first_read_topic_start"]["hit"] == 0
        assert tally[policy]["first_read_later"]["hit"] == 0
    assert tally["ahas"]["first_read_later"]["hit"] > 0
    assert tally["none"]["re_read"]["hit"] == 0 < tally["lru"]["re_read"]["hit"]
