"""Storage of the registry: the abstract interface and its SQLAlchemy implementation."""
