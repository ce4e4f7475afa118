"""Dagster assets, one module per pipeline stage (group_name = the stage)."""
