"""The catalog's REST API: wire models (importable without Flask, for clients), and the
Flask views and route declarations built on them."""
