// AllocScenario: allocations of two types of its own in known proportions, for
// sampled allocations (dnprof run/attach --alloc). `dotnet Scenarios.dll alloc
// [MB] [wait FILE | work | virtual]` allocates about MB megabytes (default 400): Blob objects (96
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

public sealed class Pair<TKey, TValue>
{
    public TKey? Key;
    public TValue? Value;
    public long A, B, C, D, E, F, G, H;
}

// "virtual": one allocating method reached through two small overrides, called
// from one call site: a stack walk by frame pointers alone cannot tell them
// apart when the JIT gives them no frame (see src/agent/alloc_sampling.c).
public abstract class AllocPath
{
    public abstract long Go(int n);
}

public sealed class LeftPath : AllocPath
{
    [MethodImpl(MethodImplOptions.NoInlining)]
    public override long Go(int n) => AllocScenario.MakeBlobsShared(n);
}

public sealed class RightPath : AllocPath
{
    [MethodImpl(MethodImplOptions.NoInlining)]
    public override long Go(int n) => AllocScenario.MakeBlobsShared(n);
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

    [MethodImpl(MethodImplOptions.NoInlining)]
    public static long MakeBlobsShared(int n)
    {
        long before = GC.GetAllocatedBytesForCurrentThread();
        for (int i = 0; i < n; i++)
            sink = new Blob();
        return GC.GetAllocatedBytesForCurrentThread() - before;
    }

    // 2 MB chunks, two of every three through LeftPath, one through RightPath.
    private static int Virtual(long mb)
    {
        AllocPath[] paths = { new LeftPath(), new RightPath() };
        long[] bytes = new long[2];
        for (long c = 0; c < mb / 2; c++)
        {
            int k = c % 3 == 2 ? 1 : 0;
            bytes[k] += paths[k].Go((2 << 20) / 96);
        }
        GC.KeepAlive(sink);
        Console.WriteLine($"Scenarios.LeftPath bytes={bytes[0]}");
        Console.WriteLine($"Scenarios.RightPath bytes={bytes[1]}");
        return 0;
    }

    [MethodImpl(MethodImplOptions.NoInlining)]
    private static long MakePairs(int n)
    {
        long before = GC.GetAllocatedBytesForCurrentThread();
        for (int i = 0; i < n; i++)
            sink = new Pair<string, int> { Value = i };
        return GC.GetAllocatedBytesForCurrentThread() - before;
    }

    [MethodImpl(MethodImplOptions.NoInlining)]
    private static long MakePairArrays(int n)
    {
        long before = GC.GetAllocatedBytesForCurrentThread();
        for (int i = 0; i < n; i++)
            sink = new Pair<string, int>[14];
        return GC.GetAllocatedBytesForCurrentThread() - before;
    }

    [MethodImpl(MethodImplOptions.NoInlining)]
    private static long MakeDictionaries(int n)
    {
        long before = GC.GetAllocatedBytesForCurrentThread();
        for (int i = 0; i < n; i++)
            sink = new System.Collections.Generic.Dictionary<string, string>(7);
        return GC.GetAllocatedBytesForCurrentThread() - before;
    }

    // Per 4 MB chunk: 2 MB of Pair objects, 1.5 MB of Pair arrays, ~0.5 MB of dictionaries.
    private static int Generic(long mb)
    {
        long pairBytes = 0, arrayBytes = 0, dictBytes = 0;
        for (long c = 0; c < mb / 4; c++)
        {
            pairBytes += MakePairs((2 << 20) / 96);
            arrayBytes += MakePairArrays((3 << 19) / 136);
            dictBytes += MakeDictionaries((1 << 19) / 330);
        }
        GC.KeepAlive(sink);
        Console.WriteLine($"pair bytes={pairBytes}");
        Console.WriteLine($"pair array bytes={arrayBytes}");
        Console.WriteLine($"dictionary bytes={dictBytes}");
        return 0;
    }

    public static int Run(string[] args)
    {
        if (args.Length > 1 && args[1] == "generic")
            return Generic(args.Length > 0 && long.TryParse(args[0], out long g) ? g : 400);
        if (args.Length > 1 && args[1] == "virtual")
            return Virtual(args.Length > 0 && long.TryParse(args[0], out long v) ? v : 400);
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
