"""Real servers for the tests: PostgreSQL, the HTTP server, free ports."""
