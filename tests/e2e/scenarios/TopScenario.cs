// TopScenario: a program for dnprof top (tests/e2e/test_top.c, bench/bench_top.sh).
//   top run SECONDS     two threads whose three hot methods do 60/30/10% of the
//       work (TopSixty, TopThirty, TopTen: the same loop body, 6, 3 and 1 times
//       per round), and a thread that throws and catches an
//       InvalidOperationException 50 times a second, paced by the clock (a late
//       throw is caught up, so every second holds 50); prints "ready" once the
//       methods are compiled, "throws per second 50", and at the end "thrown N
//       in S s"; runs SECONDS of wall time (or until its stdin closes, when
//       SECONDS is 0)
//   top pool N K SECONDS  a saturated thread pool of a known size: the pool's
//       minimum and maximum set to N worker threads, N work items that block
//       on one event, and K more queued behind them that cannot start (half in
//       the last blocked thread's local queue, half in the global one); prints
//       "ready" once the N are running, then every second "pool threads T
//       queue Q" (ThreadPool.ThreadCount and PendingWorkItemCount, the
//       program's own figures); after SECONDS releases them all and prints
//       "done". With "tasks" the N block in Task.Wait instead (sync over
//       async: the pool counts them as threads blocked on tasks)
//   top bench ROUNDS    the hot methods alone, ROUNDS rounds on one thread; prints
//       "cpu MS ms wall MS ms thread MS ms": the process's CPU time (every
//       thread: the runtime's, an agent's), the elapsed time, and the CPU time
//       of the thread that did the work
using System;
using System.Diagnostics;
using System.Linq;
using System.Runtime.CompilerServices;
using System.Threading;
using System.Threading.Tasks;

namespace Scenarios;

public static class TopScenario
{
    private const long Round = 20000;
    private const int ThrowsPerSecond = 50;
    private static long sink;
    private static volatile bool stop;

    public static int Run(string[] args)
    {
        string what = args.Length > 0 ? args[0] : "";
        double n = args.Length > 1 ? double.Parse(args[1], System.Globalization.CultureInfo.InvariantCulture) : 30;
        if (what == "run")
            return Watched(n);
        if (what == "bench")
            return Bench((long)n);
        if (what == "pool" && args.Length > 3)
            return Pool((int)n, int.Parse(args[2]), double.Parse(args[3], System.Globalization.CultureInfo.InvariantCulture),
                        args.Skip(4).Contains("tasks"), args.Skip(4).Contains("bgc"));
        Console.Error.WriteLine("usage: Scenarios top run SECONDS | pool N K SECONDS [tasks] [bgc] | bench ROUNDS");
        return 2;
    }

    [MethodImpl(MethodImplOptions.NoInlining)]
    public static long TopSixty(long n)
    {
        long x = n, s = 0;
        for (long i = 0; i < n; i++) { x = x * 6364136223846793005L + 1442695040888963407L; s += x >> 33; }
        return s;
    }

    [MethodImpl(MethodImplOptions.NoInlining)]
    public static long TopThirty(long n)
    {
        long x = n, s = 0;
        for (long i = 0; i < n; i++) { x = x * 6364136223846793005L + 1442695040888963407L; s += x >> 33; }
        return s;
    }

    [MethodImpl(MethodImplOptions.NoInlining)]
    public static long TopTen(long n)
    {
        long x = n, s = 0;
        for (long i = 0; i < n; i++) { x = x * 6364136223846793005L + 1442695040888963407L; s += x >> 33; }
        return s;
    }

    [MethodImpl(MethodImplOptions.NoInlining)]
    private static void Work()
    {
        long s = 0;
        while (!stop)
        {
            s += TopSixty(6 * Round);
            s += TopThirty(3 * Round);
            s += TopTen(1 * Round);
        }
        Interlocked.Add(ref sink, s);
    }

    [MethodImpl(MethodImplOptions.NoInlining)]
    private static void Fail(long k) => throw new InvalidOperationException("top " + k);

    private static long thrown;

    private static void Thrower()
    {
        var clock = Stopwatch.StartNew();
        long k = 0;
        while (!stop)
        {
            long due = k * 1000 / ThrowsPerSecond;
            long now = clock.ElapsedMilliseconds;
            if (now < due)
            {
                Thread.Sleep((int)Math.Min(due - now, 20));
                continue;
            }
            try { Fail(k); } catch (InvalidOperationException) { Interlocked.Increment(ref thrown); }
            k++;
        }
    }

    private static int Watched(double seconds)
    {
        TopSixty(Round); TopThirty(Round); TopTen(Round); // compiled before anyone looks
        try { Fail(-1); } catch (InvalidOperationException) { }
        var wall = Stopwatch.StartNew();
        var threads = new Thread[] { new Thread(Work) { Name = "top-0" }, new Thread(Work) { Name = "top-1" },
                                     new Thread(Thrower) { Name = "thrower" } };
        foreach (var t in threads)
            t.Start();
        Console.WriteLine("ready");
        Console.WriteLine($"throws per second {ThrowsPerSecond}");
        Console.Out.Flush();
        if (seconds > 0)
            Thread.Sleep(TimeSpan.FromSeconds(seconds));
        else
            Console.In.ReadToEnd();
        stop = true;
        foreach (var t in threads)
            t.Join();
        Console.WriteLine($"thrown {Interlocked.Read(ref thrown)} in {wall.Elapsed.TotalSeconds:F2} s");
        return 0;
    }

    // "bgc": every other second, large arrays allocated until a background
    // collection has run (one starts on the allocating thread and ends on the
    // GC's own), printed as "bgc N" with the runtime's count of them.
    private static int Pool(int n, int queued, double seconds, bool tasks, bool bgc)
    {
        ThreadPool.GetMinThreads(out _, out int io);
        if (!ThreadPool.SetMaxThreads(n, Math.Max(io, n)) || !ThreadPool.SetMinThreads(n, io))
        {
            Console.Error.WriteLine($"the pool refused {n} threads");
            return 1;
        }
        // n items block every pool thread; the last of them to start puts half of
        // the queued items in its own thread's local queue before it blocks (no
        // thread is left to steal them), then the rest go to the global queue:
        // PendingWorkItemCount counts both.
        // With "tasks" they block on a task instead (Task.Wait, sync over async):
        // the pool counts those threads as blocked ("cooperative blocking").
        var gate = new ManualResetEventSlim(false);
        var released = new TaskCompletionSource();
        var localDone = new ManualResetEventSlim(false);
        int running = 0, local = queued / 2;
        Action<int> block = _ =>
        {
            if (tasks)
                released.Task.Wait();
            else
                gate.Wait();
        };
        Action<int> first = _ =>
        {
            if (Interlocked.Increment(ref running) == n)
            {
                for (int i = 0; i < local; i++)
                    ThreadPool.UnsafeQueueUserWorkItem(block, 0, preferLocal: true);
                localDone.Set();
            }
            block(0);
        };
        for (int i = 0; i < n; i++)
            ThreadPool.UnsafeQueueUserWorkItem(first, 0, preferLocal: false);
        localDone.Wait(TimeSpan.FromSeconds(10));
        for (int i = 0; i < queued - local; i++)
            ThreadPool.UnsafeQueueUserWorkItem(block, 0, preferLocal: false);
        Console.WriteLine($"ready running={Volatile.Read(ref running)}");
        Console.Out.Flush();
        var wall = Stopwatch.StartNew();
        while (wall.Elapsed.TotalSeconds < seconds)
        {
            Console.WriteLine($"pool threads {ThreadPool.ThreadCount} queue {ThreadPool.PendingWorkItemCount}");
            Console.Out.Flush();
            Thread.Sleep(1000);
            if (bgc && (int)wall.Elapsed.TotalSeconds % 2 == 1)
                Console.WriteLine($"bgc {BackgroundCollection()}");
        }
        gate.Set();
        released.SetResult();
        Console.WriteLine("done");
        return 0;
    }

    // Large arrays until the runtime has run one more background collection
    // (at most 2 s); its count of them.
    private static long BackgroundCollection()
    {
        long before = GC.GetGCMemoryInfo(GCKind.Background).Index;
        var keep = new byte[64][];
        var sw = Stopwatch.StartNew();
        for (int i = 0; GC.GetGCMemoryInfo(GCKind.Background).Index == before && sw.ElapsedMilliseconds < 2000; i++)
            keep[i % keep.Length] = new byte[200_000];
        return GC.GetGCMemoryInfo(GCKind.Background).Index;
    }

    // This thread's own CPU time (utime + stime of /proc/thread-self/stat), in ms.
    private static double ThreadCpuMs()
    {
        string stat = System.IO.File.ReadAllText("/proc/thread-self/stat");
        string[] f = stat.Substring(stat.LastIndexOf(')') + 2).Split(' ');
        return (double.Parse(f[11]) + double.Parse(f[12])) * 1000.0 / 100; // clock ticks (USER_HZ 100)
    }

    private static int Bench(long rounds)
    {
        var proc = Process.GetCurrentProcess();
        TimeSpan cpu0 = proc.TotalProcessorTime;
        double thread0 = ThreadCpuMs();
        var wall = Stopwatch.StartNew();
        long s = 0;
        for (long r = 0; r < rounds; r++)
        {
            s += TopSixty(6 * Round);
            s += TopThirty(3 * Round);
            s += TopTen(1 * Round);
        }
        proc.Refresh();
        double cpu = (proc.TotalProcessorTime - cpu0).TotalMilliseconds;
        double thread = ThreadCpuMs() - thread0;
        Console.WriteLine($"cpu {cpu:F1} ms wall {wall.Elapsed.TotalMilliseconds:F1} ms thread {thread:F1} ms {s % 7}");
        return 0;
    }
}
