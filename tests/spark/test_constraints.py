"""CHECK constraints on Streamcat tables (docs/data-contracts.md): declared in Spark, kept by the catalog,
enforced by Spark on every write, and the same contract as the CEL rules of the table's subject that the
stock confluent-kafka client runs."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from confluent_kafka.schema_registry import (
    Rule,
    RuleKind,
    RuleMode,
    RuleParams,
    RuleSet,
    Schema,
    SchemaRegistryClient,
)
from confluent_kafka.schema_registry.avro import AvroSerializer
from confluent_kafka.schema_registry.rule_registry import RuleRegistry
from confluent_kafka.schema_registry.rules.cel.cel_executor import CelExecutor
from confluent_kafka.serialization import MessageField, SerializationContext, SerializationError
from pyspark.errors import PySparkException, StreamingQueryException

from catalog_api.client import CatalogClient
from catalog_api.streams import StreamWriter
from catalog_api.streams.contracts import ConstraintViolation
from registry.client import RegistryClient
from tests.spark.helpers import rows

pytestmark = [pytest.mark.spark, pytest.mark.xdist_group("spark")]


def _refusal(spark: Any, sql: str) -> str:
    """The first line of the message Spark refuses ``sql`` with, checked to hold no stack frames (Spark's
    CHECK_CONSTRAINT_VIOLATION adds the failing row's values on the lines after it)."""
    with pytest.raises(PySparkException) as refused:
        spark.sql(sql).collect()
    text = str(refused.value).strip()
    assert "\tat " not in text
    assert "Traceback" not in text
    assert "JVM stacktrace" not in text
    assert len(text.splitlines()) <= 4, text
    return text.splitlines()[0]


def _described(spark: Any, table: str) -> str:
    return "\n".join(" ".join(str(c) for c in r) for r in spark.sql(f"DESCRIBE TABLE EXTENDED {table}").collect())


def test_check_constraints_refuse_inserts_and_updates_and_show_in_ddl(spark: Any, scope: str) -> None:
    table = f"streamcat.{scope}.orders"
    spark.sql(f"CREATE TABLE {table} (id BIGINT, qty INT, sku STRING, "
              "CONSTRAINT qty_positive CHECK (qty > 0)) USING avro")
    spark.sql(f"INSERT INTO {table} VALUES (1, 3, 'a'), (2, NULL, 'b')")  # unknown passes, as SQL says

    line = _refusal(spark, f"INSERT INTO {table} VALUES (3, 0, 'c')")
    assert "qty_positive" in line
    assert "CHECK_CONSTRAINT_VIOLATION" in line
    line = _refusal(spark, f"UPDATE {table} SET qty = qty - 5 WHERE id = 1")
    assert "qty_positive" in line
    line = _refusal(spark, f"MERGE INTO {table} t USING (SELECT 2L AS id, -1 AS qty) s ON t.id = s.id "
                           "WHEN MATCHED THEN UPDATE SET qty = s.qty")
    assert "qty_positive" in line
    assert "qty_positive" in _refusal(spark, f"INSERT OVERWRITE {table} VALUES (9, -9, 'z')")
    assert rows(spark, f"SELECT id, qty FROM {table} ORDER BY id") == [(1, 3), (2, None)]

    described = _described(spark, table)
    assert "qty_positive" in described
    assert "CHECK (qty > 0)" in described
    ddl = spark.sql(f"SHOW CREATE TABLE {table}").collect()[0][0]
    assert "CONSTRAINT qty_positive CHECK (qty > 0)" in ddl
    assert "constraint.check" not in ddl  # shown once, as a constraint, not again as a property


def test_a_streaming_write_breaking_a_check_fails(spark: Any, scope: str, tmp_path: Path) -> None:
    source, table = f"streamcat.{scope}.incoming", f"streamcat.{scope}.counts"
    spark.sql(f"CREATE TABLE {source} (id BIGINT, qty INT) USING avro")
    spark.sql(f"CREATE TABLE {table} (id BIGINT, qty INT, CONSTRAINT qty_positive CHECK (qty > 0)) USING avro")
    spark.sql(f"INSERT INTO {source} VALUES (1, 4), (2, -4)")
    query = (spark.readStream.table(source).writeStream.option("checkpointLocation", str(tmp_path / "cp"))
             .trigger(availableNow=True).toTable(table))
    with pytest.raises(StreamingQueryException) as refused:
        query.awaitTermination()
    assert "CHECK constraint qty_positive" in str(refused.value)
    assert rows(spark, f"SELECT count(*) FROM {table}") == [(0,)]


def test_add_constraint_over_violating_rows_is_refused_and_drop_lifts_it(spark: Any, scope: str) -> None:
    table = f"streamcat.{scope}.stock"
    spark.sql(f"CREATE TABLE {table} (sku STRING, qty INT) USING avro")
    spark.sql(f"INSERT INTO {table} VALUES ('a', 5), ('b', -1)")
    line = _refusal(spark, f"ALTER TABLE {table} ADD CONSTRAINT non_negative CHECK (qty >= 0)")
    assert "NEW_CHECK_CONSTRAINT_VIOLATION" in line
    assert "qty >= 0" in line  # Spark names the condition here, not the name
    assert "non_negative" not in _described(spark, table)

    spark.sql(f"DELETE FROM {table} WHERE qty < 0")
    spark.sql(f"ALTER TABLE {table} ADD CONSTRAINT non_negative CHECK (qty >= 0)")
    assert "non_negative" in _refusal(spark, f"INSERT INTO {table} VALUES ('c', -2)")
    spark.sql(f"ALTER TABLE {table} DROP CONSTRAINT non_negative")
    spark.sql(f"INSERT INTO {table} VALUES ('c', -2)")
    assert rows(spark, f"SELECT count(*) FROM {table}") == [(2,)]


def _register_rules(server: str, subject: str, *rules: Rule) -> None:
    """Registers the subject's latest schema again through the stock client, with ``rules`` as its rule set."""
    sr = SchemaRegistryClient({"url": server})
    latest = sr.get_latest_version(subject)
    sr.register_schema(subject, Schema(latest.schema.schema_str, "AVRO", [], None, RuleSet(None, list(rules))))


def _rules() -> RuleRegistry:
    registry = RuleRegistry()
    registry.register_executor(CelExecutor())
    return registry


def test_a_constraint_added_in_spark_refuses_a_kafka_clients_record(spark: Any, scope: str,
                                                                    spark_server: str) -> None:
    table = f"streamcat.{scope}.payments"
    spark.sql(f"CREATE TABLE {table} (id BIGINT, amount INT, currency STRING) USING avro")
    spark.sql(f"ALTER TABLE {table} ADD CONSTRAINT known_currency CHECK (currency IN ('EUR', 'USD'))")
    subject = f":.{scope}:payments"
    sr = SchemaRegistryClient({"url": spark_server})
    latest = sr.get_latest_version(subject)  # the stock client reads the mirrored rule (and no tags)
    assert latest.schema.rule_set is not None
    assert latest.schema.metadata is not None
    assert [r.name for r in latest.schema.rule_set.domain_rules or []] == ["known_currency"]
    # mirroring adds no tags (the stock client cannot hash them), only its revision property
    assert latest.schema.metadata.tags is None or not latest.schema.metadata.tags.tags
    conf = {"auto.register.schemas": False, "use.latest.version": True,
            "subject.name.strategy": lambda _ctx, _record: subject}
    serialize = AvroSerializer(sr, latest.schema.schema_str, conf=conf, rule_registry=_rules())
    context = SerializationContext("payments", MessageField.VALUE)
    assert serialize({"id": 1, "amount": 10, "currency": "EUR"}, context)
    with pytest.raises(SerializationError) as refused:
        serialize({"id": 2, "amount": 10, "currency": "GBP"}, context)
    assert "CHECK constraint known_currency (currency IN ('EUR', 'USD'))" in str(refused.value.__cause__)


def test_a_cel_rule_added_through_the_confluent_api_refuses_a_spark_insert(spark: Any, scope: str,
                                                                          spark_server: str) -> None:
    table = f"streamcat.{scope}.shipments"
    spark.sql(f"CREATE TABLE {table} (id BIGINT, weight INT, label STRING) USING avro")
    rule = Rule("light_enough", None, RuleKind.CONDITION, RuleMode.WRITE, "CEL", None, None,
                "message.weight < 1000 && size(message.label) > 0", None, None, False)
    _register_rules(spark_server, f":.{scope}:shipments", rule)

    spark.sql(f"INSERT INTO {table} VALUES (1, 10, 'box')")
    assert "light_enough" in _refusal(spark, f"INSERT INTO {table} VALUES (2, 5000, 'crate')")
    # CEL fails on a null where SQL would say unknown: the rule refuses it, and so does Spark.
    assert "light_enough" in _refusal(spark, f"INSERT INTO {table} VALUES (3, NULL, 'bag')")
    assert rows(spark, f"SELECT id FROM {table}") == [(1,)]


def test_a_cel_rule_without_a_sql_form_is_shown_not_enforced_and_the_python_writers_enforce_it(
        spark: Any, scope: str, spark_server: str) -> None:
    table = f"streamcat.{scope}.labels"
    spark.sql(f"CREATE TABLE {table} (id BIGINT, label STRING) USING avro")
    rule = Rule("label_prefix", None, RuleKind.CONDITION, RuleMode.WRITE, "CEL", None, None,
                "message.label.startsWith('A')", None, None, False)  # no SQL form: a method call
    # a DLQ rule: its rows go to a dead-letter table from the Python writers; Spark's writes fail on it
    dead = Rule("id_positive", None, RuleKind.CONDITION, RuleMode.WRITE, "CEL", None,
                RuleParams({"dlq.table": f"{scope}.dead"}), "message.id > 0", None, "DLQ", False)
    _register_rules(spark_server, f":.{scope}:labels", rule, dead)
    assert "id_positive" in _refusal(spark, f"INSERT INTO {table} VALUES (-1, 'Ax')")

    shown = "label_prefix CHECK (TRUE /* CEL: message.label.startsWith('A') */) NOT ENFORCED"
    assert shown in _described(spark, table)
    assert f"CONSTRAINT {shown}" in spark.sql(f"SHOW CREATE TABLE {table}").collect()[0][0]
    spark.sql(f"INSERT INTO {table} VALUES (1, 'Bx')")  # not enforced by Spark, as it says
    assert rows(spark, f"SELECT id FROM {table}") == [(1,)]

    registry = RegistryClient(spark_server, scope)
    writer = StreamWriter(CatalogClient(spark_server), registry, scope, "labels",
                          schema=registry.latest_schemas("labels")[0].schema)
    writer.write({"id": 2, "label": "Ax"})
    with pytest.raises(ConstraintViolation, match="label_prefix"):  # the Python writers enforce it
        writer.write({"id": 3, "label": "Bx"})
    writer.close()
    assert rows(spark, f"SELECT id FROM {table} ORDER BY id") == [(1,), (2,)]
