"""Streamcat's schema registry: the Pravega Schema Registry REST API on SQLAlchemy."""
