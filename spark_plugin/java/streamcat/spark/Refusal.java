package streamcat.spark;

import org.apache.spark.SparkThrowable;

import java.util.Locale;

/**
 * A statement the catalog refuses (bad input, an unsupported operation, a refusal of the server), shown by
 * every Spark front end as one line: {@code [STREAMCAT_<CONDITION>] message SQLSTATE: xxxxx}.
 *
 * Why these two interfaces: spark-sql prints a stack trace after the message of any exception that is not a
 * {@link SparkThrowable} with a SQLSTATE outside class XX, and PySpark raises a plain Py4J error with the Java
 * stack for any exception it has no Python class for; an {@link IllegalArgumentException} (or, for
 * {@link Unsupported}, an {@link UnsupportedOperationException}) that is a SparkThrowable gets neither, the
 * way Spark's own {@code SparkIllegalArgumentException} does. Unchecked, so any catalog method may throw it.
 */
class Refusal extends IllegalArgumentException implements SparkThrowable {
    /** SQLSTATE of an argument or statement the catalog cannot accept. */
    static final String INVALID = "22023";
    /** SQLSTATE of an object that does not exist. */
    static final String UNDEFINED = "42704";

    private final String condition;
    private final String sqlState;
    private final String text;

    Refusal(String condition, String sqlState, String text, Throwable cause) {
        super(format(condition, sqlState, text), cause);
        this.condition = condition;
        this.sqlState = sqlState;
        this.text = text;
    }

    private static String format(String condition, String sqlState, String text) {
        // One line: a server message or a wrapped exception may hold line breaks.
        return "[" + condition + "] " + text.replaceAll("\\s*\\R\\s*", " ").trim() + " SQLSTATE: " + sqlState;
    }

    /** An argument, option or statement the catalog cannot accept. */
    static Refusal invalid(String text) {
        return new Refusal("STREAMCAT_INVALID_ARGUMENT", INVALID, text, null);
    }

    /** A table, partition or other object the statement names that does not exist. */
    static Refusal notFound(String text) {
        return new Refusal("STREAMCAT_NOT_FOUND", UNDEFINED, text, null);
    }

    /** An operation streamcat tables do not support (SQLSTATE 0A000). */
    static RuntimeException unsupported(String text) {
        return new Unsupported(text);
    }

    /**
     * {@code e} as a user sees it: a SparkThrowable as it is; a refusal someone wrapped with its own words as
     * that refusal; any other IllegalArgumentException or UnsupportedOperationException (a refusal spelled
     * as a plain Java exception) as a refusal with its message; anything else (a bug) as it is, stack and all.
     */
    static RuntimeException shown(RuntimeException e) {
        if (e instanceof SparkThrowable) {
            return e;
        }
        if (e.getCause() instanceof SparkThrowable && e.getCause() instanceof RuntimeException cause
                && (e.getMessage() == null || cause.getMessage() == null || cause.getMessage().contains(e.getMessage())
                    || e.getMessage().contains(cause.getMessage()))) {
            return cause;
        }
        if (e instanceof UnsupportedOperationException) {
            return new Unsupported(String.valueOf(e.getMessage()));
        }
        if (e instanceof IllegalArgumentException) {
            return invalid(String.valueOf(e.getMessage()));
        }
        return e;
    }

    /**
     * {@link #shown} {@code e}, its message prefixed with {@code subject} (e.g. the procedure and table a call
     * was about) when it does not name {@code name} already.
     */
    static RuntimeException about(String subject, String name, RuntimeException e) {
        RuntimeException shown = shown(e);
        if (shown instanceof Refusal r && !r.text.contains(name)) {
            return new Refusal(r.condition, r.sqlState, subject + ": " + r.text, r);
        }
        return shown;
    }

    /** The message without the condition and SQLSTATE around it. */
    String text() {
        return text;
    }

    @Override
    public String getCondition() {
        return condition;
    }

    @Override
    public String getSqlState() {
        return sqlState;
    }

    /** {@code TableNotFound} -> {@code STREAMCAT_TABLE_NOT_FOUND}: a server's error code as a condition. */
    static String condition(String code) {
        String snake = code.replaceAll("([a-z0-9])([A-Z])", "$1_$2").toUpperCase(Locale.ROOT);
        return "STREAMCAT_" + (snake.isEmpty() ? "REFUSED" : snake);
    }

    /** A refusal of an operation streamcat tables do not have. */
    static final class Unsupported extends UnsupportedOperationException implements SparkThrowable {
        Unsupported(String text) {
            super(format("STREAMCAT_UNSUPPORTED_OPERATION", "0A000", text));
        }

        @Override
        public String getCondition() {
            return "STREAMCAT_UNSUPPORTED_OPERATION";
        }

        @Override
        public String getSqlState() {
            return "0A000";
        }
    }
}
