"""The pieces of JSON Schema compatibility checking: schema nodes, writer branches, per-keyword rules.

Private to :mod:`registry.formats.jsonschema_compat`, which drives the recursion. Every rule here
answers one question for one reader node: does it accept every value of a writer *branch* (a
conjunction of writer nodes, see :func:`expand`)? Rules are conservative: when a rule cannot prove
acceptance it reports an incompatibility. Approximations are one-sided on purpose: the writer may be
widened (a constraint dropped), the reader may be narrowed (a constraint added), never the reverse.

One module per keyword family, each importing only the ones listed before it:

- :mod:`._helpers` and :mod:`.paths`: small value helpers and the JSON paths of reported values;
- :mod:`.nodes`: schema documents and nodes, drafts, ``$ref`` resolution, the :data:`Recurse` callback;
- :mod:`.type_sets`: the base types and the set a node's ``type`` declares;
- :mod:`.branches`: writer branches and reader conjunctions (``$ref`` and combinators expanded);
- :mod:`.values`: ``enum``/``const`` and finite value sets;
- :mod:`.type_rule`: the ``type`` rule (types and nullability);
- :mod:`.scalars`: numeric limits, ``multipleOf``, string lengths, ``pattern``, ``format``;
- :mod:`.arrays`: ``items``/``prefixItems``/``additionalItems``, item counts, ``uniqueItems``, ``contains``;
- :mod:`.objects`: ``properties``/``required``/``patternProperties``/``additionalProperties``, counts,
  ``propertyNames``, dependencies;
- :mod:`.unprovable`: the keywords handled, and the report for any other one.
"""

from registry.formats.jsonschema_rules.arrays import check_arrays
from registry.formats.jsonschema_rules.branches import Branch, expand, reader_parts
from registry.formats.jsonschema_rules.nodes import Document, Node, Recurse, load
from registry.formats.jsonschema_rules.objects import check_objects, patterns_disjoint, schemas_for_name
from registry.formats.jsonschema_rules.paths import additional_path, item_path, pattern_path, property_path
from registry.formats.jsonschema_rules.scalars import check_numbers, check_strings
from registry.formats.jsonschema_rules.type_rule import check_types
from registry.formats.jsonschema_rules.type_sets import ALL_TYPES, declared_types, describe_types
from registry.formats.jsonschema_rules.unprovable import HANDLED_KEYWORDS, check_unprovable
from registry.formats.jsonschema_rules.values import declared_values, finite_values, json_equal

__all__ = [
    "ALL_TYPES",
    "HANDLED_KEYWORDS",
    "Branch",
    "Document",
    "Node",
    "Recurse",
    "additional_path",
    "check_arrays",
    "check_numbers",
    "check_objects",
    "check_strings",
    "check_types",
    "check_unprovable",
    "declared_types",
    "declared_values",
    "describe_types",
    "expand",
    "finite_values",
    "item_path",
    "json_equal",
    "load",
    "pattern_path",
    "patterns_disjoint",
    "property_path",
    "reader_parts",
    "schemas_for_name",
]
