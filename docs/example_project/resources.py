"""This project's own `resources` module: H³ installs under `h3.*`, so the name is free."""

from h3.resources import DocumentStoreResource, H3RuntimeResource

RESOURCES = {
    "store": DocumentStoreResource(),  # $H3_HOME/lancedb, what `h3 index-build` filled
    "runtime": H3RuntimeResource(),  # the bundled model, h3_config.yaml's budgets
}
