// The async scenario (issue 19, docs/async.md): programs whose logical async
// stacks are known, so that a test can check that sampled stacks show the
// methods that awaited, not the thread pool that resumed them.
//
//   async chain     Outer awaits Middle awaits Inner; Inner waits 20 ms (its
//                   callers await it meanwhile), then yields (the rest of it
//                   runs on a pool thread) and burns CPU in Burn, in slices,
//                   each after an await: every Burn sample is after an await.
//                   Main waits synchronously (a sync-over-async root).
//   async whenall   Parent awaits Task.WhenAll of three Child calls; each child
//                   yields, then burns in ChildBurn.
//   async deep      a chain of 50 awaits (Deep(50) .. Deep(1)), then DeepBurn
//                   after a yield.
//   async bench N   the benchmark (bench/bench_async.c): BenchOuter awaits
//                   BenchMiddle awaits BenchInner, which resumes N times (each
//                   after a Task.Yield) and computes a little each time; prints
//                   "bench MS ms N resumes" (the resumes' own time).
//   async throw     ThrowOuter awaits ThrowMiddle awaits ThrowInner, which
//                   throws after an await of 50 ms (on a pool thread); ThrowOuter
//                   catches it and prints "caught: MESSAGE".
//   async alloc     AllocOuter awaits AllocMiddle awaits AllocInner, which
//                   allocates 1 KB arrays after each await (on a pool thread)
//                   for about SECONDS of CPU.
//   async valuetask Outer awaits a ValueTask<int> method (ValueMiddle) that
//                   awaits a pooled ValueTask<int> method (PooledInner,
//                   PoolingAsyncValueTaskMethodBuilder) with ConfigureAwait(false);
//                   PooledInner burns in PooledBurn after a yield.
//   async yield     the issue's own program: YieldOuter awaits YieldMiddle
//                   awaits YieldInner, which yields once at its start and then
//                   burns in YieldBurn for SECONDS: every sample is in the
//                   first resume, which can start before its callers await.
//   async void      an async void method (VoidRoot: nobody can await it)
//                   awaits VoidInner, which burns in VoidBurn after each yield;
//                   Main waits for VoidRoot's end on an event.
//   async custom    CustomOuter awaits CustomInner through a custom awaiter
//                   that keeps CustomOuter's continuation in an object of its
//                   own (a ContinueWith with state): the chain cannot be
//                   followed past CustomInner, which burns in CustomBurn.
//
// Each burns about SECONDS of CPU (default 1.5) and prints "async NAME done".
using System;
using System.Diagnostics;
using System.Runtime.CompilerServices;
using System.Threading.Tasks;

namespace Scenarios;

public static class AsyncScenario
{
    private static double s_seconds = 1.5;
    private static long s_sink;

    public static int Run(string[] args)
    {
        string what = args.Length > 0 ? args[0] : "chain";
        if (what == "bench")
        {
            int n = args.Length > 1 ? int.Parse(args[1]) : 200_000;
            BenchOuter(1000).GetAwaiter().GetResult(); /* warm: compiled, tiered */
            var sw = Stopwatch.StartNew();
            BenchOuter(n).GetAwaiter().GetResult();
            Console.WriteLine($"bench {sw.Elapsed.TotalMilliseconds:F1} ms {n} resumes {s_sink & 1}");
            return 0;
        }
        if (args.Length > 1)
            s_seconds = double.Parse(args[1], System.Globalization.CultureInfo.InvariantCulture);
        // Spin compiled first: the first resume of Inner can start before its
        // callers have awaited it (it has no caller yet: docs/async.md), so it
        // must not be a long one (under emulation a compilation is long).
        s_sink += Spin(1000);
        switch (what)
        {
            case "chain": Outer().GetAwaiter().GetResult(); break;
            case "whenall": Parent().GetAwaiter().GetResult(); break;
            case "deep": Deep(50).GetAwaiter().GetResult(); break;
            case "valuetask": ValueOuter().GetAwaiter().GetResult(); break;
            case "void": VoidRoot(); s_voidDone.Wait(); break;
            case "yield": YieldOuter().GetAwaiter().GetResult(); break;
            case "custom": CustomOuter().GetAwaiter().GetResult(); break;
            case "throw": ThrowOuter().GetAwaiter().GetResult(); break;
            case "alloc": AllocOuter().GetAwaiter().GetResult(); break;
            default:
                Console.Error.WriteLine($"usage: Scenarios async chain|whenall|deep|valuetask|throw|alloc|void|custom|yield [SECONDS], not '{what}'");
                return 2;
        }
        Console.WriteLine($"async {what} done {s_sink & 1}");
        return 0;
    }

    // CPU time of the process, for a budget that does not depend on the machine's load.
    private static double Cpu() => Process.GetCurrentProcess().TotalProcessorTime.TotalSeconds;

    [MethodImpl(MethodImplOptions.NoInlining)]
    private static long Spin(int n)
    {
        long x = n;
        for (int i = 0; i < n; i++)
            x = x * 6364136223846793005L + 1442695040888963407L;
        return x;
    }

    // ---- chain ----
    [MethodImpl(MethodImplOptions.NoInlining)]
    private static async Task Outer()
    {
        await Middle();
        s_sink++;
    }

    [MethodImpl(MethodImplOptions.NoInlining)]
    private static async Task<int> Middle()
    {
        int r = await Inner();
        return r + 1;
    }

    [MethodImpl(MethodImplOptions.NoInlining)]
    private static async Task<int> Inner()
    {
        double end = Cpu() + s_seconds;
        int slices = 0;
        await Task.Delay(20); /* its callers have awaited it by the first slice */
        while (Cpu() < end)
        {
            await Task.Yield();
            Burn();
            slices++;
        }
        return slices;
    }

    [MethodImpl(MethodImplOptions.NoInlining)]
    private static void Burn() => s_sink += Spin(2_000_000);

    // ---- throw ----
    [MethodImpl(MethodImplOptions.NoInlining)]
    private static async Task ThrowOuter()
    {
        try
        {
            await ThrowMiddle();
        }
        catch (InvalidOperationException e)
        {
            Console.WriteLine($"caught: {e.Message}");
        }
    }

    [MethodImpl(MethodImplOptions.NoInlining)]
    private static async Task<int> ThrowMiddle() => await ThrowInner() + 1;

    [MethodImpl(MethodImplOptions.NoInlining)]
    private static async Task<int> ThrowInner()
    {
        await Task.Delay(50); /* ThrowMiddle has awaited it by then */
        if (s_seconds > 0)
            throw new InvalidOperationException("thrown after an await");
        return 1;
    }

    // ---- alloc ----
    [MethodImpl(MethodImplOptions.NoInlining)]
    private static async Task AllocOuter() => s_sink += await AllocMiddle();

    [MethodImpl(MethodImplOptions.NoInlining)]
    private static async Task<int> AllocMiddle() => await AllocInner() + 1;

    [MethodImpl(MethodImplOptions.NoInlining)]
    private static async Task<int> AllocInner()
    {
        double end = Cpu() + s_seconds;
        int n = 0;
        await Task.Delay(20); /* its callers have awaited it by then */
        while (Cpu() < end)
        {
            await Task.Yield();
            for (int i = 0; i < 2000; i++)
                s_keep = new byte[1024];
            n++;
        }
        return n;
    }

    private static byte[]? s_keep;

    // ---- bench ----
    [MethodImpl(MethodImplOptions.NoInlining)]
    private static async Task BenchOuter(int n) => s_sink += await BenchMiddle(n);

    [MethodImpl(MethodImplOptions.NoInlining)]
    private static async Task<int> BenchMiddle(int n) => await BenchInner(n) + 1;

    [MethodImpl(MethodImplOptions.NoInlining)]
    private static async Task<int> BenchInner(int n)
    {
        for (int i = 0; i < n; i++)
        {
            await Task.Yield();
            s_sink += Spin(2000);
        }
        return n;
    }

    // ---- whenall ----
    [MethodImpl(MethodImplOptions.NoInlining)]
    private static async Task Parent()
    {
        double end = Cpu() + s_seconds;
        while (Cpu() < end)
            await Task.WhenAll(Child(1), Child(2), Child(3));
    }

    [MethodImpl(MethodImplOptions.NoInlining)]
    private static async Task Child(int k)
    {
        await Task.Yield();
        ChildBurn(k);
    }

    [MethodImpl(MethodImplOptions.NoInlining)]
    private static void ChildBurn(int k) => s_sink += Spin(1_000_000 * k);

    // ---- deep ----
    [MethodImpl(MethodImplOptions.NoInlining)]
    private static async Task<int> Deep(int n)
    {
        if (n == 0)
            return await DeepLeaf();
        return await Deep(n - 1) + 1;
    }

    [MethodImpl(MethodImplOptions.NoInlining)]
    private static async Task<int> DeepLeaf()
    {
        double end = Cpu() + s_seconds;
        int slices = 0;
        while (Cpu() < end)
        {
            await Task.Yield();
            DeepBurn();
            slices++;
        }
        return slices;
    }

    [MethodImpl(MethodImplOptions.NoInlining)]
    private static void DeepBurn() => s_sink += Spin(2_000_000);

    // ---- valuetask ----
    [MethodImpl(MethodImplOptions.NoInlining)]
    private static async Task ValueOuter()
    {
        double end = Cpu() + s_seconds;
        while (Cpu() < end)
            s_sink += await ValueMiddle();
    }

    [MethodImpl(MethodImplOptions.NoInlining)]
    private static async ValueTask<int> ValueMiddle()
    {
        return await PooledInner().ConfigureAwait(false) + 1;
    }

    [AsyncMethodBuilder(typeof(PoolingAsyncValueTaskMethodBuilder<>))]
    [MethodImpl(MethodImplOptions.NoInlining)]
    private static async ValueTask<int> PooledInner()
    {
        await Task.Yield();
        PooledBurn();
        return 1;
    }

    [MethodImpl(MethodImplOptions.NoInlining)]
    private static void PooledBurn() => s_sink += Spin(2_000_000);

    // ---- void ----
    private static readonly System.Threading.ManualResetEventSlim s_voidDone = new();

    [MethodImpl(MethodImplOptions.NoInlining)]
    private static async void VoidRoot()
    {
        await VoidInner();
        s_voidDone.Set();
    }

    [MethodImpl(MethodImplOptions.NoInlining)]
    private static async Task VoidInner()
    {
        double end = Cpu() + s_seconds;
        await Task.Delay(20);
        while (Cpu() < end)
        {
            await Task.Yield();
            VoidBurn();
        }
    }

    [MethodImpl(MethodImplOptions.NoInlining)]
    private static void VoidBurn() => s_sink += Spin(2_000_000);

    // ---- custom ----
    private sealed class Relay
    {
        public Action? Next;
    }

    private readonly struct CustomAwaitable
    {
        private readonly Task _task;
        public CustomAwaitable(Task task) => _task = task;
        public CustomAwaiter GetAwaiter() => new CustomAwaiter(_task);
    }

    private readonly struct CustomAwaiter : INotifyCompletion
    {
        private readonly Task _task;
        public CustomAwaiter(Task task) => _task = task;
        public bool IsCompleted => _task.IsCompleted;
        public void GetResult() => _task.GetAwaiter().GetResult();
        public void OnCompleted(Action continuation) =>
            _task.ContinueWith(static (_, state) => ((Relay)state!).Next!(), new Relay { Next = continuation },
                               TaskScheduler.Default);
    }

    [MethodImpl(MethodImplOptions.NoInlining)]
    private static async Task CustomOuter()
    {
        await new CustomAwaitable(CustomInner());
        s_sink++;
    }

    [MethodImpl(MethodImplOptions.NoInlining)]
    private static async Task CustomInner()
    {
        double end = Cpu() + s_seconds;
        await Task.Delay(20);
        while (Cpu() < end)
        {
            await Task.Yield();
            CustomBurn();
        }
    }

    [MethodImpl(MethodImplOptions.NoInlining)]
    private static void CustomBurn() => s_sink += Spin(2_000_000);

    // ---- yield ----
    [MethodImpl(MethodImplOptions.NoInlining)]
    private static async Task YieldOuter()
    {
        await YieldMiddle();
        s_sink++;
    }

    [MethodImpl(MethodImplOptions.NoInlining)]
    private static async Task<int> YieldMiddle()
    {
        return await YieldInner() + 1;
    }

    [MethodImpl(MethodImplOptions.NoInlining)]
    private static async Task<int> YieldInner()
    {
        await Task.Yield();
        double end = Cpu() + s_seconds;
        int n = 0;
        while (Cpu() < end)
        {
            YieldBurn();
            n++;
        }
        return n;
    }

    [MethodImpl(MethodImplOptions.NoInlining)]
    private static void YieldBurn() => s_sink += Spin(2_000_000);
}
