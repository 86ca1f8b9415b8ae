"""The DEK registry of the Confluent API: key encryption keys and the data encryption keys they
wrap, which clients' ENCRYPT rules use (docs/data-contracts.md)."""
