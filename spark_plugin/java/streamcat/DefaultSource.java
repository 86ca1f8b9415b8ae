package streamcat;

import streamcat.spark.PythonSourceBridge;

/**
 * What {@code spark.read.format("streamcat")} (and {@code writeStream}, {@code CREATE TABLE ... USING streamcat}
 * outside the catalog) loads: Spark tries the class {@code <format>.DefaultSource} before it looks for a
 * Python data source of that name, a lookup that would import every {@code pyspark_*} module on the Python
 * path ({@link PythonSourceBridge}). Spark names it (setShortName) as it names any Python data source.
 */
public final class DefaultSource extends PythonSourceBridge.Source {
}
