"""The knowledge graph in the document store: `edges` (relations and mentions, each with provenance)
and `entities` (one node per entity across documents, with aliases)."""
