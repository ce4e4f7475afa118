"""H³'s benchmarks: scenarios, evals, corpus builders and one current report per scenario.

Not part of the installed product (nothing under assets/, resources/, pipelines/, h3_runtime/ or
ontology/ imports it); `h3 bench` runs it from a checkout of the repository."""
