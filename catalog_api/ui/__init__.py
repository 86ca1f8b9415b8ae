"""The web UI at ``/ui/`` (docs/ui.md): server-rendered pages over the registry's and the catalog's
services, with the API's principals and permissions. ``app.create_ui`` builds it; the shell mounts it."""
