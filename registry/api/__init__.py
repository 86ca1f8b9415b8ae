"""The registry's REST API: wire models (importable without Flask, for clients), and the
Flask views, route declarations and OpenAPI document built on them."""
