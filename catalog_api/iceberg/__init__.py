"""The Iceberg REST catalog: a second view of the same catalog (docs/iceberg.md)."""
