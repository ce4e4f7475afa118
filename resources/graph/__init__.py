"""The knowledge graph in the cold store: `edges` (relations and mentions, each with provenance)
and `entities` (one node per entity across documents, with aliases)."""
