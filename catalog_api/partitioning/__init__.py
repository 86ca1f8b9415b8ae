"""Partitioned tables, pure domain: partition specs and their text form (:mod:`.spec`), partition values
(:mod:`.transforms`), skipping chunks by statistics and partition (:mod:`.pruning`), and what a table's
specs and a chunk's partition may be (:mod:`.rules`).

Iceberg's model with Spark's spelling for the text form; ``docs/partitioning.md`` describes it for the
server, the Spark plugin and the writers. Import from the submodules: this package
imports nothing itself, so that importing the spec model does not load pyarrow.
"""
