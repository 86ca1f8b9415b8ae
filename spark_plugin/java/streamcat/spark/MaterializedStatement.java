package streamcat.spark;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Optional;

/**
 * The materialized-table statements of Flink's SQL (docs/materialized-tables.md), read by hand and
 * rewritten into the {@code CALL <catalog>.system.*} procedure that does the same thing, so that a
 * statement and its procedure cannot drift apart:
 *
 * <pre>
 * CREATE MATERIALIZED TABLE [IF NOT EXISTS] name [(PRIMARY KEY (k, ...) NOT ENFORCED)] [COMMENT '...']
 *     [PARTITIONED BY (col, ...)] [WITH ('key' = 'value', ...)]
 *     [FRESHNESS = INTERVAL 'n' SECOND|MINUTE|HOUR|DAY] [REFRESH_MODE = CONTINUOUS|FULL] AS query
 * ALTER MATERIALIZED TABLE name SUSPEND | RESUME | REFRESH [PARTITION (col = 'value', ...)] | AS query
 *     | SET FRESHNESS = INTERVAL ... | SET REFRESH_MODE = CONTINUOUS|FULL
 * DROP MATERIALIZED TABLE [IF EXISTS] name
 * SHOW MATERIALIZED TABLES [IN|FROM namespace]
 * </pre>
 *
 * <p>Any other text is not this class's ({@link #rewrite} answers empty) and goes to Spark's parser
 * unchanged. A statement that starts like one of these but is malformed is refused with a
 * {@link StatementException} saying what was expected where.
 */
final class MaterializedStatement {
    /** Flink's default freshness of a table in continuous mode, and in full mode. */
    static final String CONTINUOUS_FRESHNESS = "3 minutes";
    static final String FULL_FRESHNESS = "1 hour";

    /** How names without a catalog or namespace resolve: the session's current ones. */
    interface Session {
        String currentCatalog();

        String currentNamespace();

        /** Whether {@code catalog} is a Streamcat catalog (its procedures are the ones called). */
        boolean isStreamcat(String catalog);
    }

    /** A statement that is one of ours but cannot be read; the message says where and what. */
    static final class StatementException extends Refusal {
        StatementException(String message) {
            super("STREAMCAT_INVALID_STATEMENT", "42601", message, null);
        }
    }

    private enum Kind { WORD, QUOTED, STRING, NUMBER, SYMBOL, END }

    private record Token(Kind kind, String text, int start, int end) {
        boolean is(String word) {
            return kind == Kind.WORD && text.equalsIgnoreCase(word);
        }

        boolean isSymbol(String symbol) {
            return kind == Kind.SYMBOL && text.equals(symbol);
        }

        String shown() {
            return kind == Kind.END ? "the end of the statement" : "'" + text + "'";
        }
    }

    private final String sql;
    private final Session session;
    private final List<Token> tokens;
    private int at;

    private MaterializedStatement(String sql, Session session) {
        this.sql = sql;
        this.session = session;
        this.tokens = tokenize(sql);
    }

    /** The procedure call that does what {@code sql} says, or empty when it is not one of these statements. */
    static Optional<String> rewrite(String sql, Session session) {
        MaterializedStatement statement = new MaterializedStatement(sql, session);
        return statement.ours() ? Optional.of(statement.call()) : Optional.empty();
    }

    private boolean ours() {
        if (tokens.size() < 3) {
            return false;
        }
        Token first = tokens.get(0);
        Token second = tokens.get(1);
        Token third = tokens.get(2);
        if (first.is("show")) {
            return second.is("materialized") && third.is("tables");
        }
        return (first.is("create") || first.is("alter") || first.is("drop")) && second.is("materialized")
                && third.is("table");
    }

    private String call() {
        String verb = next().text.toLowerCase(Locale.ROOT);
        next();
        next();
        return switch (verb) {
            case "create" -> create();
            case "alter" -> alter();
            case "drop" -> drop();
            default -> show();
        };
    }

    // -- statements --------------------------------------------------------------------------------------

    private String create() {
        boolean ifNotExists = false;
        if (peek().is("if")) {
            next();
            expectWord("not");
            expectWord("exists");
            ifNotExists = true;
        }
        String[] name = tableName();
        Map<String, String> args = new LinkedHashMap<>();
        List<String> key = new ArrayList<>();
        if (peek().isSymbol("(")) {
            next();
            if (peek().is("constraint")) {
                next();
                identifier("a constraint name");
            }
            expectWord("primary");
            expectWord("key");
            key = columnList();
            expectWord("not");
            expectWord("enforced");
            expectSymbol(")");
        }
        String comment = null;
        String freshness = null;
        String mode = null;
        List<String> partitionedBy = null;
        Map<String, String> options = null;
        while (!peek().is("as")) {
            Token clause = peek();
            if (clause.is("comment") && comment == null) {
                next();
                comment = string("the comment");
            } else if (clause.is("freshness") && freshness == null) {
                next();
                freshness = freshnessValue();
            } else if (clause.is("refresh_mode") && mode == null) {
                next();
                mode = refreshMode();
            } else if (clause.is("partitioned") && partitionedBy == null) {
                next();
                expectWord("by");
                partitionedBy = columnList();
            } else if (clause.is("with") && options == null) {
                next();
                options = pairs("an option key as a quoted string", false);
            } else {
                throw expected("COMMENT, PARTITIONED BY, WITH, FRESHNESS, REFRESH_MODE or AS <query>", clause);
            }
        }
        String query = query();
        if (freshness == null) {
            freshness = "full".equals(mode) ? FULL_FRESHNESS : CONTINUOUS_FRESHNESS;
        }
        args.put("query", literal(query));
        args.put("freshness", literal(freshness));
        args.put("refresh_mode", literal(mode == null ? "auto" : mode));
        if (!key.isEmpty()) {
            args.put("primary_key", literal(String.join(",", key)));
        }
        if (comment != null) {
            args.put("comment", literal(comment));
        }
        if (partitionedBy != null) {
            args.put("partitioned_by", literal(String.join(",", partitionedBy)));
        }
        if (options != null) {
            args.put("options", map(options));
        }
        if (ifNotExists) {
            args.put("if_not_exists", "true");
        }
        return procedure(name, "create_materialized_table", args);
    }

    private String alter() {
        String[] name = tableName();
        Token action = next();
        Map<String, String> args = new LinkedHashMap<>();
        if (action.is("suspend")) {
            end();
            return procedure(name, "suspend_materialized_table", args);
        }
        if (action.is("resume")) {
            if (peek().is("with")) {
                throw new StatementException("RESUME WITH (...) sets options of Flink's refresh job; Streamcat's "
                        + "refresher runs in its own Spark session and takes none: use ALTER MATERIALIZED TABLE "
                        + "... SET FRESHNESS or SET REFRESH_MODE");
            }
            end();
            return procedure(name, "resume_materialized_table", args);
        }
        if (action.is("refresh")) {
            if (peek().is("partition")) {
                next();
                args.put("partition", map(pairs("a partition column", true)));
            } else {
                args.put("force", "true");
            }
            end();
            return procedure(name, "refresh_materialized_table", args);
        }
        if (action.is("as")) {
            at--;
            args.put("query", literal(query()));
            args.put("keep_columns", "true");
            return procedure(name, "alter_materialized_table", args);
        }
        if (action.is("set")) {
            Token what = next();
            if (what.is("freshness")) {
                args.put("freshness", literal(freshnessValue()));
            } else if (what.is("refresh_mode")) {
                args.put("refresh_mode", literal(refreshMode()));
            } else {
                throw expected("FRESHNESS or REFRESH_MODE", what);
            }
            end();
            return procedure(name, "alter_materialized_table", args);
        }
        throw expected("SUSPEND, RESUME, REFRESH [PARTITION (...)], AS <query>, SET FRESHNESS or SET REFRESH_MODE",
                action);
    }

    private String drop() {
        boolean ifExists = false;
        if (peek().is("if")) {
            next();
            expectWord("exists");
            ifExists = true;
        }
        String[] name = tableName();
        end();
        Map<String, String> args = new LinkedHashMap<>();
        if (ifExists) {
            args.put("if_exists", "true");
        }
        return procedure(name, "drop_materialized_table", args);
    }

    private String show() {
        String catalog = session.currentCatalog();
        String namespace = null;
        if (peek().is("in") || peek().is("from")) {
            next();
            List<String> parts = qualifiedName("a namespace");
            if (parts.size() > 2) {
                throw new StatementException("SHOW MATERIALIZED TABLES IN takes a namespace (scope) or "
                        + "catalog.namespace, not '" + String.join(".", parts) + "'");
            }
            if (parts.size() == 2) {
                catalog = parts.get(0);
            }
            namespace = parts.get(parts.size() - 1);
        }
        end();
        streamcat(catalog);
        String args = namespace == null ? "" : "namespace => " + literal(namespace);
        return "CALL " + quote(catalog) + ".system.show_materialized_tables(" + args + ")";
    }

    // -- pieces ------------------------------------------------------------------------------------------

    /** [catalog, namespace, table], filled from the session where the statement leaves them out. */
    private String[] tableName() {
        List<String> parts = qualifiedName("a table name");
        String[] name = switch (parts.size()) {
            case 1 -> new String[] {session.currentCatalog(), session.currentNamespace(), parts.get(0)};
            case 2 -> new String[] {session.currentCatalog(), parts.get(0), parts.get(1)};
            case 3 -> parts.toArray(new String[0]);
            default -> throw new StatementException("a materialized table is named catalog.namespace.table, not '"
                    + String.join(".", parts) + "'");
        };
        streamcat(name[0]);
        return name;
    }

    private void streamcat(String catalog) {
        if (!session.isStreamcat(catalog)) {
            throw new StatementException("materialized tables live in a Streamcat catalog; '" + catalog
                    + "' is not one (name the table as <streamcat catalog>.namespace.table)");
        }
    }

    private List<String> qualifiedName(String what) {
        List<String> parts = new ArrayList<>();
        parts.add(identifier(what));
        while (peek().isSymbol(".")) {
            next();
            parts.add(identifier(what));
        }
        return parts;
    }

    private String identifier(String what) {
        Token token = next();
        if (token.kind == Kind.WORD || token.kind == Kind.QUOTED) {
            return token.text;
        }
        throw expected(what, token);
    }

    private List<String> columnList() {
        expectSymbol("(");
        List<String> columns = new ArrayList<>();
        columns.add(identifier("a column name"));
        while (peek().isSymbol(",")) {
            next();
            columns.add(identifier("a column name"));
        }
        expectSymbol(")");
        return columns;
    }

    /**
     * {@code (key = 'value', ...)}: WITH's options (quoted keys) or a PARTITION's values (column names; a value
     * may be a number), in the order written; a key given twice is refused.
     */
    private Map<String, String> pairs(String key, boolean columns) {
        expectSymbol("(");
        Map<String, String> pairs = new LinkedHashMap<>();
        while (true) {
            Token k = next();
            boolean fits = columns ? k.kind == Kind.WORD || k.kind == Kind.QUOTED : k.kind == Kind.STRING;
            if (!fits) {
                throw expected(key, k);
            }
            expectSymbol("=");
            Token v = next();
            if (v.kind != Kind.STRING && !(columns && v.kind == Kind.NUMBER)) {
                throw expected("a value as a quoted string" + (columns ? " or a number" : "") + " for " + k.text, v);
            }
            if (pairs.put(k.text, v.text) != null) {
                throw new StatementException(k.text + " is given twice");
            }
            if (!peek().isSymbol(",")) {
                break;
            }
            next();
        }
        expectSymbol(")");
        return pairs;
    }

    /** A Spark SQL {@code map('k', 'v', ...)} of {@code pairs}: how the procedures take options and partitions. */
    private static String map(Map<String, String> pairs) {
        List<String> items = new ArrayList<>();
        pairs.forEach((k, v) -> {
            items.add(literal(k));
            items.add(literal(v));
        });
        return "map(" + String.join(", ", items) + ")";
    }

    /** {@code = INTERVAL 'n' unit} (or {@code INTERVAL n unit}) as the procedures' text: "n unit". */
    private String freshnessValue() {
        expectSymbol("=");
        expectWord("interval");
        Token amount = next();
        String number = amount.kind == Kind.STRING || amount.kind == Kind.NUMBER ? amount.text.trim() : null;
        if (number == null || !number.matches("[0-9]+")) {
            throw expected("a whole number of units, as in INTERVAL '5' SECOND", amount);
        }
        Token unit = next();
        String u = unit.kind == Kind.WORD ? unit.text.toLowerCase(Locale.ROOT) : "";
        String plural = switch (u) {
            case "second", "seconds" -> "seconds";
            case "minute", "minutes" -> "minutes";
            case "hour", "hours" -> "hours";
            case "day", "days" -> "days";
            default -> throw expected("SECOND, MINUTE, HOUR or DAY", unit);
        };
        return number + " " + plural;
    }

    private String refreshMode() {
        expectSymbol("=");
        Token mode = next();
        if (mode.is("continuous") || mode.is("full")) {
            return mode.text.toLowerCase(Locale.ROOT);
        }
        throw expected("CONTINUOUS or FULL", mode);
    }

    /** The rest of the text after {@code AS}, as written (trailing semicolons dropped). */
    private String query() {
        Token as = next();
        if (!as.is("as")) {
            throw expected("AS <query>", as);
        }
        String query = sql.substring(as.end).strip();
        while (query.endsWith(";")) {
            query = query.substring(0, query.length() - 1).strip();
        }
        if (query.isEmpty()) {
            throw new StatementException("AS needs a query");
        }
        return query;
    }

    private String string(String what) {
        Token token = next();
        if (token.kind != Kind.STRING) {
            throw expected(what + " as a quoted string", token);
        }
        return token.text;
    }

    private void expectWord(String word) {
        Token token = next();
        if (!token.is(word)) {
            throw expected(word.toUpperCase(Locale.ROOT), token);
        }
    }

    private void expectSymbol(String symbol) {
        Token token = next();
        if (!token.isSymbol(symbol)) {
            throw expected("'" + symbol + "'", token);
        }
    }

    private void end() {
        while (peek().isSymbol(";")) {
            next();
        }
        if (peek().kind != Kind.END) {
            throw expected("the end of the statement", peek());
        }
    }

    private StatementException expected(String what, Token found) {
        return new StatementException("expected " + what + " but found " + found.shown() + " at position "
                + (found.start + 1) + " of the materialized-table statement");
    }

    private Token peek() {
        return tokens.get(Math.min(at, tokens.size() - 1));
    }

    private Token next() {
        Token token = peek();
        if (at < tokens.size()) {
            at++;
        }
        return token;
    }

    private static String procedure(String[] name, String procedure, Map<String, String> args) {
        StringBuilder call = new StringBuilder("CALL ").append(quote(name[0])).append(".system.").append(procedure)
                .append("(table => ").append(literal(name[1] + "." + name[2]));
        args.forEach((key, value) -> call.append(", ").append(key).append(" => ").append(value));
        return call.append(")").toString();
    }

    private static String quote(String identifier) {
        return "`" + identifier.replace("`", "``") + "`";
    }

    /** A Spark SQL string literal holding {@code text} exactly (backslashes and quotes escaped). */
    static String literal(String text) {
        return "'" + text.replace("\\", "\\\\").replace("'", "\\'") + "'";
    }

    // -- tokens ------------------------------------------------------------------------------------------

    private static List<Token> tokenize(String sql) {
        List<Token> tokens = new ArrayList<>();
        int i = 0;
        int n = sql.length();
        while (i < n) {
            char c = sql.charAt(i);
            if (Character.isWhitespace(c)) {
                i++;
            } else if (c == '-' && i + 1 < n && sql.charAt(i + 1) == '-') {
                while (i < n && sql.charAt(i) != '\n') {
                    i++;
                }
            } else if (c == '/' && i + 1 < n && sql.charAt(i + 1) == '*') {
                int close = sql.indexOf("*/", i + 2);
                i = close < 0 ? n : close + 2;
            } else if (c == '\'' || c == '"') {
                int start = i;
                StringBuilder text = new StringBuilder();
                i++;
                while (i < n && sql.charAt(i) != c) {
                    if (sql.charAt(i) == '\\' && i + 1 < n) {
                        i++;
                    }
                    text.append(sql.charAt(i++));
                }
                i = Math.min(i + 1, n);
                tokens.add(new Token(Kind.STRING, text.toString(), start, i));
            } else if (c == '`') {
                int start = i;
                StringBuilder text = new StringBuilder();
                i++;
                while (i < n) {
                    if (sql.charAt(i) == '`') {
                        if (i + 1 < n && sql.charAt(i + 1) == '`') {
                            text.append('`');
                            i += 2;
                            continue;
                        }
                        break;
                    }
                    text.append(sql.charAt(i++));
                }
                i = Math.min(i + 1, n);
                tokens.add(new Token(Kind.QUOTED, text.toString(), start, i));
            } else if (Character.isLetter(c) || c == '_') {
                int start = i;
                while (i < n && (Character.isLetterOrDigit(sql.charAt(i)) || sql.charAt(i) == '_')) {
                    i++;
                }
                tokens.add(new Token(Kind.WORD, sql.substring(start, i), start, i));
            } else if (Character.isDigit(c)) {
                int start = i;
                while (i < n && Character.isDigit(sql.charAt(i))) {
                    i++;
                }
                tokens.add(new Token(Kind.NUMBER, sql.substring(start, i), start, i));
            } else {
                tokens.add(new Token(Kind.SYMBOL, String.valueOf(c), i, i + 1));
                i++;
            }
        }
        tokens.add(new Token(Kind.END, "", n, n));
        return tokens;
    }
}
