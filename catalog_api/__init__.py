"""The catalog API: scopes, streams, tables and commits over the registry."""
