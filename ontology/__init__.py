"""Entity and relation types, ids and the document model of H³ (no heavy dependencies)."""
