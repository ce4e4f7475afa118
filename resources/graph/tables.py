"""Knowledge-graph tables of the cold store (registered with the store at import)."""

from __future__ import annotations

import pyarrow as pa

from resources.store.tables import BBOX, TableSpec, register_table

EDGES = register_table(TableSpec(
    name="edges",
    description="relations between entities (and 'mentions' from a document to an entity), each "
                "with provenance: doc, page, bbox, sentence",
    schema=pa.schema([
        pa.field("edge_id", pa.string()),
        pa.field("doc_id", pa.string()),
        pa.field("relation", pa.string()),  # ontology.relations.RELATIONS_BY_NAME
        pa.field("head_id", pa.string()),  # entity id, or "doc:<doc_id>" for mentions
        pa.field("tail_id", pa.string()),
        pa.field("head_text", pa.string()),
        pa.field("tail_text", pa.string()),
        pa.field("head_type", pa.string()),
        pa.field("tail_type", pa.string()),
        pa.field("page", pa.int32()),  # 1-based
        pa.field("bbox", BBOX),  # the region holding the sentence, PDF points, top-left origin
        pa.field("sentence", pa.string()),
        pa.field("rule", pa.string()),  # the extraction rule that found it
        pa.field("extra_json", pa.string()),
    ]),
))

ENTITIES = register_table(TableSpec(
    name="entities",
    doc_scoped=False,  # one node per entity across documents; rebuilt from the edges
    description="knowledge-graph nodes: one per entity across documents, with aliases",
    schema=pa.schema([
        pa.field("entity_id", pa.string()),
        pa.field("name", pa.string()),  # the most frequent surface form
        pa.field("type", pa.string()),  # ontology.entities.TYPE_NAMES, by vote
        pa.field("aliases", pa.list_(pa.string())),  # every surface form seen
        pa.field("doc_ids", pa.list_(pa.string())),
        pa.field("mention_count", pa.int32()),
        pa.field("relation_count", pa.int32()),
    ]),
))
