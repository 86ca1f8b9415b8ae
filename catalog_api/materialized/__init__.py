"""Materialized tables: a query kept as a table, refreshed to a declared freshness (docs/materialized-tables.md).

``model`` (domain objects and the rules of modes, lag and backoff), ``orm`` (the
``materialized_tables`` table), ``store`` (persistence, the refresher's lease), ``service`` (the
rules), ``wire`` and ``api`` (``/v1/scopes/{scope}/materializedTables``), ``metrics`` (per-table
lag and refresh duration for ``/metrics``) and ``refresher`` (the loop ``streamcat refresher`` runs
on Spark).
"""
