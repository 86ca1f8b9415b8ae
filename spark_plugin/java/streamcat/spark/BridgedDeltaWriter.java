package streamcat.spark;

import org.apache.spark.TaskContext;
import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.catalyst.expressions.GenericInternalRow;
import org.apache.spark.sql.connector.write.DataWriter;
import org.apache.spark.sql.connector.write.DeltaWriter;
import org.apache.spark.sql.connector.write.WriterCommitMessage;
import org.apache.spark.sql.types.DataType;

import java.io.IOException;
import java.util.Iterator;
import java.util.NoSuchElementException;
import java.util.concurrent.ArrayBlockingQueue;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.TimeUnit;

/**
 * One task's delta writer: turns Spark's pushed changes into rows of the change schema
 * ({@link DeltaWrites#changeSchema}) and pulls them through the Python writer on a thread of its own.
 *
 * The Python writer consumes an iterator ({@code DataWriter.writeAll}) and needs the task's
 * context; the thread runs it inside the same task context, and a bounded queue between the two keeps
 * memory flat. A failure on either side stops the other: the Python side's error is rethrown to
 * Spark by the next change or by {@link #commit()}.
 */
final class BridgedDeltaWriter implements DeltaWriter<InternalRow> {
    private static final int QUEUE = 4096;
    private static final InternalRow END = new GenericInternalRow(0);

    private final DataWriter<InternalRow> python;
    private final DataType[] idTypes;
    private final DataType[] dataTypes;
    private final BlockingQueue<InternalRow> queue = new ArrayBlockingQueue<>(QUEUE);
    private final Thread consumer;
    private volatile Throwable failure;
    private volatile boolean done;

    BridgedDeltaWriter(DataWriter<InternalRow> python, DataType[] idTypes, DataType[] dataTypes) {
        this.python = python;
        this.idTypes = idTypes;
        this.dataTypes = dataTypes;
        TaskContext context = TaskContext.get();
        this.consumer = new Thread(() -> {
            try {
                PythonSourceBridge.inTask(context, () -> {
                    try {
                        python.writeAll(new Drain());
                    } catch (IOException e) {
                        throw new java.io.UncheckedIOException(e);
                    }
                });
            } catch (Throwable t) {
                failure = t;
                queue.clear();  // unblock a producer waiting for room
            }
        }, "streamcat-delta-writer-" + (context == null ? "driver" : context.taskAttemptId()));
        consumer.setDaemon(true);
        consumer.start();
    }

    @Override
    public void delete(InternalRow metadata, InternalRow id) throws IOException {
        put(DeltaWrites.DELETE, id, null);
    }

    @Override
    public void update(InternalRow metadata, InternalRow id, InternalRow row) throws IOException {
        put(DeltaWrites.UPDATE, id, row);
    }

    @Override
    public void reinsert(InternalRow metadata, InternalRow row) throws IOException {
        put(DeltaWrites.REINSERT, null, row);
    }

    @Override
    public void insert(InternalRow row) throws IOException {
        put(DeltaWrites.INSERT, null, row);
    }

    private void put(byte op, InternalRow id, InternalRow row) throws IOException {
        Object[] values = new Object[1 + idTypes.length + dataTypes.length];
        values[0] = op;
        // Spark reuses the rows it passes: copy before the values cross to the other thread.
        if (id != null) {
            InternalRow copy = id.copy();
            for (int i = 0; i < idTypes.length; i++) {
                values[1 + i] = copy.isNullAt(i) ? null : copy.get(i, idTypes[i]);
            }
        }
        if (row != null) {
            InternalRow copy = row.copy();
            int base = 1 + idTypes.length;
            for (int i = 0; i < dataTypes.length; i++) {
                values[base + i] = copy.isNullAt(i) ? null : copy.get(i, dataTypes[i]);
            }
        }
        offer(new GenericInternalRow(values));
    }

    private void offer(InternalRow row) throws IOException {
        try {
            while (!queue.offer(row, 100, TimeUnit.MILLISECONDS)) {
                check();
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IOException("interrupted while handing rows to the Python writer", e);
        }
        check();
    }

    private void check() throws IOException {
        Throwable t = failure;
        if (t != null) {
            throw DeltaWrites.io(t instanceof java.io.UncheckedIOException u ? u.getCause() : t);
        }
    }

    private void finish() throws IOException {
        if (!done) {
            done = true;
            offer(END);
        }
        try {
            consumer.join();
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IOException("interrupted while the Python writer finished", e);
        }
        check();
    }

    @Override
    public WriterCommitMessage commit() throws IOException {
        finish();
        return python.commit();
    }

    @Override
    public void abort() throws IOException {
        done = true;
        consumer.interrupt();
        queue.clear();
        queue.offer(END);
        try {
            consumer.join(TimeUnit.SECONDS.toMillis(30));
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
        python.abort();
    }

    @Override
    public void close() throws IOException {
        python.close();
    }

    /** The rows handed over, until the end marker. */
    private final class Drain implements Iterator<InternalRow> {
        private InternalRow next;

        @Override
        public boolean hasNext() {
            if (next == null) {
                try {
                    next = queue.take();
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                    throw new IllegalStateException("the row-level write was aborted", e);
                }
            }
            return next != END;
        }

        @Override
        public InternalRow next() {
            if (!hasNext()) {
                throw new NoSuchElementException();
            }
            InternalRow out = next;
            next = null;
            return out;
        }
    }
}
