"""The Confluent Schema Registry REST API over the registry's storage (docs/confluent-api.md)."""
