/*
 * The one class of Spark's spark-avro connector that from_avro needs and the pyspark wheel lacks
 * (bench/spark_avro_jar.py). Spark's FromAvro looks this class up by name and calls its first
 * constructor with (child, schema JSON, options); everything that decodes (Avro's
 * GenericDatumReader, Spark's AvroDeserializer and SchemaConverters) is the wheel's own.
 * Written for the benchmark baseline; not part of Streamcat.
 */
package org.apache.spark.sql.avro

import org.apache.avro.Schema
import org.apache.avro.generic.GenericDatumReader
import org.apache.avro.io.{BinaryDecoder, DecoderFactory}

import org.apache.spark.sql.catalyst.expressions.{ExpectsInputTypes, Expression, UnaryExpression}
import org.apache.spark.sql.catalyst.expressions.codegen.CodegenFallback
import org.apache.spark.sql.types.{AbstractDataType, BinaryType, DataType}

case class AvroDataToCatalyst(child: Expression, jsonFormatSchema: String, options: Map[String, String])
    extends UnaryExpression with ExpectsInputTypes with CodegenFallback {

  override def inputTypes: Seq[AbstractDataType] = Seq(BinaryType)

  @transient private lazy val avroOptions = AvroOptions(options)
  @transient private lazy val schema: Schema = new Schema.Parser().parse(jsonFormatSchema)
  // The options' reader schema, if any, reads data written with jsonFormatSchema.
  @transient private lazy val readerSchema: Schema = avroOptions.schema.getOrElse(schema)

  override lazy val dataType: DataType = SchemaConverters.toSqlType(
    readerSchema, avroOptions.useStableIdForUnionType, avroOptions.stableIdPrefixForUnionType,
    avroOptions.recursiveFieldMaxDepth).dataType

  override def nullable: Boolean = true

  @transient private lazy val reader = new GenericDatumReader[Any](schema, readerSchema)
  @transient private lazy val deserializer = new AvroDeserializer(
    readerSchema, dataType, avroOptions.datetimeRebaseModeInRead, avroOptions.useStableIdForUnionType,
    avroOptions.stableIdPrefixForUnionType, avroOptions.recursiveFieldMaxDepth)
  @transient private var decoder: BinaryDecoder = _
  @transient private var record: Any = _

  override def nullSafeEval(input: Any): Any = {
    val bytes = input.asInstanceOf[Array[Byte]]
    decoder = DecoderFactory.get().binaryDecoder(bytes, 0, bytes.length, decoder)
    record = reader.read(record, decoder)
    deserializer.deserialize(record).orNull
  }

  override def prettyName: String = "from_avro"

  override protected def withNewChildInternal(newChild: Expression): AvroDataToCatalyst = copy(child = newChild)
}
