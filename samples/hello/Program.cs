// hello: a small program that does a little of everything dnprof records, for
// the README's quick start (`cmake --build build --target demo` runs
// samples/hello/demo.sh): classes, a thread, a hot method worth finding
// (IsPrime, called 300,000 times), an exception thrown and caught, a GC.
//
//   dotnet build samples/hello -c Release -o /tmp/hello
//   dnprof run --calls --exceptions -o hello.trace -- dotnet /tmp/hello/hello.dll
//   dnprof print hello.trace; dnprof report hello.trace; dnprof report --exceptions hello.trace
//
// `hello async` instead: Outer awaits Middle awaits Inner, which burns CPU in
// Burn after each Task.Yield (on a pool thread) for about a second of CPU:
//   dnprof run --sample -o async.trace -- dotnet /tmp/hello/hello.dll async
//   dnprof report async.trace   # Burn under Inner (async) < Middle (async) < Outer (async)
using System;
using System.Collections.Generic;
using System.Diagnostics;
using System.Runtime.CompilerServices;
using System.Threading;
using System.Threading.Tasks;

namespace Hello;

public static class Program
{
    // A nested class: its name in the log is "Hello.Program+Greeter".
    private sealed class Greeter
    {
        public string Greet(string who) => $"hello, {who}";
    }

    public static int Main(string[] args)
    {
        if (args.Length > 0 && args[0] == "async")
        {
            Console.WriteLine($"async: {Outer().GetAwaiter().GetResult()} slices");
            return 0;
        }
        var greeter = new Greeter();
        Console.WriteLine(greeter.Greet("dnprof"));

        // A generic class: "Hello.Pair<System.String, System.Int32>".
        var pair = new Pair<string, int>("answer", 42);
        Console.WriteLine($"{pair.First} = {pair.Second}");

        // A named thread: ThreadCreated, ThreadNameChanged, ThreadDestroyed.
        var worker = new Thread(() => Console.WriteLine("hello from the worker thread"))
        {
            Name = "hello-worker",
        };
        worker.Start();
        worker.Join();

        // Where the time goes: most of the run is in IsPrime (dnprof report).
        Console.WriteLine($"primes below 300000: {CountPrimes(300000)}");

        // An exception, thrown and caught: the search, unwind and catcher events.
        try
        {
            Fail();
        }
        catch (InvalidOperationException e)
        {
            Console.WriteLine($"caught: {e.Message}");
        }

        // Some garbage, then one collection.
        var list = new List<byte[]>();
        for (int i = 0; i < 1000; i++)
            list.Add(new byte[1024]);
        list.Clear();
        GC.Collect();
        Console.WriteLine($"collections so far: {GC.CollectionCount(0)}");
        return 0;
    }

    private static int CountPrimes(int below)
    {
        int n = 0;
        for (int i = 2; i < below; i++)
            if (IsPrime(i))
                n++;
        return n;
    }

    // Trial division: slow on purpose, and not inlined, so that it shows.
    [MethodImpl(MethodImplOptions.NoInlining)]
    private static bool IsPrime(int n)
    {
        for (int d = 2; (long)d * d <= n; d++)
            if (n % d == 0)
                return false;
        return true;
    }

    private static void Fail() => throw new InvalidOperationException("something went wrong on purpose");

    // ---- hello async ----
    [MethodImpl(MethodImplOptions.NoInlining)]
    private static async Task<int> Outer() => await Middle();

    [MethodImpl(MethodImplOptions.NoInlining)]
    private static async Task<int> Middle() => await Inner();

    [MethodImpl(MethodImplOptions.NoInlining)]
    private static async Task<int> Inner()
    {
        double end = Process.GetCurrentProcess().TotalProcessorTime.TotalSeconds + 1.0;
        int slices = 0;
        while (Process.GetCurrentProcess().TotalProcessorTime.TotalSeconds < end)
        {
            await Task.Yield();
            Burn();
            slices++;
        }
        return slices;
    }

    private static long s_sink;

    [MethodImpl(MethodImplOptions.NoInlining)]
    private static void Burn()
    {
        long x = s_sink;
        for (int i = 0; i < 2_000_000; i++)
            x = x * 6364136223846793005L + 1442695040888963407L;
        s_sink = x;
    }
}

public sealed record Pair<TFirst, TSecond>(TFirst First, TSecond Second);
