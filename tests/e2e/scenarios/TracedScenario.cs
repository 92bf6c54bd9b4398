// TracedScenario: methods for `dnprof attach/run --trace` (tests/e2e/test_trace.c).
// `dotnet Scenarios.dll traced DIR N`:
//   1. warms up Timed and InlineCaller (tier 1: InlineCaller then has Inlinee
//      inlined), prints "before <ns per call of Timed>" and "ready";
//   2. waits for the file DIR/go, then calls exactly N times each: Counted,
//      Generic<int> and Generic<string> (one method, 2N calls), WithFinally
//      (every 10th call throws out of it; the caller catches), and Inlinee
//      through InlineCaller (N calls in all); prints the results;
//   3. prints "during <ns per call>", "calls done", waits for DIR/detached,
//      prints "after <ns per call>" and exits 0.
// `traced DIR N bench` stops after "before" (bench/bench_trace.c).
// The results it prints do not depend on being profiled.
using System;
using System.Diagnostics;
using System.IO;
using System.Runtime.CompilerServices;
using System.Threading;

namespace Scenarios;

public sealed class TracedException : Exception
{
    public TracedException(int i) : base("traced " + i) { }
}

public static class TracedTarget
{
    [MethodImpl(MethodImplOptions.NoInlining)]
    public static int Counted(int i) => i * 3 + 1;

    [MethodImpl(MethodImplOptions.NoInlining)]
    public static int Timed(int i) => i ^ 0x5A5A;

    [MethodImpl(MethodImplOptions.NoInlining)]
    public static string Generic<T>(T value) => value!.ToString()!;

    public static int Finally;

    [MethodImpl(MethodImplOptions.NoInlining)]
    public static int WithFinally(int i)
    {
        try
        {
            if (i % 10 == 9)
                throw new TracedException(i);
            return i + 1;
        }
        finally
        {
            Finally++;
        }
    }

    [MethodImpl(MethodImplOptions.AggressiveInlining)]
    public static int Inlinee(int i) => i + 7;

    [MethodImpl(MethodImplOptions.NoInlining)]
    public static long InlineCaller(int n)
    {
        long sum = 0;
        for (int i = 0; i < n; i++)
            sum += Inlinee(i);
        return sum;
    }
}

public static class TracedScenario
{
    private const int TimedCalls = 2_000_000;

    // ns per call of Timed, the best of 5 rounds (a preempted round says nothing).
    private static double Measure(int calls = TimedCalls)
    {
        double best = double.MaxValue;
        int sink = 0;
        for (int round = 0; round < 5; round++)
        {
            var sw = Stopwatch.StartNew();
            for (int i = 0; i < calls; i++)
                sink += TracedTarget.Timed(i);
            best = Math.Min(best, sw.Elapsed.TotalMilliseconds * 1e6 / calls);
        }
        GC.KeepAlive(sink);
        return best;
    }

    private static void WaitFor(string path)
    {
        while (!File.Exists(path))
            Thread.Sleep(5);
    }

    public static int Run(string[] args)
    {
        string dir = args.Length > 0 ? args[0] : ".";
        int n = args.Length > 1 ? int.Parse(args[1]) : 1000;
        long warm = 0;
        for (int round = 0; round < 40; round++) // tier 1 for both, Inlinee inlined
        {
            warm += TracedTarget.InlineCaller(1000);
            Measure(20_000);
            Thread.Sleep(5);
        }
        Console.WriteLine($"before {Measure():F2}");
        if (args.Length > 2 && args[2] == "bench") // bench/bench_trace.c: that figure alone
            return 0;
        Console.WriteLine("ready");
        Console.Out.Flush();
        WaitFor(Path.Combine(dir, "go"));

        long counted = 0, finallyOk = 0, thrown = 0;
        int length = 0;
        for (int i = 0; i < n; i++)
        {
            counted += TracedTarget.Counted(i);
            length += TracedTarget.Generic(i).Length + TracedTarget.Generic("s" + i).Length;
            try
            {
                finallyOk += TracedTarget.WithFinally(i);
            }
            catch (TracedException)
            {
                thrown++;
            }
        }
        long inlined = TracedTarget.InlineCaller(n);
        Console.WriteLine($"counted {counted} generic {length} finally {finallyOk} thrown {thrown} finallies {TracedTarget.Finally} inlined {inlined} warm {warm}");
        Console.WriteLine($"during {Measure():F2}");
        Console.WriteLine("calls done");
        Console.Out.Flush();
        WaitFor(Path.Combine(dir, "detached"));
        // the original code again: from its first tier, so give tiering its time
        double after = double.MaxValue;
        var since = Stopwatch.StartNew();
        while (since.ElapsedMilliseconds < 2000)
        {
            after = Math.Min(after, Measure());
            Thread.Sleep(50);
        }
        Console.WriteLine($"after {after:F2}");
        Console.Out.Flush();
        return 0;
    }
}
