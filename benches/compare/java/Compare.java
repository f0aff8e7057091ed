import java.lang.management.ManagementFactory;
import java.lang.ref.Reference;
import java.lang.reflect.Method;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.CyclicBarrier;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.ForkJoinPool;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.ScheduledThreadPoolExecutor;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicLongArray;

/**
 * {@code java Compare <stpe|fjp> <workload> [--quick]}: the Java side of the side-by-side
 * benchmark. Same workloads, sizes, generator and JSON fields as the Rust binary
 * ({@code ../rust/src/workloads.rs} holds the reference comments); each workload runs twice
 * in this JVM and only the second, warmed run is printed.
 *
 * <p>Systems, 2 workers each:
 * <ul>
 *   <li>{@code stpe}: {@link ScheduledThreadPoolExecutor} with 2 core threads and
 *       {@code setRemoveOnCancelPolicy(true)}.</li>
 *   <li>{@code fjp}: {@code new ForkJoinPool(2)} used through {@link ScheduledExecutorService},
 *       which {@code ForkJoinPool} implements from JDK 25 on (its DelayScheduler; it adds
 *       one scheduler thread of its own). The cast is checked at run time only, so this file
 *       also compiles with JDK 17, where {@code fjp} fails with a clear message.</li>
 * </ul>
 */
public final class Compare {
    static final int WORKERS = 2;
    static final long SEED = 0x5EED_2024L;
    static final long MS = 1_000_000L;
    static final long SEC = 1_000_000_000L;
    static final long HOUR = 3600 * SEC;

    // ------------------------------------------------------------------------------------
    // Systems
    // ------------------------------------------------------------------------------------

    /** A pool under test plus the one thing the interface does not offer: its queue size. */
    static final class Sys {
        final ScheduledExecutorService pool;
        final String kind;

        Sys(String kind) {
            this.kind = kind;
            if (kind.equals("stpe")) {
                ScheduledThreadPoolExecutor e = new ScheduledThreadPoolExecutor(WORKERS);
                e.setRemoveOnCancelPolicy(true);
                e.prestartAllCoreThreads();
                pool = e;
            } else if (kind.equals("fjp")) {
                Object fjp = new ForkJoinPool(WORKERS);
                if (!(fjp instanceof ScheduledExecutorService)) {
                    ((ExecutorService) fjp).shutdownNow();
                    throw new IllegalStateException("ForkJoinPool is not a ScheduledExecutorService"
                            + " before JDK 25 (running on " + Runtime.version() + ")");
                }
                pool = (ScheduledExecutorService) fjp;
            } else {
                throw new IllegalArgumentException("unknown system " + kind);
            }
        }

        /** Tasks still held (cancelled-but-not-removed included), or -1 if unknown. */
        long pending() {
            if (pool instanceof ScheduledThreadPoolExecutor) {
                return ((ScheduledThreadPoolExecutor) pool).getQueue().size();
            }
            try { // ForkJoinPool.getDelayedTaskCount(), JDK 25+
                Method m = pool.getClass().getMethod("getDelayedTaskCount");
                return (Long) m.invoke(pool);
            } catch (ReflectiveOperationException e) {
                return -1;
            }
        }

        void dispose() {
            pool.shutdownNow();
            try {
                if (!pool.awaitTermination(30, TimeUnit.SECONDS)) {
                    System.err.println(kind + ": pool not terminated 30 s after shutdownNow");
                }
            } catch (InterruptedException e) {
                throw new RuntimeException(e);
            }
        }
    }

    static Sys start(String kind) throws Exception {
        Sys s = new Sys(kind);
        warmUp(s);
        return s;
    }

    /** A few no-op tasks, waited for: worker threads exist before anything is timed. */
    static void warmUp(Sys s) throws Exception {
        CountDownLatch done = new CountDownLatch(4);
        for (int i = 0; i < 4; i++) {
            s.pool.schedule(done::countDown, 0, TimeUnit.NANOSECONDS);
        }
        if (!done.await(10, TimeUnit.SECONDS)) {
            throw new IllegalStateException("warm-up tasks did not run");
        }
    }

    // ------------------------------------------------------------------------------------
    // Sizes
    // ------------------------------------------------------------------------------------

    static final class Params {
        final boolean quick;
        final long burstN;
        final int delayedN, cancelN;
        final long timeoutsPerProducer;
        final int producersThreads;
        final long producersPerThread;
        final long rearmPerProducer;
        final int idleTimeouts;
        final long idleRearms;
        final int periodicTasks;
        final long periodicSecs;
        final int wakeN;
        final int[] scalingSizes;
        final int scalingOps;

        Params(boolean quick) {
            this.quick = quick;
            burstN = quick ? 50_000 : 1_000_000;
            delayedN = quick ? 10_000 : 200_000;
            cancelN = quick ? 50_000 : 1_000_000;
            timeoutsPerProducer = quick ? 25_000 : 500_000;
            producersThreads = 8;
            producersPerThread = quick ? 20_000 : 200_000;
            rearmPerProducer = quick ? 50_000 : 500_000;
            idleTimeouts = quick ? 10_000 : 100_000;
            idleRearms = quick ? 100_000 : 1_000_000;
            periodicTasks = 1_000;
            periodicSecs = quick ? 1 : 3;
            wakeN = quick ? 200 : 2_000;
            scalingSizes = quick ? new int[] {1_000, 10_000, 100_000}
                    : new int[] {1_000, 10_000, 100_000, 1_000_000};
            scalingOps = quick ? 20_000 : 200_000;
        }
    }

    // ------------------------------------------------------------------------------------
    // Helpers (twins of ../rust/src/util.rs)
    // ------------------------------------------------------------------------------------

    /** SplitMix64, same steps and same double-based bound as the Rust generator. */
    static final class SplitMix64 {
        long state;

        SplitMix64(long seed) {
            state = seed;
        }

        long next() {
            state += 0x9E3779B97F4A7C15L;
            long z = state;
            z = (z ^ (z >>> 30)) * 0xBF58476D1CE4E5B9L;
            z = (z ^ (z >>> 27)) * 0x94D049BB133111EBL;
            return z ^ (z >>> 31);
        }

        long below(long bound) {
            double unit = (next() >>> 11) * 0x1.0p-53;
            return (long) (unit * bound);
        }

        int[] permutation(int n) {
            int[] v = new int[n];
            for (int i = 0; i < n; i++) v[i] = i;
            for (int i = n - 1; i >= 1; i--) {
                int j = (int) below(i + 1L);
                int t = v[i];
                v[i] = v[j];
                v[j] = t;
            }
            return v;
        }
    }

    /**
     * Heap in use after garbage collection: the Java counterpart of the Rust side's RSS after
     * {@code malloc_trim} and counted heap bytes. Several full collections (System.gc() is a
     * full collection with G1) with short pauses so that it settles.
     */
    static long heapAfterGc() throws InterruptedException {
        for (int i = 0; i < 3; i++) {
            System.gc();
            Thread.sleep(50);
        }
        return ManagementFactory.getMemoryMXBean().getHeapMemoryUsage().getUsed();
    }

    /** Process CPU time, all threads (JIT and GC included), user + system. */
    static long processCpuNs() {
        return ((com.sun.management.OperatingSystemMXBean)
                ManagementFactory.getOperatingSystemMXBean()).getProcessCpuTime();
    }

    static long percentile(long[] sorted, double q) {
        int rank = (int) Math.ceil(q * sorted.length);
        return sorted[Math.max(1, Math.min(rank, sorted.length)) - 1];
    }

    static double us(long ns) {
        return ns / 1_000.0;
    }

    static double nsPerOp(long totalNs, long ops) {
        return (double) totalNs / ops;
    }

    static void sleepUntil(long t) throws InterruptedException {
        for (long now = System.nanoTime(); now - t < 0; now = System.nanoTime()) {
            TimeUnit.NANOSECONDS.sleep(t - now);
        }
    }

    /** One flat JSON object in insertion order; same formatting as the Rust side. */
    static final class Json {
        final StringBuilder b = new StringBuilder();

        Json key(String k) {
            if (b.length() > 0) b.append(',');
            b.append('"').append(k).append("\":");
            return this;
        }

        Json str(String k, String v) {
            key(k).b.append('"').append(v.replace("\\", "\\\\").replace("\"", "\\\"")).append('"');
            return this;
        }

        Json integer(String k, long v) {
            key(k).b.append(v);
            return this;
        }

        Json optInt(String k, long v) {
            if (v < 0) {
                key(k).b.append("null");
            } else {
                key(k).b.append(v);
            }
            return this;
        }

        Json num(String k, double v) {
            key(k).b.append(fmt(v));
            return this;
        }

        Json bool(String k, boolean v) {
            key(k).b.append(v);
            return this;
        }

        Json nums(String k, double[] v) {
            key(k).b.append('[');
            for (int i = 0; i < v.length; i++) b.append(i == 0 ? "" : ",").append(fmt(v[i]));
            b.append(']');
            return this;
        }

        Json ints(String k, long[] v) {
            key(k).b.append('[');
            for (int i = 0; i < v.length; i++) b.append(i == 0 ? "" : ",").append(v[i]);
            b.append(']');
            return this;
        }

        static String fmt(double v) {
            return Double.isFinite(v) ? String.format(Locale.ROOT, "%.3f", v) : "null";
        }

        @Override
        public String toString() {
            return "{" + b + "}";
        }
    }

    static Json lateness(Json json, String prefix, long[] lat) {
        long[] v = lat.clone();
        Arrays.sort(v);
        return json.num(prefix + "p50_us", us(percentile(v, 0.50)))
                .num(prefix + "p99_us", us(percentile(v, 0.99)))
                .num(prefix + "p999_us", us(percentile(v, 0.999)))
                .num(prefix + "max_us", us(v[v.length - 1]))
                .num(prefix + "min_us", us(v[0]));
    }

    // ------------------------------------------------------------------------------------
    // W1 burst
    // ------------------------------------------------------------------------------------

    static final class Burst {
        final AtomicLong ran = new AtomicLong();
        final long target;
        volatile long endNs;
        final CountDownLatch done = new CountDownLatch(1);

        Burst(long target) {
            this.target = target;
        }
    }

    static Json burst(String kind, Params p) throws Exception {
        long n = p.burstN;
        Sys s = start(kind);
        Burst st = new Burst(n);
        Runnable task = () -> {
            if (st.ran.incrementAndGet() == st.target) {
                st.endNs = System.nanoTime();
                st.done.countDown();
            }
        };
        long t0 = System.nanoTime();
        for (long i = 0; i < n; i++) {
            s.pool.schedule(task, 0, TimeUnit.NANOSECONDS);
        }
        long submitted = System.nanoTime();
        boolean ok = st.done.await(120, TimeUnit.SECONDS);
        long ran = st.ran.get();
        Json json = new Json().integer("n", n);
        if (ok) {
            long elapsed = st.endNs - t0;
            json.num("tasks_per_s", n * (double) SEC / elapsed)
                    .num("elapsed_ms", elapsed / (double) MS)
                    .num("submit_ns_per_op", nsPerOp(submitted - t0, n));
        } else {
            json.str("error", "only " + ran + " of " + n + " tasks ran within 120 s");
        }
        s.dispose();
        return json.integer("ran", ran);
    }

    // ------------------------------------------------------------------------------------
    // W2 delayed
    // ------------------------------------------------------------------------------------

    static Json delayed(String kind, Params p) throws Exception {
        int n = p.delayedN;
        SplitMix64 rng = new SplitMix64(SEED);
        long[] delays = new long[n];
        for (int i = 0; i < n; i++) delays[i] = rng.below(SEC);
        Sys s = start(kind);
        long[] lat = new long[n];
        AtomicLong left = new AtomicLong(n);
        CountDownLatch done = new CountDownLatch(1);
        long t0 = System.nanoTime();
        for (int i = 0; i < n; i++) {
            final int idx = i;
            final long deadline = System.nanoTime() + delays[i];
            s.pool.schedule(() -> {
                lat[idx] = System.nanoTime() - deadline;
                if (left.decrementAndGet() == 0) done.countDown();
            }, delays[i], TimeUnit.NANOSECONDS);
        }
        long t1 = System.nanoTime();
        boolean ok = done.await(60, TimeUnit.SECONDS);
        Json json = new Json().integer("n", n).num("schedule_ns_per_op", nsPerOp(t1 - t0, n));
        if (ok) {
            lateness(json, "late_", lat);
        } else {
            json.str("error",
                    left.get() + " of " + n + " tasks had not run 59 s after their deadline");
        }
        s.dispose();
        return json;
    }

    // ------------------------------------------------------------------------------------
    // W3 cancel
    // ------------------------------------------------------------------------------------

    /**
     * Memory: the handle array, delays and order exist before the baseline, so the deltas
     * count what the executor allocates per task (task object, lambda, queue slot), not
     * the caller's array slot. Measured as heap used after full GCs; "retained" after
     * cancelling, nulling every handle and a 0.5 s pause (asynchronous cleanup).
     */
    static Json cancel(String kind, Params p) throws Exception {
        int n = p.cancelN;
        SplitMix64 rng = new SplitMix64(SEED);
        long[] delays = new long[n];
        for (int i = 0; i < n; i++) delays[i] = HOUR + rng.below(HOUR);
        int[] order = rng.permutation(n);
        ScheduledFuture<?>[] handles = new ScheduledFuture<?>[n];
        Sys s = start(kind);
        Runnable noop = () -> { };

        Thread.sleep(200);
        long heap0 = heapAfterGc();

        long t0 = System.nanoTime();
        for (int i = 0; i < n; i++) {
            handles[i] = s.pool.schedule(noop, delays[i], TimeUnit.NANOSECONDS);
        }
        long t1 = System.nanoTime();

        Thread.sleep(200);
        long heap1 = heapAfterGc();
        long pendingBefore = s.pending();

        long cancelled = 0, refused = 0;
        long t2 = System.nanoTime();
        for (int i : order) {
            if (handles[i].cancel(false)) cancelled++; else refused++;
        }
        long t3 = System.nanoTime();
        long pendingAfter = s.pending();

        Arrays.fill(handles, null);
        Thread.sleep(500);
        long heap2 = heapAfterGc();
        // Keep the inputs alive to the end, as the Rust side does: otherwise the JIT lets
        // the collector free them mid-way and the deltas come out 12 B/task too low.
        Reference.reachabilityFence(delays);
        Reference.reachabilityFence(order);
        Reference.reachabilityFence(handles);

        // Java reports heap only; the RSS-named fields carry the same figure so the report
        // can put Java beside both Rust measures.
        double per = (heap1 - heap0) / (double) n;
        double retained = (heap2 - heap0) / (double) n;
        Json json = new Json().integer("n", n)
                .num("schedule_ns_per_op", nsPerOp(t1 - t0, n))
                .num("cancel_ns_per_op", nsPerOp(t3 - t2, n))
                .optInt("queue_before_cancel", pendingBefore)
                .optInt("queue_after_cancel", pendingAfter)
                .num("mem_bytes_per_task", per)
                .num("mem_retained_bytes_per_task", retained)
                .num("heap_bytes_per_task", per)
                .num("heap_retained_bytes_per_task", retained)
                .integer("cancel_true", cancelled)
                .integer("cancel_false", refused);
        s.dispose();
        return json;
    }

    // ------------------------------------------------------------------------------------
    // W4 timeouts
    // ------------------------------------------------------------------------------------

    static Json timeouts(String kind, Params p) throws Exception {
        long m = p.timeoutsPerProducer;
        long expected = 2 * (m / 100);
        Sys s = start(kind);
        AtomicLong fired = new AtomicLong();
        AtomicLong refused = new AtomicLong();
        Runnable task = fired::incrementAndGet;
        CyclicBarrier gate = new CyclicBarrier(3);
        List<Thread> producers = new ArrayList<>();
        for (int t = 0; t < 2; t++) {
            Thread th = new Thread(() -> {
                try {
                    gate.await();
                } catch (Exception e) {
                    throw new RuntimeException(e);
                }
                long localRefused = 0;
                for (long i = 0; i < m; i++) {
                    ScheduledFuture<?> h = s.pool.schedule(task, 50, TimeUnit.MILLISECONDS);
                    if (i % 100 != 99 && !h.cancel(false)) localRefused++;
                }
                refused.addAndGet(localRefused);
            });
            th.start();
            producers.add(th);
        }
        gate.await();
        long t0 = System.nanoTime();
        for (Thread th : producers) th.join();
        long t1 = System.nanoTime();
        long got = waitForSurvivors(fired, expected);
        long iters = 2 * m;
        Json json = new Json().integer("iterations", iters)
                .num("iterations_per_s", iters * (double) SEC / (t1 - t0))
                .integer("fired", got)
                .integer("expected_fired", expected)
                .bool("exact", got == expected)
                .integer("cancel_false", refused.get());
        firedVerdict(json, got, expected, refused.get());
        s.dispose();
        return json;
    }

    // ------------------------------------------------------------------------------------
    // W7 many producers
    // ------------------------------------------------------------------------------------

    /** W7 times every this many iterations (see the Rust side). */
    static final long LAT_EVERY = 16;

    static Json producers(String kind, Params p) throws Exception {
        int threads = p.producersThreads;
        long m = p.producersPerThread;
        long expected = threads * (m / 100);
        Sys s = start(kind);
        AtomicLong fired = new AtomicLong();
        AtomicLong refused = new AtomicLong();
        Runnable task = fired::incrementAndGet;
        CyclicBarrier gate = new CyclicBarrier(threads + 1);
        int perThread = (int) ((m + LAT_EVERY - 1) / LAT_EVERY);
        long[][] lat = new long[threads][perThread]; // allocated (and zeroed) before the start
        int[] count = new int[threads];
        List<Thread> producers = new ArrayList<>();
        for (int t = 0; t < threads; t++) {
            final long[] mine = lat[t];
            final int idx = t;
            Thread th = new Thread(() -> {
                try {
                    gate.await();
                } catch (Exception e) {
                    throw new RuntimeException(e);
                }
                long localRefused = 0;
                int n = 0;
                for (long i = 0; i < m; i++) {
                    boolean timed = i % LAT_EVERY == 0;
                    long start = timed ? System.nanoTime() : 0;
                    ScheduledFuture<?> h = s.pool.schedule(task, 50, TimeUnit.MILLISECONDS);
                    if (i % 100 != 99 && !h.cancel(false)) localRefused++;
                    if (timed) mine[n++] = System.nanoTime() - start;
                }
                count[idx] = n;
                refused.addAndGet(localRefused);
            });
            th.start();
            producers.add(th);
        }
        gate.await();
        long t0 = System.nanoTime();
        for (Thread th : producers) th.join();
        long t1 = System.nanoTime();
        long got = waitForSurvivors(fired, expected);
        long lateCancels = refused.get();
        long iters = threads * m;
        int total = 0;
        for (int c : count) total += c;
        long[] all = new long[total];
        for (int t = 0, at = 0; t < threads; at += count[t], t++) {
            System.arraycopy(lat[t], 0, all, at, count[t]);
        }
        Arrays.sort(all);
        Json json = new Json().integer("producers", threads).integer("iterations", iters)
                .num("iterations_per_s", iters * (double) SEC / (t1 - t0))
                .integer("lat_every", LAT_EVERY)
                .integer("lat_samples", total)
                .integer("lat_p50_ns", percentile(all, 0.50))
                .integer("lat_p99_ns", percentile(all, 0.99))
                .integer("lat_max_ns", all[all.length - 1])
                .integer("fired", got)
                .integer("expected_fired", expected)
                .bool("exact", got == expected)
                .integer("cancel_false", lateCancels);
        firedVerdict(json, got, expected, lateCancels);
        s.dispose();
        return json;
    }

    /** W4 and W7: waits for the survivors (due 50 ms after their submission), then a little
     * longer so that a cancelled task that fires anyway would be counted; returns the count. */
    static long waitForSurvivors(AtomicLong fired, long expected) throws InterruptedException {
        long limit = System.nanoTime() + 30 * SEC;
        while (fired.get() < expected && System.nanoTime() - limit < 0) Thread.sleep(5);
        Thread.sleep(200);
        return fired.get();
    }

    /** W4 and W7: an error if the fired count is wrong; a note if it is consistent but not
     * exact because some cancels found their task started (the producer was off the CPU for
     * over 50 ms between schedule and cancel). */
    static void firedVerdict(Json json, long got, long expected, long lateCancels) {
        if (got != expected + lateCancels) {
            json.str("error", got + " tasks fired, expected " + expected);
        } else if (lateCancels > 0) {
            json.str("note", got + " tasks fired: " + lateCancels + " cancel(s) came after the"
                    + " task had started (producer descheduled for over 50 ms)");
        }
    }

    // ------------------------------------------------------------------------------------
    // W8 re-arm
    // ------------------------------------------------------------------------------------

    /**
     * java.util.concurrent has no way to move a queued task: re-arming is cancel + schedule,
     * replacing the handle, for STPE and FJP alike.
     */
    static Json rearm(String kind, Params p) throws Exception {
        final int producersN = 2;
        long m = p.rearmPerProducer;
        Sys s = start(kind);
        AtomicLong fired = new AtomicLong();
        Runnable task = fired::incrementAndGet;
        CyclicBarrier gate = new CyclicBarrier(producersN + 1);
        long[] maxGap = new long[producersN];
        long[] end = new long[producersN];
        boolean[] refused = new boolean[producersN];
        List<Thread> producers = new ArrayList<>();
        for (int t = 0; t < producersN; t++) {
            final int idx = t;
            Thread th = new Thread(() -> {
                ScheduledFuture<?> h = s.pool.schedule(task, 50, TimeUnit.MILLISECONDS);
                long gap = 0;
                try {
                    gate.await();
                } catch (Exception e) {
                    throw new RuntimeException(e);
                }
                long prev = System.nanoTime();
                for (long i = 0; i < m; i++) {
                    h.cancel(false);
                    h = s.pool.schedule(task, 50, TimeUnit.MILLISECONDS);
                    if (i % 1024 == 1023) {
                        long now = System.nanoTime();
                        gap = Math.max(gap, now - prev);
                        prev = now;
                    }
                }
                // Cancel the last task at once: the other producer may still run for longer
                // than the deadline (see the Rust side).
                long e = System.nanoTime();
                refused[idx] = !h.cancel(false);
                maxGap[idx] = Math.max(gap, e - prev);
                end[idx] = e;
            });
            th.start();
            producers.add(th);
        }
        gate.await();
        long t0 = System.nanoTime();
        for (Thread th : producers) th.join();
        long t1 = Math.max(end[0], end[1]);
        long during = fired.get();
        long cancelFalse = (refused[0] ? 1 : 0) + (refused[1] ? 1 : 0);
        Thread.sleep(200);
        long got = fired.get();
        long gap = Math.max(maxGap[0], maxGap[1]);
        String gapMs = String.format(Locale.ROOT, "%.1f", gap / (double) MS);
        long iters = producersN * m;
        Json json = new Json().integer("producers", producersN).integer("iterations", iters)
                .num("iterations_per_s", iters * (double) SEC / (t1 - t0))
                .str("method", "cancel+schedule")
                .integer("fired_during_loop", during)
                .integer("fired", got)
                .bool("none_fired", got == 0)
                .integer("last_cancel_false", cancelFalse)
                .num("max_gap_ms", gap / (double) MS);
        if (got > 0) {
            if (gap >= 50 * MS) {
                json.str("note", got + " task(s) fired: a producer was off the CPU for " + gapMs
                        + " ms, past the 50 ms deadline");
            } else {
                json.str("error", got + " task(s) fired (" + during + " during the loop),"
                        + " expected none; longest producer gap " + gapMs + " ms");
            }
        }
        s.dispose();
        return json;
    }

    // ------------------------------------------------------------------------------------
    // W9 idle timeouts
    // ------------------------------------------------------------------------------------

    /**
     * A server's idle timeouts (see the Rust side): one thread keeps N timeouts pending 60 s
     * ahead and, M times, pushes a random one back to 60 s from now with cancel + schedule.
     * The same fixed-seed xorshift picks the timeouts.
     */
    static Json idle(String kind, Params p) throws Exception {
        int n = p.idleTimeouts;
        long m = p.idleRearms;
        Sys s = start(kind);
        AtomicLong fired = new AtomicLong();
        Runnable task = fired::incrementAndGet;
        List<ScheduledFuture<?>> handles = new ArrayList<>(n);
        for (int i = 0; i < n; i++) {
            handles.add(s.pool.schedule(task, 60, TimeUnit.SECONDS));
        }
        long x = 0x9E3779B97F4A7C15L;
        long t0 = System.nanoTime();
        for (long k = 0; k < m; k++) {
            x ^= x >>> 12;
            x ^= x << 25;
            x ^= x >>> 27;
            int i = (int) Long.remainderUnsigned(x * 0x2545F4914F6CDD1DL, n);
            handles.get(i).cancel(false);
            handles.set(i, s.pool.schedule(task, 60, TimeUnit.SECONDS));
        }
        long t1 = System.nanoTime();
        for (ScheduledFuture<?> h : handles) h.cancel(false);
        long got = fired.get();
        Json json = new Json().integer("timeouts", n).integer("rearms", m)
                .num("rearms_per_s", m * (double) SEC / (t1 - t0))
                .num("ns_per_rearm", (t1 - t0) / (double) m)
                .str("method", "cancel+schedule")
                .integer("fired", got)
                .bool("none_fired", got == 0);
        if (got > 0) json.str("error", got + " task(s) fired, expected none");
        s.dispose();
        return json;
    }

    // ------------------------------------------------------------------------------------
    // W5 periodic
    // ------------------------------------------------------------------------------------

    static Json periodic(String kind, Params p) throws Exception {
        Json json = new Json().integer("tasks", p.periodicTasks).integer("period_ms", 10)
                .integer("secs", p.periodicSecs);
        periodicOne(kind, p, json, "rate_", true);
        periodicOne(kind, p, json, "delay_", false);
        return json;
    }

    static void periodicOne(String kind, Params p, Json json, String prefix, boolean fixedRate)
            throws Exception {
        int n = p.periodicTasks;
        long period = 10 * MS;
        long window = p.periodicSecs * SEC;
        Sys s = start(kind);
        AtomicLongArray counts = new AtomicLongArray(n);
        ScheduledFuture<?>[] handles = new ScheduledFuture<?>[n];
        long[] firstDue = new long[n];
        long cpu0 = processCpuNs();
        long t0 = System.nanoTime();
        for (int i = 0; i < n; i++) {
            final int idx = i;
            long initial = period * i / n;
            Runnable task = () -> counts.incrementAndGet(idx);
            firstDue[i] = System.nanoTime() + initial;
            handles[i] = fixedRate
                    ? s.pool.scheduleAtFixedRate(task, initial, period, TimeUnit.NANOSECONDS)
                    : s.pool.scheduleWithFixedDelay(task, initial, period, TimeUnit.NANOSECONDS);
        }
        long scheduled = System.nanoTime();
        sleepUntil(t0 + window);
        long cancelStart = System.nanoTime();
        for (ScheduledFuture<?> h : handles) h.cancel(false);
        long cancelEnd = System.nanoTime();
        long cpu1 = processCpuNs();
        long wall = System.nanoTime() - t0;
        Thread.sleep(50);
        long min = Long.MAX_VALUE, max = 0, total = 0;
        for (int i = 0; i < n; i++) {
            long c = counts.get(i);
            min = Math.min(min, c);
            max = Math.max(max, c);
            total += c;
        }
        long expect = window / period;
        json.integer(prefix + "runs_min", min)
                .integer(prefix + "runs_max", max)
                .num(prefix + "runs_mean", total / (double) n)
                .num(prefix + "cpu_ms", (cpu1 - cpu0) / (double) MS)
                .num(prefix + "cpu_pct", 100.0 * (cpu1 - cpu0) / wall)
                .num(prefix + "schedule_ms", (scheduled - t0) / (double) MS)
                .num(prefix + "cancel_late_ms", (cancelStart - (t0 + window)) / (double) MS);
        if (fixedRate) {
            // The check, then the same against the actual cancel times (see the
            // Rust side for the reasoning).
            boolean exact = min + 1 >= expect && max <= expect + 1;
            long off = 0;
            for (int i = 0; i < n; i++) {
                long r = counts.get(i);
                if (r + 1 < due(cancelStart, firstDue[i], period)
                        || r > due(cancelEnd, firstDue[i], period)) {
                    off++;
                }
            }
            json.integer("rate_expected_runs", expect).bool("rate_exact", exact)
                    .integer("rate_tasks_off", off);
            String late = String.format(Locale.ROOT, "%.1f",
                    (cancelStart - (t0 + window)) / (double) MS);
            if (off > 0) {
                json.str("error", "fixed rate: " + off + " tasks ran a number of times"
                        + " inconsistent with when they were cancelled (runs per task in ["
                        + min + ", " + max + "], cancel began " + late
                        + " ms after the window)");
            } else if (!exact) {
                String sched = String.format(Locale.ROOT, "%.1f", (scheduled - t0) / (double) MS);
                json.str("note", "fixed-rate runs per task in [" + min + ", " + max + "], not "
                        + expect + " ± 1, yet each count matches when the driver scheduled the"
                        + " task (the loop took " + sched + " ms) and cancelled it (began "
                        + late + " ms late)");
            }
        }
        s.dispose();
    }

    /** Runs of a fixed-rate task first due at {@code first} that fall due before {@code t}. */
    static long due(long t, long first, long period) {
        return t <= first ? 0 : (t - first + period - 1) / period;
    }

    // ------------------------------------------------------------------------------------
    // W6 wake latency
    // ------------------------------------------------------------------------------------

    static Json wake(String kind, Params p) throws Exception {
        int n = p.wakeN;
        Sys s = start(kind);
        long[] lat = new long[n];
        Json json = new Json().integer("n", n);
        for (int i = 0; i < n; i++) {
            final int idx = i;
            CountDownLatch done = new CountDownLatch(1);
            final long deadline = System.nanoTime() + 2 * MS;
            s.pool.schedule(() -> {
                lat[idx] = System.nanoTime() - deadline;
                done.countDown();
            }, 2, TimeUnit.MILLISECONDS);
            if (!done.await(10, TimeUnit.SECONDS)) {
                json.str("error", "iteration " + i + ": task not run within 10 s");
                s.dispose();
                return json;
            }
        }
        lateness(json, "late_", lat);
        s.dispose();
        return json;
    }

    // ------------------------------------------------------------------------------------
    // Scaling
    // ------------------------------------------------------------------------------------

    static Json scaling(String kind, Params p) throws Exception {
        int sizes = p.scalingSizes.length;
        double[] sched = new double[sizes], canc = new double[sizes];
        long[] left = new long[sizes], sizeList = new long[sizes];
        SplitMix64 rng = new SplitMix64(SEED);
        Runnable noop = () -> { };
        for (int z = 0; z < sizes; z++) {
            int size = p.scalingSizes[z];
            sizeList[z] = size;
            Sys s = start(kind);
            for (int i = 0; i < size; i++) {
                s.pool.schedule(noop, HOUR + rng.below(HOUR), TimeUnit.NANOSECONDS);
            }
            int k = Math.min(size / 10, 1000);
            int rounds = (p.scalingOps + k - 1) / k;
            ScheduledFuture<?>[] batch = new ScheduledFuture<?>[k];
            long[] delays = new long[k];
            long schedNs = 0, cancelNs = 0;
            for (int round = 0; round <= rounds; round++) { // round 0 is untimed warm-up
                for (int i = 0; i < k; i++) delays[i] = HOUR + rng.below(HOUR);
                int[] order = rng.permutation(k);
                long t0 = System.nanoTime();
                for (int i = 0; i < k; i++) {
                    batch[i] = s.pool.schedule(noop, delays[i], TimeUnit.NANOSECONDS);
                }
                long t1 = System.nanoTime();
                for (int i : order) batch[i].cancel(false);
                long t2 = System.nanoTime();
                if (round > 0) {
                    schedNs += t1 - t0;
                    cancelNs += t2 - t1;
                }
                Arrays.fill(batch, null);
            }
            sched[z] = nsPerOp(schedNs, (long) rounds * k);
            canc[z] = nsPerOp(cancelNs, (long) rounds * k);
            left[z] = s.pending();
            s.dispose();
        }
        return new Json().ints("sizes", sizeList).nums("schedule_ns_per_op", sched)
                .nums("cancel_ns_per_op", canc).ints("pending_at_end", left);
    }

    // ------------------------------------------------------------------------------------
    // Main
    // ------------------------------------------------------------------------------------

    static final String USAGE = "usage: java Compare <stpe|fjp> "
            + "<w1|burst|w2|delayed|w3|cancel|w4|timeouts|w5|periodic|w6|wake|w7|producers"
            + "|w8|rearm|w9|idle|scaling> [--quick]";

    static Json runOnce(String kind, String workload, Params p) throws Exception {
        switch (workload) {
            case "w1": return burst(kind, p);
            case "w2": return delayed(kind, p);
            case "w3": return cancel(kind, p);
            case "w4": return timeouts(kind, p);
            case "w5": return periodic(kind, p);
            case "w6": return wake(kind, p);
            case "w7": return producers(kind, p);
            case "w8": return rearm(kind, p);
            case "w9": return idle(kind, p);
            case "scaling": return scaling(kind, p);
            default: throw new IllegalArgumentException(USAGE);
        }
    }

    static String canonical(String w) {
        switch (w) {
            case "burst": return "w1";
            case "delayed": return "w2";
            case "cancel": return "w3";
            case "timeouts": return "w4";
            case "periodic": return "w5";
            case "wake": return "w6";
            case "producers": return "w7";
            case "rearm": return "w8";
            case "idle": return "w9";
            default: return w;
        }
    }

    public static void main(String[] args) throws Exception {
        boolean quick = false;
        List<String> pos = new ArrayList<>();
        for (String a : args) {
            if (a.equals("--quick")) quick = true; else if (!a.startsWith("--")) pos.add(a);
        }
        if (pos.size() != 2) {
            System.err.println(USAGE);
            System.exit(2);
        }
        String kind = pos.get(0);
        String workload = canonical(pos.get(1));
        Params p = new Params(quick);
        runOnce(kind, workload, p); // first run: warms the JIT, result discarded
        Json result = runOnce(kind, workload, p);
        Json line = new Json().str("system", kind).str("workload", workload).bool("quick", quick)
                .str("java", Runtime.version().toString());
        String body = result.b.toString();
        System.out.println(body.isEmpty() ? line.toString() : "{" + line.b + "," + body + "}");
        System.exit(0); // do not wait for pools that were only shut down
    }
}
