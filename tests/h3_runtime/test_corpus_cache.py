"""The corpus KV cache (kvcache/corpus.py) and its policies (scheduler/corpus_policy.py): blocks
served from the fastest tier, budgets, LRU / LFU / none / AHAS decisions, one test per config
key the cache reads (changing the key changes an outcome), and the real path: stored document KV
read through the cache by `ReuseRuntime` gives the same answer under every policy."""

from __future__ import annotations

import pytest
import torch

from h3_runtime.config import H3Config, HbfConfig, SchedulerConfig
from h3_runtime.kvcache.block import KVBlock
from h3_runtime.kvcache.checksum import IntegrityError, block_checksum
from h3_runtime.kvcache.cold import KVBlockStore
from h3_runtime.kvcache.corpus import GIB, CorpusKVCache
from h3_runtime.scheduler.corpus_policy import RULES, make_policy

MB = 2**20


class Blocks:
    """A cold tier double holding 1 MB-described blocks (unit tests; the real store below)."""

    def __init__(self) -> None:
        self.reads: list[str] = []

    def load(self, key: str) -> KVBlock:
        self.reads.append(key)
        z = torch.full((1, 1, 2, 2), float(len(key)))
        return KVBlock(z, z.clone(), 0)


def cache(policy: str = "ahas", warm_blocks: int = 3, hot_blocks: int = 1,
          scheduler: SchedulerConfig | None = None, hbf: HbfConfig | None = None,
          n: int = 12, vectors: dict[str, torch.Tensor] | None = None) -> CorpusKVCache:
    c = CorpusKVCache(Blocks(), make_policy(policy, scheduler, hbf), hot_bytes=hot_blocks * MB,
                      warm_bytes=warm_blocks * MB)
    for i in range(n):
        key = f"b{i}"
        c.describe(key, nbytes=MB, group="doc", order=i,
                   vector=None if vectors is None else vectors.get(key))
    return c


def ask(c: CorpusKVCache, *keys: str, vector: torch.Tensor | None = None) -> list[str]:
    c.begin_question(vector)
    for k in keys:
        c.get(k)
    return c.end_question()["tiers"]


def test_served_from_warm_after_a_cold_read_and_counted_once_a_question():
    c = cache("lru")
    assert ask(c, "b0", "b0", "b1") == ["cold", "cold"]  # b0 twice: the request's own copy
    assert ask(c, "b0") in (["warm"], ["hot"])
    assert c.cold.reads == ["b0", "b1"]
    assert c.stats()["warm_hit_rate"] == pytest.approx(1 / 3, abs=1e-3)
    assert c.stats()["cold_bytes_read"] == 2 * MB


def test_none_reads_every_question_from_cold():
    c = cache("none")
    ask(c, "b0")
    assert ask(c, "b0") == ["cold"]
    assert c.stats()["warm_hit_rate"] == 0 and not c.warm


def test_warm_budget_is_never_exceeded_and_lru_drops_the_least_recent():
    c = cache("lru", warm_blocks=2, hot_blocks=0)
    for k in ("b0", "b1", "b2"):
        ask(c, k)
    assert set(c.warm) == {"b1", "b2"} and c._used(c.warm) <= 2 * MB


def test_lfu_keeps_the_most_used():
    c = cache("lfu", warm_blocks=2, hot_blocks=0)
    for k in ("b0", "b0", "b0", "b1", "b2"):
        ask(c, k)
    assert "b0" in c.warm and "b1" not in c.warm


def test_blocks_from_the_real_store_are_the_stored_bytes_in_every_tier(tmp_path):
    store = KVBlockStore(tmp_path / "kv", GIB)
    k, v = torch.randn(2, 1, 8, 4).half(), torch.randn(2, 1, 8, 4).half()
    store.store("x-all", KVBlock(k, v, block_checksum(k, v)))
    c = CorpusKVCache(store, make_policy("lru"), hot_bytes=10**6, warm_bytes=10**6,
                      serve_dtype=torch.float32)
    c.begin_question()
    cold = c.get("x-all")
    c.end_question()
    c.begin_question()
    warm = c.get("x-all")
    c.end_question()
    assert torch.equal(cold.keys, k.float()) and torch.equal(warm.keys, cold.keys)
    assert c.stats()["cold_bytes_read"] == k.nbytes + v.nbytes


def test_sequential_reading_is_prefetched():
    c = cache("ahas", warm_blocks=6)
    ask(c, "b0", "b1")
    ask(c, "b2", "b3")  # forward in the same document: the next two come to warm
    assert c.last_pattern == "sequential"
    assert ask(c, "b4", "b5")[:2] == ["warm", "warm"]
    assert c.counters.prefetch_used == 2


def test_a_prefetch_of_a_corrupted_block_is_skipped_and_counted(tmp_path):
    # the prefetch runs between questions, off any question's path: a block failing its checksum
    # there must not fail the question that just ended (`h3 ask` did, with a traceback)
    store = KVBlockStore(tmp_path / "kv", GIB)
    for i in range(6):
        k, v = torch.full((1, 1, 4, 4), float(i)).half(), torch.randn(1, 1, 4, 4).half()
        store.store(f"b{i}", KVBlock(k, v, block_checksum(k, v)))
    path = store.path_for("b4")
    data = bytearray(path.read_bytes())
    data[-3] ^= 0xFF  # a value byte: the file parses, the checksum fails
    path.write_bytes(bytes(data))
    c = CorpusKVCache(store, make_policy("ahas"), hot_bytes=0, warm_bytes=10**6)
    for i in range(6):
        c.describe(f"b{i}", nbytes=64, group="doc", order=i)
    ask(c, "b0", "b1")
    ask(c, "b2", "b3")  # forward in the document: b4 and b5 are prefetched, b4 is corrupted
    assert "b5" in c.warm and "b4" not in c.warm
    assert c.stats()["prefetch_integrity_errors"] == 1
    with pytest.raises(IntegrityError, match="checksum"):  # asked for, it is the caller's error
        ask(c, "b4")


def test_unknown_rule_or_policy_is_an_error_naming_it():
    with pytest.raises(ValueError, match="nonsense"):
        make_policy("ahas", off=("nonsense",))
    with pytest.raises(ValueError, match="mru"):
        make_policy("mru")
    assert set(RULES) >= {"frequency", "cold_demotion", "semantic_prefetch"}


# ---- one test per key the cache reads: changing it changes an outcome ---------------------------

def test_key_runtime_corpus_cache_picks_the_policy():
    for name in ("ahas", "lru", "lfu", "none"):
        cfg = H3Config().replace("runtime", corpus_cache=name)
        assert CorpusKVCache.from_config(Blocks(), cfg).policy.name == name


def test_keys_runtime_hbm_and_hbf_size_gb_are_the_hot_and_warm_budgets():
    cfg = H3Config().replace("runtime", hbm_size_gb=0.25, hbf_size_gb=0.5)
    c = CorpusKVCache.from_config(Blocks(), cfg)
    assert (c.hot_budget, c.warm_budget) == (GIB // 4, GIB // 2)


def _frequency_vs_recency(alpha: float) -> set[str]:
    """b0 read three times long ago, then b1..b3 once each, warm holds three: which stay."""
    c = cache("ahas", warm_blocks=3, hot_blocks=0, hbf=HbfConfig(prefetch_window=0),
              scheduler=SchedulerConfig(ahaz_alpha=alpha, relevance_weight=0.0))
    for k in ("b0", "b0", "b0", "b1", "b2", "b3"):
        ask(c, k)
    return set(c.warm)


def test_key_scheduler_ahaz_alpha_decays_frequency():
    assert "b0" in _frequency_vs_recency(0.999)  # three reads outweigh one
    assert "b0" not in _frequency_vs_recency(0.1)  # decayed to nothing


def test_ahas_makes_the_latest_questions_blocks_hot_first():
    """Hot holds one block: the one the latest question read, not the most read one (heat
    ranks the rest; with the rule off, heat alone: the most read block)."""
    def hot(off: tuple[str, ...] = ()) -> set[str]:
        c = CorpusKVCache(Blocks(), make_policy("ahas", off=off), hot_bytes=MB, warm_bytes=4 * MB)
        for i in range(4):
            c.describe(f"b{i}", nbytes=MB, group="doc", order=10 * i)  # no reading on: no prefetch
        for keys in (("b0",), ("b0",), ("b0",), ("b2",)):
            ask(c, *keys)
        return set(c.hot)

    assert hot() == {"b2"} and hot(off=("latest_hot",)) == {"b0"}


def _drift(scheduler: SchedulerConfig, hbf: HbfConfig | None = None) -> CorpusKVCache:
    """Warm full of blocks of topic A; a question jumps back (not forward in the document) to
    topic B: is B's neighbour prefetched."""
    a, b = torch.tensor([1.0, 0.0]), torch.tensor([0.0, 1.0])
    vectors = {"b6": a, "b7": a, "b8": a, "b1": b, "b2": b, "b3": b + 0.1 * a}
    c = cache("ahas", warm_blocks=3, hot_blocks=0, scheduler=scheduler, hbf=hbf,
              vectors=vectors)
    ask(c, "b6", "b7", "b8", vector=a)
    ask(c, "b1", vector=b)
    return c


def test_key_scheduler_corpus_replaceable_share_lets_prefetches_replace_cool_blocks():
    assert _drift(SchedulerConfig(corpus_replaceable_share=0.5)).counters.prefetched >= 1
    assert _drift(SchedulerConfig(corpus_replaceable_share=0.0)).counters.prefetched == 0  # full


def test_key_hbf_prefetch_window_sets_how_many_blocks_a_question_prefetches():
    def prefetched(window: int) -> int:
        c = cache("ahas", warm_blocks=8, hbf=HbfConfig(prefetch_window=window))
        ask(c, "b0")
        ask(c, "b1")
        return c.counters.prefetched

    assert (prefetched(0), prefetched(1), prefetched(3)) == (0, 1, 3)


def test_key_hbf_corpus_prefetch_similarity_bars_jump_prefetches():
    roomy = SchedulerConfig(corpus_replaceable_share=1.0)  # both topic-A blocks replaceable
    near = _drift(roomy, HbfConfig(corpus_prefetch_similarity=0.5))
    far = _drift(roomy, HbfConfig(corpus_prefetch_similarity=0.999))
    assert (near.counters.prefetched, far.counters.prefetched) == (2, 1)


def _topic_change(hbf: HbfConfig) -> tuple[int, int]:
    """Blocks prefetched after a question that jumps from topic A to topic B, then after a
    second question on topic B (each reads one block; B has six more blocks to bring)."""
    a, b = torch.tensor([1.0, 0.0]), torch.tensor([0.0, 1.0])
    vectors = {"b11": a, **{f"b{i}": b + 0.01 * i * a for i in range(3, 11)}}
    c = cache("ahas", warm_blocks=12, hot_blocks=0, hbf=hbf, vectors=vectors)
    ask(c, "b11", vector=a)  # each question reads back in the document: no sequential reading
    before = c.counters.prefetched
    ask(c, "b10", vector=b)  # a jump (not forward in the document) to a new topic
    jumped = c.counters.prefetched - before
    ask(c, "b3", vector=b)  # the same topic again
    return jumped, c.counters.prefetched - before - jumped


def test_key_hbf_corpus_jump_prefetch_window_is_how_deep_a_topic_change_prefetches():
    assert _topic_change(HbfConfig(prefetch_window=1, corpus_jump_prefetch_window=4)) == (4, 1)
    assert _topic_change(HbfConfig(prefetch_window=1, corpus_jump_prefetch_window=1)) == (1, 1)
    off = CorpusKVCache(Blocks(), make_policy("ahas", off=("jump_depth",)), hot_bytes=0,
                        warm_bytes=12 * MB)
    assert off.policy.off == frozenset({"jump_depth"})


def test_a_deep_prefetch_waits_until_the_last_one_was_read():
    """Topic B's question prefetches deep; the jump to topic C goes deep again only if a block
    of B's prefetch was read in between."""
    a, b, c3 = (torch.tensor([1.0, 0.0, 0.0]), torch.tensor([0.0, 1.0, 0.0]),
                torch.tensor([0.0, 0.0, 1.0]))
    vectors = {"b11": a, **{f"b{i}": b + 0.01 * i * a for i in range(5, 11)},
               **{f"b{i}": c3 + 0.01 * i * a for i in range(0, 5)}}

    def prefetched_on_c(read_one_of_b: bool) -> int:
        c = cache("ahas", warm_blocks=12, hot_blocks=0, vectors=vectors,
                  hbf=HbfConfig(prefetch_window=1, corpus_jump_prefetch_window=3))
        ask(c, "b11", vector=a)
        ask(c, "b10", vector=b)  # deep: three of b5..b9
        if read_one_of_b:
            ask(c, "b9", "b8", "b7", "b6", "b5", vector=b)  # same topic: 1 more, none left
        before = c.counters.prefetched
        ask(c, "b4", vector=c3)
        return c.counters.prefetched - before

    assert (prefetched_on_c(True), prefetched_on_c(False)) == (3, 1)


def test_an_unread_deep_prefetch_blocks_the_next_for_relevance_window_questions_only():
    """Four topics, one question each, each back in the document (no sequential reading):
    B's deep prefetch is never read, so C's jump prefetches shallow; D's, two questions after
    B's (relevance_window 2), goes deep again."""
    axes = torch.eye(4)
    vectors = {"b19": axes[0], **{f"b{i}": axes[1] + 0.01 * i for i in range(10, 15)},
               **{f"b{i}": axes[2] + 0.01 * i for i in range(5, 10)},
               **{f"b{i}": axes[3] + 0.01 * i for i in range(0, 5)}}
    c = cache("ahas", warm_blocks=20, hot_blocks=0, n=20, vectors=vectors,
              scheduler=SchedulerConfig(relevance_window=2),
              hbf=HbfConfig(prefetch_window=1, corpus_jump_prefetch_window=3))
    counts = []
    for key, topic in (("b19", 0), ("b14", 1), ("b9", 2), ("b4", 3)):
        before = c.counters.prefetched
        ask(c, key, vector=axes[topic])
        counts.append(c.counters.prefetched - before)
    assert counts[1:] == [3, 1, 3]


def test_a_reader_who_read_in_order_and_jumps_gets_the_usual_window():
    """A jump to a new topic goes deep after a jump, not after a step forward in the document
    (a sequential reader who jumps is likely starting another reading)."""
    a, c3 = torch.tensor([1.0, 0.0]), torch.tensor([0.0, 1.0])
    vectors = {**{f"b{i}": c3 + 0.01 * i for i in range(0, 5)},
               **{f"b{i}": a + 0.01 * i for i in range(6, 12)}}

    def prefetched_on_c(first: str, second: str) -> int:
        c = cache("ahas", warm_blocks=20, hot_blocks=0, vectors=vectors,
                  hbf=HbfConfig(prefetch_window=1, corpus_jump_prefetch_window=3))
        ask(c, first, vector=a)
        ask(c, second, vector=a)  # a block of the first question's deep prefetch: paid
        before = c.counters.prefetched
        ask(c, "b2", vector=c3)
        return c.counters.prefetched - before

    assert prefetched_on_c("b6", "b7") == 1  # b7 follows b6: a sequential step, then the jump
    assert prefetched_on_c("b11", "b10") == 3  # b10 is back in the document: a jump


def test_jump_prefetch_brings_blocks_like_the_ones_read_not_like_the_question():
    q, chunk = torch.tensor([1.0, 0.0, 0.0]), torch.tensor([0.0, 1.0, 0.0])
    # b5 is like the block read (b4), b6 like the question; neither is read yet
    other = torch.tensor([0.0, 0.0, 1.0])
    vectors = {"b4": chunk, "b5": chunk + 0.1 * q, "b6": q, "b9": other}
    c = cache("ahas", warm_blocks=8, hot_blocks=0, vectors=vectors)
    ask(c, "b9", vector=other)  # then back in the document: a jump
    ask(c, "b4", vector=q)
    assert "b5" in c.warm and "b6" not in c.warm


def test_key_scheduler_relevance_window_is_how_many_questions_relevance_remembers():
    def relevance(window: int) -> float:
        a, b = torch.tensor([1.0, 0.0]), torch.tensor([0.0, 1.0])
        far = {f"b{i}": -(a + b) for i in range(3, 9)}  # unrelated blocks: the median is theirs
        c = cache("ahas", scheduler=SchedulerConfig(relevance_window=window),
                  vectors={"b0": a, "b1": b, "b2": (a + b) / 2, **far})
        ask(c, "b0", vector=a)
        ask(c, "b1", vector=b)
        return c.policy.relevance("b0")

    assert relevance(1) < 0.5 and relevance(10) == 1.0


# ---- the real path: stored document KV through the cache, the same answer under each policy -----

class CharTokenizer:
    """Bytes as token ids (the tiny model's vocabulary is 128): enough for PromptLayout."""

    eos_token_id = 0

    def __call__(self, text: str, add_special_tokens: bool = False):
        class Out:
            input_ids = [b % 127 + 1 for b in text.encode()]
        return Out()

    def decode(self, ids, skip_special_tokens: bool = True) -> str:
        return "".join(chr(i) for i in ids)


def test_reuse_runtime_reads_stored_kv_through_the_cache_and_answers_alike(tmp_path, tiny_model):
    from h3_runtime.reuse.doc_kv import DocumentKV
    from h3_runtime.reuse.prompt import ChunkText
    from h3_runtime.reuse.runtime import ReuseRuntime

    blocks = KVBlockStore(tmp_path / "kv", GIB)
    chunks = [ChunkText(f"c{i}", 1, "alpha beta gamma delta " * 30) for i in range(2)]
    answers = {}
    for name in ("none", "lru", "ahas"):
        corpus = CorpusKVCache(blocks, make_policy(name), hot_bytes=GIB, warm_bytes=GIB)
        store = DocumentKV(blocks, tmp_path / "docs", cache=corpus)
        rt = ReuseRuntime(tiny_model, CharTokenizer(), store)
        rt.precompute("doc", chunks)
        segments = rt.document_segments("doc", chunks, "what?")
        first = rt.answer(segments, max_new_tokens=3)
        second = rt.answer(segments, max_new_tokens=3)
        assert first.token_ids == second.token_ids
        tiers = second.stats["corpus_cache"]["tiers"]
        assert tiers and all(t == "cold" for t in tiers) == (name == "none")
        answers[name] = first.token_ids
    assert answers["none"] == answers["lru"] == answers["ahas"]


def test_block_vectors_are_their_chunks_mean_and_reach_the_policy(tmp_path, tiny_model):
    from h3_runtime.reuse.doc_kv import DocumentKV
    from h3_runtime.reuse.prompt import ChunkText
    from h3_runtime.reuse.runtime import ReuseRuntime

    blocks = KVBlockStore(tmp_path / "kv", GIB)
    chunks = [ChunkText(f"c{i}", 1, "alpha beta gamma delta " * 30) for i in range(3)]
    vectors = {"c0": [1.0, 0.0, 0.0], "c1": [0.0, 1.0, 0.0]}  # c2 has none
    corpus = CorpusKVCache(blocks, make_policy("ahas"), hot_bytes=GIB, warm_bytes=GIB)
    store = DocumentKV(blocks, tmp_path / "docs", cache=corpus)
    store.span_vectors = lambda index: vectors if index.doc_id == "doc" else {}
    rt = ReuseRuntime(tiny_model, CharTokenizer(), store)
    index, _ = rt.precompute("doc", chunks)
    rt.answer(rt.document_segments("doc", chunks, "what?"), max_new_tokens=1,
              query_vector=torch.tensor([0.0, 1.0, 0.0]))
    units = corpus.policy.units
    for b, key in enumerate(index.block_keys()):
        start, end = index.block_span(b)
        near = [cid for (s, e), cid in zip(index.spans, index.span_ids, strict=True)
                if s < end and e > start and cid in vectors]
        if not near:
            assert units[key].vector is None
            continue
        mean = torch.tensor([vectors[c] for c in near]).mean(dim=0)
        assert torch.allclose(units[key].vector, mean / mean.norm()), (b, near)
    assert any(units[k].vector is None for k in index.block_keys())  # c2's own blocks
    assert corpus.policy.recent  # the question's vector was remembered for relevance
