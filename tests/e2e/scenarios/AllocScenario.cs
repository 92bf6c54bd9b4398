// AllocScenario: allocations of two types of its own in known proportions, for
// sampled allocations (dnprof run/attach --alloc). `dotnet Scenarios.dll alloc
// [MB] [wait FILE | work]` allocates about MB megabytes (default 400): Blob objects (96
// bytes) from MakeBlobs and Dot objects (24 bytes) from MakeDots, in chunks
// alternating between the two, and prints the bytes of each as the runtime
// counted them (GC.GetAllocatedBytesForCurrentThread around each chunk) and
// the time the allocating took (wall "alloc ms=" and the process's CPU time
// "cpu ms=", for bench/bench_alloc.c), so a
// test can hold the sampled shares up against the truth. With "wait FILE" it
// first prints "ready" and waits up to 60 s for FILE to exist (an attach test
// attaches meanwhile). With "work" each object also gets 100 rounds of
// arithmetic, a program that does something besides allocating.
using System;
using System.Runtime.CompilerServices;

namespace Scenarios;

public sealed class Blob
{
    public long A, B, C, D, E, F, G, H, I, J;
}

public sealed class Dot
{
    public long X;
}

public static class AllocScenario
{
    private static object? sink;
    private static int work; // "work": this much arithmetic per object, so allocation is not all it does
    private static long acc;

    [MethodImpl(MethodImplOptions.AggressiveInlining)]
    private static long Compute(long x)
    {
        for (int k = 0; k < work; k++)
            x = x * 6364136223846793005L + 1442695040888963407L;
        return x;
    }

    [MethodImpl(MethodImplOptions.NoInlining)]
    private static long MakeBlobs(int n)
    {
        long before = GC.GetAllocatedBytesForCurrentThread();
        for (int i = 0; i < n; i++)
        {
            var b = new Blob();
            b.A = Compute(i);
            sink = b;
        }
        return GC.GetAllocatedBytesForCurrentThread() - before;
    }

    [MethodImpl(MethodImplOptions.NoInlining)]
    private static long MakeDots(int n)
    {
        long before = GC.GetAllocatedBytesForCurrentThread();
        for (int i = 0; i < n; i++)
        {
            var d = new Dot();
            d.X = Compute(i);
            sink = d;
        }
        return GC.GetAllocatedBytesForCurrentThread() - before;
    }

    public static int Run(string[] args)
    {
        long mb = args.Length > 0 && long.TryParse(args[0], out long m) ? m : 400;
        if (args.Length > 1 && args[1] == "work")
            work = 100;
        if (args.Length > 2 && args[1] == "wait")
        {
            Console.WriteLine("ready");
            Console.Out.Flush();
            for (int i = 0; i < 6000 && !System.IO.File.Exists(args[2]); i++)
                System.Threading.Thread.Sleep(10);
        }
        // 75% of the bytes in Blobs, 25% in Dots: per chunk 3 MB of Blobs, 1 MB of Dots.
        const int chunkBytes = 1 << 20;
        long blobBytes = 0, dotBytes = 0;
        long chunks = mb / 4;
        var self = System.Diagnostics.Process.GetCurrentProcess();
        TimeSpan cpu0 = self.TotalProcessorTime;
        var watch = System.Diagnostics.Stopwatch.StartNew();
        for (long c = 0; c < chunks; c++)
        {
            blobBytes += MakeBlobs(3 * chunkBytes / 96);
            dotBytes += MakeDots(chunkBytes / 24);
        }
        watch.Stop();
        self.Refresh();
        double cpuMs = (self.TotalProcessorTime - cpu0).TotalMilliseconds;
        GC.KeepAlive(sink);
        Console.WriteLine($"alloc ms={watch.Elapsed.TotalMilliseconds:F3} cpu ms={cpuMs:F3}");
        Console.WriteLine($"Scenarios.Blob bytes={blobBytes}");
        Console.WriteLine($"Scenarios.Dot bytes={dotBytes}");
        return 0;
    }
}
