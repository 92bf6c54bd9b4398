// GcScenario: induced collections of known generations, for GC statistics
// (dnprof run/attach --gc). `dotnet Scenarios.dll gc [N] [wait FILE]` makes a
// little garbage, then calls GC.Collect(0), GC.Collect(1) and GC.Collect(2), N
// times each (default 5), in turn (with "row": N GC.Collect(0) in a row, then
// N GC.Collect(1), then N GC.Collect(2)), timing each call itself with a Stopwatch;
// it prints one line per call ("collect gen=G ms=T") and the counts it
// induced ("induced gen0=N gen1=N gen2=N"), then the runtime's own counts and
// the pauses it added up (GC.GetTotalPauseDuration: "collections gen0=N gen1=N
// gen2=N paused_ms=T"), so that a test can hold the
// report's collections and pauses up against them. With "wait FILE" it first
// prints "ready pid=PID" and waits up to 60 s for FILE to exist (an attach test
// attaches meanwhile).
using System;
using System.Collections.Generic;
using System.Diagnostics;
using System.IO;
using System.Threading;

namespace Scenarios;

public static class GcScenario
{
    private static List<byte[]>? keep;

    public static int Run(string[] args)
    {
        int n = args.Length > 0 && int.TryParse(args[0], out int v) ? v : 5;
        if (args.Length > 2 && args[1] == "wait")
        {
            Console.WriteLine($"ready pid={Environment.ProcessId}");
            Console.Out.Flush();
            for (int i = 0; i < 600 && !File.Exists(args[2]); i++)
                Thread.Sleep(100);
        }
        var induced = new int[3];
        double total = 0;
        bool row = Array.IndexOf(args, "row") >= 0; // N of each generation in a row, not in turn
        for (int step = 0; step < 3 * n; step++)
        {
            int round = row ? step % n : step / 3, gen = row ? step / n : step % 3;
            Garbage(round);
            var watch = Stopwatch.StartNew();
            GC.Collect(gen);
            watch.Stop();
            induced[gen]++;
            total += watch.Elapsed.TotalMilliseconds;
            Console.WriteLine($"collect gen={gen} ms={watch.Elapsed.TotalMilliseconds:F3}");
        }
        Console.WriteLine($"induced gen0={induced[0]} gen1={induced[1]} gen2={induced[2]} total ms={total:F3}");
        if (Array.IndexOf(args, "background") >= 0)
            Background(n);
        Console.WriteLine($"collections gen0={GC.CollectionCount(0)} gen1={GC.CollectionCount(1)} gen2={GC.CollectionCount(2)} paused_ms={GC.GetTotalPauseDuration().TotalMilliseconds:F3}");
        return 0;
    }

    // "background": N more gen2 collections that may run in the background
    // (GC.Collect(2, Forced, blocking: false)), each waited for by polling
    // GC.CollectionCount(2); prints "background gen2=N".
    private static void Background(int n)
    {
        var live = new List<byte[]>(); // a heap worth marking concurrently
        for (int i = 0; i < 100000; i++)
            live.Add(new byte[1000]);
        for (int i = 0; i < n; i++)
        {
            Garbage(i);
            int before = GC.CollectionCount(2);
            GC.Collect(2, GCCollectionMode.Forced, blocking: false);
            for (int w = 0; w < 2000 && GC.CollectionCount(2) == before; w++)
            {
                Garbage(w);
                Thread.Sleep(1);
            }
        }
        GC.KeepAlive(live);
        Console.WriteLine($"background gen2={n}");
        Console.WriteLine($"collections gen0={GC.CollectionCount(0)} gen1={GC.CollectionCount(1)} gen2={GC.CollectionCount(2)} paused_ms={GC.GetTotalPauseDuration().TotalMilliseconds:F3}");
    }

    // Some survivors and some garbage, so that every collection has work.
    private static void Garbage(int round)
    {
        keep ??= new List<byte[]>();
        for (int i = 0; i < 2000; i++)
        {
            var b = new byte[256];
            if (i % 10 == round % 10)
                keep.Add(b);
        }
        if (keep.Count > 20000)
            keep.RemoveRange(0, 10000);
    }
}
