// AllocScenario: allocations of two types of its own in known proportions, for
// sampled allocations (dnprof run/attach --alloc). `dotnet Scenarios.dll alloc
// [MB] [wait FILE]` allocates about MB megabytes (default 400): Blob objects (96
// bytes) from MakeBlobs and Dot objects (24 bytes) from MakeDots, in chunks
// alternating between the two, and prints the bytes of each as the runtime
// counted them (GC.GetAllocatedBytesForCurrentThread around each chunk), so a
// test can hold the sampled shares up against the truth. With "wait FILE" it
// first prints "ready" and waits up to 60 s for FILE to exist (an attach test
// attaches meanwhile).
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

    [MethodImpl(MethodImplOptions.NoInlining)]
    private static long MakeBlobs(int n)
    {
        long before = GC.GetAllocatedBytesForCurrentThread();
        for (int i = 0; i < n; i++)
            sink = new Blob();
        return GC.GetAllocatedBytesForCurrentThread() - before;
    }

    [MethodImpl(MethodImplOptions.NoInlining)]
    private static long MakeDots(int n)
    {
        long before = GC.GetAllocatedBytesForCurrentThread();
        for (int i = 0; i < n; i++)
            sink = new Dot();
        return GC.GetAllocatedBytesForCurrentThread() - before;
    }

    public static int Run(string[] args)
    {
        long mb = args.Length > 0 && long.TryParse(args[0], out long m) ? m : 400;
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
        for (long c = 0; c < chunks; c++)
        {
            blobBytes += MakeBlobs(3 * chunkBytes / 96);
            dotBytes += MakeDots(chunkBytes / 24);
        }
        GC.KeepAlive(sink);
        Console.WriteLine($"Scenarios.Blob bytes={blobBytes}");
        Console.WriteLine($"Scenarios.Dot bytes={dotBytes}");
        return 0;
    }
}
