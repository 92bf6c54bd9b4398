// LocksScenario: threads that contend on one lock with known hold times and
// measure their own waits, for lock contention (dnprof run/attach --locks).
//
//   dotnet Scenarios.dll locks [monitor|lock|lockspin|both|none|barge|bench|blocking] [THREADS] [ROUNDS] [HOLD_US] [crash] [wait FILE]
//
// crash: 0.5 s after its waits the program dies of an unhandled exception.
// recursive: a Lock's slow path entered often and never contended (recursion,
// threads' first Lock, tries that fail at once; .NET 9+).
//
// monitor: THREADS threads (default 4) take one Gate object ROUNDS times each
// (default 100) with `lock`, holding it HOLD_US microseconds (default 1000,
// a sleep); lock: the same on a System.Threading.Lock; lockspin: the Lock held
// HOLD_US of busy work, a 1 ms sleep between two (its waiters spin, and often
// get it by spinning: no ContentionStart for those); both (the default): one
// then the other; none: one thread takes a lock many times and never contends.
// Each acquisition first tries Monitor.TryEnter (Lock.TryEnter); when that fails
// the acquisition is contended, and the thread times its wait (a Stopwatch around
// the lock statement). It prints, per kind:
//   monitor waited_ns=N contended=C long=L threads=T owners=tid,tid,...
// where waited_ns sums the contended waits, long counts those of 200 us or more
// (too long for the runtime's spinning to have taken the lock: the runtime
// raised ContentionStart for each), and owners the OS thread ids (gettid) of
// the threads that held the lock. "bench": THREADS threads take a lock ROUNDS
// times each, held HOLD_US of busy work (a negative HOLD_US: a sleep that long)
// and GAP_US, default HOLD_US, of busy work between two, and print the contended acquisitions
// per second, the work's wall time ("wall ms=") and the process CPU time ("cpu
// ms="), for bench/bench_locks.c. After the work (not the bench's) one induced
// collection. With "wait FILE" it prints "ready" first and waits up to
// 60 s for FILE; after the work it prints "done" and, when FILE.after is
// given by the test (the attach test), waits for it and contends once more,
// printing "after ok" (the program carries on after a detach).
// "blocking": ROUNDS times, the main thread blocks in Blocking on what the
// framework offers, each HOLD_US long (a sleep on the thread pool): Task.Wait,
// Task.Result, GetAwaiter().GetResult(), CountdownEvent.Wait and a
// BlockingCollection, while a System.Threading.Timer ticks every 10 ms (the
// runtime's timer thread waits between ticks); it prints the time Blocking
// waited by its own clock: "blocking waited_ns=N waits=W ticks=T".
using System.Collections.Concurrent;
using System;
using System.Collections.Generic;
using System.Diagnostics;
using System.IO;
using System.Linq;
using System.Runtime.CompilerServices;
using System.Runtime.InteropServices;
using System.Threading;
using System.Threading.Tasks;

namespace Scenarios;

public static class LocksScenario
{
    public sealed class Gate
    {
        public long Count;
    }

    [DllImport("libc", EntryPoint = "gettid")]
    private static extern int GetTid();

    // Added to with Interlocked only: no lock of the scenario's own but the one it contends on.
    private sealed class Tally
    {
        public long WaitedTicks, Contended, Long, Acquired;
        public readonly int[] Owners = new int[256];
        public int NOwners;

        public void Owner(int tid) => Owners[Interlocked.Increment(ref NOwners) - 1] = tid;
    }

    private static readonly long LongTicks = Stopwatch.Frequency / 5000; // 200 us

    // HOLD_US of work whatever its length (lockspin: the waiters spin meanwhile).
    private static void Busy(int holdUs)
    {
        var sw = Stopwatch.StartNew();
        while (sw.ElapsedTicks * 1_000_000 / Stopwatch.Frequency < holdUs)
            Thread.SpinWait(20);
    }

    private static void Hold(int holdUs)
    {
        if (holdUs <= 0)
        {
            if (holdUs < 0) // a blocking hold of -holdUs microseconds (the bench)
                Thread.Sleep(TimeSpan.FromTicks(-holdUs * 10L));
            return;
        }
        if (holdUs >= 1000)
        {
            Thread.Sleep(holdUs / 1000);
            return;
        }
        var sw = Stopwatch.StartNew();
        while (sw.ElapsedTicks * 1_000_000 / Stopwatch.Frequency < holdUs)
            Thread.SpinWait(20);
    }

    private static void Count(Tally t, long ticks, bool contended)
    {
        Interlocked.Increment(ref t.Acquired);
        if (!contended)
            return;
        Interlocked.Increment(ref t.Contended);
        Interlocked.Add(ref t.WaitedTicks, ticks);
        if (ticks >= LongTicks)
            Interlocked.Increment(ref t.Long);
    }

    [MethodImpl(MethodImplOptions.NoInlining)]
    private static void ContendMonitor(Gate gate, Tally t, int rounds, int holdUs)
    {
        t.Owner(GetTid());
        for (int i = 0; i < rounds; i++)
        {
            bool taken = false;
            Monitor.TryEnter(gate, ref taken);
            long ticks = 0;
            if (!taken)
            {
                long start = Stopwatch.GetTimestamp();
                Monitor.Enter(gate);
                ticks = Stopwatch.GetTimestamp() - start;
            }
            try
            {
                gate.Count++;
                Hold(holdUs);
            }
            finally
            {
                Monitor.Exit(gate);
            }
            Count(t, ticks, !taken);
            Thread.Yield();
        }
    }

#if NET9_0_OR_GREATER
    [MethodImpl(MethodImplOptions.NoInlining)]
    private static void ContendLock(Lock gate, Tally t, int rounds, int holdUs, bool busy = false)
    {
        t.Owner(GetTid());
        for (int i = 0; i < rounds; i++)
        {
            bool taken = gate.TryEnter();
            long ticks = 0;
            if (!taken)
            {
                long start = Stopwatch.GetTimestamp();
                gate.Enter();
                ticks = Stopwatch.GetTimestamp() - start;
            }
            try
            {
                if (busy)
                    Busy(holdUs);
                else
                    Hold(holdUs);
            }
            finally
            {
                gate.Exit();
            }
            Count(t, ticks, !taken);
            if (busy)
                Thread.Sleep(1);
            else
                Thread.Yield();
        }
    }
#endif

    private static Tally RunThreads(int threads, Action<Tally> body)
    {
        var t = new Tally();
        var all = new Thread[threads];
        for (int i = 0; i < threads; i++)
        {
            all[i] = new Thread(() => body(t)) { Name = "contender " + i };
            all[i].Start();
        }
        foreach (var th in all)
            th.Join();
        return t;
    }

    private static void Print(string kind, Tally t, int threads)
    {
        long ns = (long)((double)t.WaitedTicks * 1e9 / Stopwatch.Frequency); // in double: ticks times 1e9 overflow a long past 9.2 s
        Console.WriteLine($"{kind} waited_ns={ns} contended={t.Contended} long={t.Long} threads={threads} " +
                          $"acquired={t.Acquired} owners={string.Join(",", t.Owners.Take(t.NOwners).OrderBy(x => x))}");
    }

    // Never contends: one thread, one lock.
    [MethodImpl(MethodImplOptions.NoInlining)]
    private static void NoContention()
    {
        var gate = new Gate();
        for (int i = 0; i < 100_000; i++)
            lock (gate)
                gate.Count++;
        Console.WriteLine($"none acquired={gate.Count}");
    }

    // barge: THREADS threads each take one lock ROUNDS times in a row, holding it
    // HOLD_US (a sleep), nothing in between: the thread that lets it go takes it
    // again before a waiter wakes (the monitor lets a thread that does not wait
    // take a free lock), so the others wait long, and few acquisitions block. Prints the runtime's
    // own count of contended acquisitions (Monitor.LockContentionCount), which a
    // profiler that wakes a waiting thread raises: "barge contentions=N".
    private static void Barge(int threads, int rounds, int holdUs)
    {
        var gate = new Gate();
        long before = Monitor.LockContentionCount;
        var ts = new Thread[threads];
        for (int t = 0; t < threads; t++)
        {
            ts[t] = new Thread(() =>
            {
                for (int i = 0; i < rounds; i++)
                    lock (gate)
                        Thread.Sleep(TimeSpan.FromMicroseconds(holdUs));
            });
            ts[t].Start();
        }
        foreach (var t in ts)
            t.Join();
        Console.WriteLine($"barge contentions={Monitor.LockContentionCount - before}");
    }

    [MethodImpl(MethodImplOptions.NoInlining)]
    private static void Blocking(int rounds, int holdUs)
    {
        int ticks = 0;
        using var timer = new Timer(_ => Interlocked.Increment(ref ticks), null, 10, 10);
        var hold = TimeSpan.FromMicroseconds(holdUs);
        long waited = 0, waits = 0;
        void Timed(Action wait)
        {
            long start = Stopwatch.GetTimestamp();
            wait();
            waited += Stopwatch.GetTimestamp() - start;
            waits++;
        }
        for (int i = 0; i < rounds; i++)
        {
            var task = Task.Run(() => Thread.Sleep(hold));
            Timed(() => task.Wait());
            var result = Task.Run(() => { Thread.Sleep(hold); return i; });
            Timed(() => _ = result.Result);
            var awaited = Task.Run(() => { Thread.Sleep(hold); return i; });
            Timed(() => awaited.GetAwaiter().GetResult());
            var countdown = new CountdownEvent(1);
            ThreadPool.QueueUserWorkItem(_ => { Thread.Sleep(hold); countdown.Signal(); });
            Timed(() => countdown.Wait());
            var items = new BlockingCollection<int>();
            ThreadPool.QueueUserWorkItem(_ => { Thread.Sleep(hold); items.Add(i); });
            Timed(() => items.Take());
        }
        Console.WriteLine($"blocking waited_ns={(long)((double)waited * 1e9 / Stopwatch.Frequency)} waits={waits} ticks={ticks}");
    }

#if NET9_0_OR_GREATER
    // recursive: a System.Threading.Lock's slow path entered ROUNDS * 4 times
    // with no contention at all: recursive acquisitions (the thread holds it
    // already), THREADS threads whose first Lock finds it free, and tries that
    // fail at once (TryEnter(), TryEnter(0)) while another thread holds it.
    private static void Recursive(int threads, int rounds)
    {
        var gate = new Lock();
        int depth = 0;
        void Rec(int n) { lock (gate) { depth++; if (n > 0) Rec(n - 1); } }
        for (int i = 0; i < rounds; i++)
            Rec(3);
        for (int t = 0; t < threads; t++)
        {
            var th = new Thread(() => { lock (gate) { depth++; } });
            th.Start();
            th.Join();
        }
        using var held = new ManualResetEventSlim();
        using var release = new ManualResetEventSlim();
        var holder = new Thread(() => { lock (gate) { held.Set(); release.Wait(); } });
        holder.Start();
        held.Wait();
        int failed = 0;
        for (int i = 0; i < rounds; i++)
        {
            failed += gate.TryEnter() ? 0 : 1;
            failed += gate.TryEnter(0) ? 0 : 1;
        }
        release.Set();
        holder.Join();
        Console.WriteLine($"recursive acquisitions={depth} tries_failed={failed} contended=0");
    }
#endif

    private static void Work(string mode, int threads, int rounds, int holdUs)
    {
#if NET9_0_OR_GREATER
        if (mode == "recursive")
        {
            Recursive(threads, rounds);
            return;
        }
#endif
        if (mode == "blocking")
        {
            Blocking(rounds, holdUs);
            return;
        }
        if (mode == "none")
        {
            NoContention();
            return;
        }
        if (mode == "barge")
        {
            Barge(threads, rounds, holdUs);
            return;
        }
        if (mode == "monitor" || mode == "both")
        {
            var gate = new Gate();
            Print("monitor", RunThreads(threads, t => ContendMonitor(gate, t, rounds, holdUs)), threads);
        }
#if NET9_0_OR_GREATER
        if (mode == "lock" || mode == "both")
        {
            var gate = new Lock();
            Print("lock", RunThreads(threads, t => ContendLock(gate, t, rounds, holdUs)), threads);
        }
        if (mode == "lockspin")
        {
            var gate = new Lock();
            Print("lock", RunThreads(threads, t => ContendLock(gate, t, rounds, holdUs, true)), threads);
        }
#else
        if (mode == "lock" || mode == "both")
            Console.WriteLine("lock unsupported (System.Threading.Lock is .NET 9+)");
#endif
    }

    // THREADS threads take one lock ROUNDS times each, holding it HOLD_US of busy
    // work and working GAP_US outside it. Prints the contended acquisitions, the wall time of the work and
    // the process CPU time (for bench/bench_locks.c).
    private static void Bench(int threads, int rounds, int holdUs, int gapUs)
    {
        var gate = new Gate();
        var sw = Stopwatch.StartNew();
        var t = RunThreads(threads, tally =>
        {
            long contended = 0;
            for (int i = 0; i < rounds; i++)
            {
                bool taken = false;
                Monitor.TryEnter(gate, ref taken);
                if (!taken)
                {
                    Monitor.Enter(gate);
                    contended++;
                }
                gate.Count++;
                Hold(holdUs);
                Monitor.Exit(gate);
                Hold(gapUs);
            }
            Interlocked.Add(ref tally.Contended, contended);
        });
        double wall = sw.Elapsed.TotalMilliseconds;
        var cpu = Process.GetCurrentProcess().TotalProcessorTime.TotalMilliseconds;
        Console.WriteLine($"bench contended={t.Contended} acquired={gate.Count} contended_per_s={t.Contended * 1000 / wall:F0} " +
                          $"wall ms={wall:F0} cpu ms={cpu:F0}");
    }

    public static int Run(string[] args)
    {
        int w = Array.IndexOf(args, "wait");
        string? go = w >= 0 && w + 1 < args.Length ? args[w + 1] : null;
        var rest = w >= 0 ? args[..w] : args;
        string mode = rest.Length > 0 ? rest[0] : "both";
        int threads = rest.Length > 1 ? int.Parse(rest[1]) : 4;
        int rounds = rest.Length > 2 ? int.Parse(rest[2]) : 100;
        int holdUs = rest.Length > 3 ? int.Parse(rest[3]) : 1000;
        if (go != null)
        {
            Console.WriteLine("ready");
            Console.Out.Flush();
            for (int i = 0; i < 1200 && !File.Exists(go); i++)
                Thread.Sleep(50);
        }
        if (mode == "bench")
        {
            Bench(threads, rounds, holdUs, rest.Length > 4 ? int.Parse(rest[4]) : holdUs);
            return 0;
        }
        Work(mode, threads, rounds, holdUs);
        GC.Collect(); /* one induced collection: a GC pause beside the waits on a timeline */
        Console.WriteLine("done");
        Console.Out.Flush();
        if (Array.IndexOf(rest, "crash") >= 4)
        {   /* a while after its waits, the program dies of an unhandled exception */
            Thread.Sleep(500);
            throw new InvalidOperationException("the locks scenario dies on purpose");
        }
        if (go != null)
        {
            string after = go + ".after";
            for (int i = 0; i < 1200 && !File.Exists(after); i++)
                Thread.Sleep(50);
            Work(mode, threads, Math.Max(1, rounds / 4), holdUs);
            Console.WriteLine("after ok");
        }
        return 0;
    }
}
