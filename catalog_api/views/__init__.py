"""Views: named queries that Spark's ViewCatalog stores in the catalog (docs/views.md).

``model`` (domain objects), ``orm`` (the ``views`` table), ``store`` (persistence), ``service``
(the rules), ``wire`` (the JSON bodies of ``/v1/scopes/{scope}/views``) and ``api`` (the routes).
"""
