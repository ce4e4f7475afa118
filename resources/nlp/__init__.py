"""Named entities and relations from text: spaCy loading, NER with ontology patterns, rule-based
relation extraction into knowledge-graph edges, entity aliases, and Chinese rules."""
