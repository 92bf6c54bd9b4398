// UnwindScenario: managed methods that call native libraries built without
// frame pointers, in a known order, for the native unwinder (dnprof run
// --sample; tests/e2e/test_sample_unwind.c).
//   unwind calls CPU_SECONDS   rounds of Hash (SHA-256: System.Security.Cryptography
//       -> libSystem.Security.Cryptography.Native.OpenSsl -> OpenSSL's libcrypto),
//       then Deflate (System.IO.Compression -> libSystem.IO.Compression.Native),
//       then Loop (managed only), each about 20 ms, until the process has used
//       CPU_SECONDS of CPU. Each returns before the next starts: a sample inside
//       libcrypto is Hash's, inside the compression library Deflate's.
//   unwind gc CPU_SECONDS      Collect: induced full collections (GC.Collect) of a
//       heap of small objects, until CPU_SECONDS of CPU
//   unwind bench ROUNDS        a fixed amount of the same work (bench/bench_unwind.c):
//       ROUNDS of 8 hashes of 1 MiB, 2 deflates of 256 KiB, a managed loop;
//       prints "bench MS ms", the work's own time
using System;
using System.Diagnostics;
using System.IO;
using System.IO.Compression;
using System.Runtime.CompilerServices;
using System.Security.Cryptography;

namespace Scenarios;

public static class UnwindScenario
{
    private static long sink;
    private static readonly byte[] data = MakeData(1 << 20);

    public static int Run(string[] args)
    {
        string what = args.Length > 0 ? args[0] : "";
        double seconds = args.Length > 1 ? double.Parse(args[1], System.Globalization.CultureInfo.InvariantCulture) : 2;
        if (what == "calls")
            return Calls(seconds);
        if (what == "gc")
            return Gc(seconds);
        if (what == "bench")
            return Bench((int)seconds);
        Console.Error.WriteLine("usage: Scenarios unwind calls|gc CPU_SECONDS");
        return 2;
    }

    private static byte[] MakeData(int n)
    {
        var b = new byte[n];
        var r = new Random(42);
        for (int i = 0; i < n; i++)
            b[i] = (byte)(r.Next(16) + 'a'); // compressible, not trivially
        return b;
    }

    [MethodImpl(MethodImplOptions.NoInlining)]
    public static void Hash(double ms)
    {
        var sw = Stopwatch.StartNew();
        while (sw.Elapsed.TotalMilliseconds < ms)
            sink += SHA256.HashData(data)[0];
    }

    [MethodImpl(MethodImplOptions.NoInlining)]
    public static void Deflate(double ms)
    {
        var sw = Stopwatch.StartNew();
        var outBuf = new MemoryStream(1 << 20);
        while (sw.Elapsed.TotalMilliseconds < ms)
        {
            outBuf.SetLength(0);
            using (var z = new DeflateStream(outBuf, CompressionLevel.Optimal, true))
                z.Write(data, 0, 256 << 10);
            sink += outBuf.Length;
        }
    }

    [MethodImpl(MethodImplOptions.NoInlining)]
    public static void Loop(double ms)
    {
        var sw = Stopwatch.StartNew();
        long x = 1;
        while (sw.Elapsed.TotalMilliseconds < ms)
            for (int i = 0; i < 100000; i++)
                x = x * 6364136223846793005L + 1442695040888963407L;
        sink += x;
    }

    private static int Calls(double seconds)
    {
        // The native libraries loaded first, and a pause: the sampler reads a
        // library's unwind tables on its own thread, at its next tick after the
        // library appears, which a loaded machine can delay by tens of ms (CI:
        // 93% of Deflate's samples under it, the rest before its tables).
        Hash(1);
        Deflate(1);
        System.Threading.Thread.Sleep(300);
        var cpu = Process.GetCurrentProcess();
        int rounds = 0;
        while (cpu.TotalProcessorTime.TotalSeconds < seconds)
        {
            Hash(20);
            Deflate(20);
            Loop(20);
            rounds++;
            cpu.Refresh();
        }
        Console.WriteLine($"unwind calls {rounds} rounds {(sink != 1 ? "done" : "?")}");
        return 0;
    }

    private static int Bench(int rounds)
    {
        var sw = Stopwatch.StartNew();
        var outBuf = new MemoryStream(1 << 20);
        for (int r = 0; r < rounds; r++)
        {
            for (int i = 0; i < 8; i++)
                sink += SHA256.HashData(data)[0];
            for (int i = 0; i < 2; i++)
            {
                outBuf.SetLength(0);
                using (var z = new DeflateStream(outBuf, CompressionLevel.Optimal, true))
                    z.Write(data, 0, 256 << 10);
                sink += outBuf.Length;
            }
            long x = r;
            for (int i = 0; i < 5000000; i++)
                x = x * 6364136223846793005L + 1442695040888963407L;
            sink += x;
        }
        Console.WriteLine($"bench {sw.Elapsed.TotalMilliseconds:F1} ms {sink % 7}");
        return 0;
    }

    [MethodImpl(MethodImplOptions.NoInlining)]
    public static void Collect()
    {
        GC.Collect(2, GCCollectionMode.Forced, true, true);
    }

    private static int Gc(double seconds)
    {
        var keep = new object[200000];
        for (int i = 0; i < keep.Length; i++)
            keep[i] = new byte[32];
        var cpu = Process.GetCurrentProcess();
        int n = 0;
        while (cpu.TotalProcessorTime.TotalSeconds < seconds)
        {
            Collect();
            n++;
            cpu.Refresh();
        }
        Console.WriteLine($"unwind gc {n} collections {(keep[7] != null ? "done" : "?")}");
        return 0;
    }
}
