// SampleScenario: work of known shape for the sampling profiler (dnprof run
// --sample; tests/e2e/test_sample_profile.c).
//   sample shares CPU_SECONDS [READY_FILE]  threads whose three hot methods run the
//       same loop body 6, 3 and 1 times per round (60/30/10% of the work) until the
//       process has used CPU_SECONDS of CPU; with READY_FILE, it first writes its
//       pid there and waits for READY_FILE.go (an attach), then works
//   sample native LIB SECONDS    a P/Invoke into a native loop (dnp_native_spin in
//       LIB) and managed work, half and half
//   sample stubs CPU_SECONDS     interface calls through one call site to four
//       classes in turn (Dispatch): the runtime's dispatch stubs run between
//       the caller and each tiny callee, many samples land in them
//   sample tight CPU_SECONDS     a very short method (Tiny) called in a tight loop
//       (TightLoop): many samples land in its prologue and epilogue, where the
//       frame pointer is still (or again) its caller's
//   sample alloc CPU_SECONDS     a loop (AllocLoop) that allocates byte[256] arrays and
//       keeps a window of them alive: much of its time is in libcoreclr's
//       allocation helpers and the GC, which keep no frame pointers
//   sample waitsplit THREADS SECONDS  THREADS threads that block for SECONDS,
//       three in four in WaitThree, one in four in WaitOne (Thread.Sleep); prints
//       "waitsplit three MS one MS": the milliseconds of thread time in each,
//       each thread timing its own wait (wall-clock sampling's truth)
//   sample waitalt THREADS SECONDS  every thread goes from one to the other,
//       after 300 ms in WaitThree: WaitThree for 15-45 ms, WaitOne for 5-15 ms,
//       for SECONDS. The two block at the same stack depth in the same system
//       call: only the return address between them tells them apart. Prints
//       the same line as waitsplit.
//   sample osrwait THREADS ROUNDS  every thread sleeps 50 ms, then in OsrWaiter
//       (called by OsrCaller) spins 100 ms, long enough for the runtime to
//       replace the loop's Tier0 code by an OSR method, and then, in the same
//       loop, sleeps ROUNDS times 30 ms and 10 ms from two call sites (waits
//       in new places, walked from a copy of the stack). Prints "osrwait ms=N",
//       the threads' time in OsrWaiter. A sampled stack with OsrWaiter must
//       have OsrCaller under it: an OSR method's frame keeps the Tier0 frame's
//       return address off the frame-pointer chain.
//   sample osrasync ROUNDS       for each of 12 struct types T in turn, two async
//       handlers ROUNDS times await Task.Delay(2), then spin 5 ms in OsrBurn<T>,
//       called by OsrFetch<T> (async): each OsrBurn<T> is compiled apart and
//       goes from Tier0 through OSR to Tier1 in the run, on pool threads whose
//       Tier0 frames may hold copies of the caller's frame pointer. A sampled
//       OsrBurn must have OsrFetch under it, once. Prints "osrasync ms=N".
//   sample osrdeep CPU_SECONDS  OsrDeepLoop (called by OsrDeepCaller) loops for
//       CPU_SECONDS of the process's CPU, so the runtime moves it to an OSR
//       method at once and it never returns to be compiled again; each round
//       calls 40 frames of OsrDescend, each with 32 words of its own, and
//       burns at the bottom. A sampled OsrDeepLoop must have OsrDeepCaller
//       under it: the look for the frame the OSR method keeps off the chain
//       must reach it past a deep stack.
//   sample framelesswait MS      the main thread waits MS ms in each of Task.Wait(),
//       ManualResetEventSlim.Wait(), SemaphoreSlim.Wait() and Thread.Join(), from
//       WaitsOnTask, WaitsOnEvent, WaitsOnSemaphore and WaitsOnThread. CoreLib's
//       wrappers keep no frame of their own, so the frame-pointer chain skips
//       their caller until the sampler has learned where its return address
//       lies. Prints "framelesswait task MS event MS semaphore MS join MS".
//   sample shortthreads ROUNDS THREADS MS  ROUNDS times, THREADS threads started
//       at once, each spinning in ShortSpin until its own CPU clock has moved MS
//       ms, then ending: threads that live a few tens of ms, sampled from their
//       start or not at all. Prints "shortthreads ms=N wall=M", the threads' CPU
//       time in ShortSpin, each thread reading its own clock, and their elapsed
//       time in it
//   sample lcg SECONDS           a compiled expression tree (a dynamic method,
//       DynamicWork's caller) that calls LcgWork and adds one to its result, from
//       LcgCaller's loop: LcgWork's samples lie under the dynamic method's frame, for
//       SECONDS of the process's CPU
//   sample deep DEPTH CPU_SECONDS  DeepBurn at the bottom of DEPTH frames of
//       Descend (deep recursion), then ShallowBurn called from Run: CPU_SECONDS
//       of the process's CPU each; prints "deep done"
//   sample harm                  64 busy threads with sleeps, pipes and sockets:
//       output and exit code (7) must not change under the profiler
//   sample bench cpu|server      bench/bench_sample.c's workloads (and busyN, wakeN, blockN:
//                                bench/bench_server.sh's): one thread of
//       hot loops, or 64 threads serving 20000 requests (compute, some sleep);
//       prints "NAME MS ms", the workload's own time
//   sample gcpause SECONDS       a thread computing while collections stop it (SampleGcPause.cs)
using System;
using System.Diagnostics;
using System.IO;
using System.IO.Pipes;
using System.Net;
using System.Net.Sockets;
using System.Runtime.CompilerServices;
using System.Runtime.InteropServices;
using System.Threading;

namespace Scenarios;

public static partial class SampleScenario
{
    private const long Round = 20000; // iterations of the loop body per unit of work
    private static long sink;

    public static int Run(string[] args)
    {
        string name = args.Length > 0 ? args[0] : "";
        switch (name)
        {
            case "shares": return Shares(args);
            case "sharesswitch": return Shares(args, true);
            case "native": return Native(args);
            case "stubs": return Stubs(args);
            case "lcg": return Lcg(double.Parse(args[1], System.Globalization.CultureInfo.InvariantCulture));
            case "tight": return Tight(args);
            case "shortthreads": return ShortThreads(int.Parse(args[1]), int.Parse(args[2]), int.Parse(args[3]));
            case "deep": return Deep(args);
            case "alloc": return Alloc(args);
            case "harm": return Harm();
            case "waitsplit": return WaitSplit(int.Parse(args[1]), double.Parse(args[2], System.Globalization.CultureInfo.InvariantCulture));
            case "waitalt": return WaitSplit(int.Parse(args[1]), double.Parse(args[2], System.Globalization.CultureInfo.InvariantCulture), true);
            case "osrwait": return OsrWait(int.Parse(args[1]), int.Parse(args[2]));
            case "osrasync": return OsrAsync(int.Parse(args[1]));
            case "osrdeep": return OsrDeepCaller(double.Parse(args[1], System.Globalization.CultureInfo.InvariantCulture));
            case "framelesswait": return FramelessWait(int.Parse(args[1]));
            case "gcpause": return GcPause(double.Parse(args[1], System.Globalization.CultureInfo.InvariantCulture));
            case "bench": return Bench(args.Length > 1 ? args[1] : "cpu", args.Length > 2 ? int.Parse(args[2]) : 1);
        }
        Console.Error.WriteLine("usage: Scenarios sample shares|sharesswitch CPU_SECONDS [READY_FILE] | native LIB SECONDS | harm");
        return 2;
    }

    // The same loop body in each: the work is in the iteration counts.
    [MethodImpl(MethodImplOptions.NoInlining)]
    public static long HotSixty(long n)
    {
        long x = n, s = 0;
        for (long i = 0; i < n; i++) { x = x * 6364136223846793005L + 1442695040888963407L; s += x >> 33; }
        return s;
    }

    [MethodImpl(MethodImplOptions.NoInlining)]
    public static long HotThirty(long n)
    {
        long x = n, s = 0;
        for (long i = 0; i < n; i++) { x = x * 6364136223846793005L + 1442695040888963407L; s += x >> 33; }
        return s;
    }

    [MethodImpl(MethodImplOptions.NoInlining)]
    public static long HotTen(long n)
    {
        long x = n, s = 0;
        for (long i = 0; i < n; i++) { x = x * 6364136223846793005L + 1442695040888963407L; s += x >> 33; }
        return s;
    }

    [MethodImpl(MethodImplOptions.NoInlining)]
    public static double WaitThree(int ms) => Blocked(ms);

    [MethodImpl(MethodImplOptions.NoInlining)]
    public static double WaitOne(int ms) => Blocked(ms);

    [MethodImpl(MethodImplOptions.NoInlining)]
    private static double Blocked(int ms)
    {
        var sw = Stopwatch.StartNew();
        Thread.Sleep(ms);
        return sw.Elapsed.TotalMilliseconds;
    }

    [MethodImpl(MethodImplOptions.NoInlining)]
    public static double OsrWaiter(int rounds)
    {
        var sw = Stopwatch.StartNew();
        long x = 0;
        int done = 0;
        for (long i = 0; done < 2 * rounds; i++)
        {
            x += i ^ (x >> 3);
            if ((i & 1023) != 0 || sw.ElapsedMilliseconds < 100)
                continue;
            if ((done++ & 1) == 0)
                Thread.Sleep(30);
            else
                Thread.Sleep(10);
        }
        sink += x;
        return sw.Elapsed.TotalMilliseconds;
    }

    [MethodImpl(MethodImplOptions.NoInlining)]
    public static double OsrCaller(int rounds) => OsrWaiter(rounds) + 0.0;

    // CoreLib's Wait() wrappers keep no frame of their own (Tier1: push rax; call; add rsp, 8; ret)
    [MethodImpl(MethodImplOptions.NoInlining)]
    public static void WaitsOnTask(int ms) => System.Threading.Tasks.Task.Delay(ms).Wait();

    [MethodImpl(MethodImplOptions.NoInlining)]
    public static void WaitsOnEvent(int ms)
    {
        using var e = new ManualResetEventSlim(false);
        using var t = new Timer(_ => e.Set(), null, ms, Timeout.Infinite);
        e.Wait();
    }

    [MethodImpl(MethodImplOptions.NoInlining)]
    public static void WaitsOnSemaphore(int ms)
    {
        using var s = new SemaphoreSlim(0);
        using var t = new Timer(_ => s.Release(), null, ms, Timeout.Infinite);
        s.Wait();
    }

    [MethodImpl(MethodImplOptions.NoInlining)]
    public static void WaitsOnThread(int ms)
    {
        var th = new Thread(() => Thread.Sleep(ms));
        th.Start();
        th.Join();
    }

    private static int FramelessWait(int ms)
    {
        var sw = Stopwatch.StartNew();
        WaitsOnTask(ms);
        double task = sw.Elapsed.TotalMilliseconds;
        WaitsOnEvent(ms);
        double ev = sw.Elapsed.TotalMilliseconds;
        WaitsOnSemaphore(ms);
        double sem = sw.Elapsed.TotalMilliseconds;
        WaitsOnThread(ms);
        double join = sw.Elapsed.TotalMilliseconds;
        Console.WriteLine($"framelesswait task {task:F0} event {ev - task:F0} semaphore {sem - ev:F0} join {join - sem:F0}");
        return 0;
    }

    private struct K0 { } private struct K1 { } private struct K2 { } private struct K3 { }
    private struct K4 { } private struct K5 { } private struct K6 { } private struct K7 { }
    private struct K8 { } private struct K9 { } private struct K10 { } private struct K11 { }

    private static double osrSink;

    [MethodImpl(MethodImplOptions.NoInlining)]
    private static void OsrBurn<T>(int ms) where T : struct
    {
        var sw = Stopwatch.StartNew();
        while (sw.ElapsedMilliseconds < ms)
            osrSink += Math.Sqrt(sw.ElapsedTicks);
    }

    private static async System.Threading.Tasks.Task<int> OsrFetch<T>(int i) where T : struct
    {
        await System.Threading.Tasks.Task.Delay(20);
        OsrBurn<T>(5);
        return i;
    }

    private static async System.Threading.Tasks.Task OsrHandle<T>(int rounds) where T : struct
    {
        for (int i = 0; i < rounds; i++)
            await OsrFetch<T>(i);
    }

    private static void OsrRounds<T>(int rounds) where T : struct =>
        System.Threading.Tasks.Task.WhenAll(OsrHandle<T>(rounds), OsrHandle<T>(rounds)).Wait();

    private static int OsrAsync(int rounds)
    {
        var sw = Stopwatch.StartNew();
        OsrRounds<K0>(rounds); OsrRounds<K1>(rounds); OsrRounds<K2>(rounds); OsrRounds<K3>(rounds);
        OsrRounds<K4>(rounds); OsrRounds<K5>(rounds); OsrRounds<K6>(rounds); OsrRounds<K7>(rounds);
        OsrRounds<K8>(rounds); OsrRounds<K9>(rounds); OsrRounds<K10>(rounds); OsrRounds<K11>(rounds);
        Console.WriteLine($"osrasync ms={sw.ElapsedMilliseconds}");
        return 0;
    }

    [MethodImpl(MethodImplOptions.NoInlining)]
    private static long OsrDescend(int depth)
    {
        Span<long> own = stackalloc long[32];
        own[depth & 31] = depth;
        if (depth == 0)
        {
            long s = 0;
            for (int i = 0; i < 20000; i++)
                s += i * i ^ own[i & 31];
            return s;
        }
        return OsrDescend(depth - 1) + own[depth & 31];
    }

    [MethodImpl(MethodImplOptions.NoInlining)]
    private static long OsrDeepLoop(double cpuSeconds)
    {
        var start = Process.GetCurrentProcess().TotalProcessorTime;
        long s = 0;
        for (int round = 0; ; round++)
        {
            s += OsrDescend(40);
            if ((round & 63) == 0 && (Process.GetCurrentProcess().TotalProcessorTime - start).TotalSeconds >= cpuSeconds)
                return s;
        }
    }

    [MethodImpl(MethodImplOptions.NoInlining)]
    private static int OsrDeepCaller(double cpuSeconds)
    {
        sink += OsrDeepLoop(cpuSeconds);
        Console.WriteLine("osrdeep done");
        return 0;
    }

    private static int OsrWait(int n, int rounds)
    {
        var threads = new Thread[n];
        double ms = 0;
        object gate = new object();
        for (int i = 0; i < n; i++)
        {
            threads[i] = new Thread(() =>
            {
                Thread.Sleep(50); // a first wait, sampled by a signal: in libc and the runtime
                double mine = OsrCaller(rounds);
                lock (gate)
                    ms += mine;
            });
            threads[i].Start();
        }
        foreach (var t in threads)
            t.Join();
        Console.WriteLine($"osrwait ms={ms:F0}");
        return 0;
    }

    private static int WaitSplit(int n, double seconds, bool alternate = false)
    {
        var threads = new Thread[n];
        double three = 0, one = 0;
        object gate = new object();
        for (int i = 0; i < n; i++)
        {
            bool isOne = i % 4 == 3;
            threads[i] = new Thread(() =>
            {
                double ms3 = 0, ms1 = 0;
                if (!alternate)
                {
                    if (isOne) ms1 = WaitOne((int)(seconds * 1000)); else ms3 = WaitThree((int)(seconds * 1000));
                }
                else
                {
                    // 30 and 10 ms on average, each drawn anew: waits of one length would
                    // beat with the sampler's visits (every few ticks) and bias the split
                    var rng = new Random(Environment.CurrentManagedThreadId);
                    var all = Stopwatch.StartNew();
                    // first 300 ms in WaitThree: every thread is sampled there, so a look
                    // that took WaitOne's wait for it would keep counting WaitThree
                    ms3 += WaitThree(300);
                    while (all.Elapsed.TotalSeconds < seconds)
                    {
                        ms3 += WaitThree(rng.Next(15, 46));
                        ms1 += WaitOne(rng.Next(5, 16));
                    }
                }
                lock (gate)
                {
                    three += ms3;
                    one += ms1;
                }
            });
            threads[i].Start();
        }
        foreach (var t in threads)
            t.Join();
        Console.WriteLine($"waitsplit three {three:F0} one {one:F0}");
        return 0;
    }

    // measured: the thread's CPU time in each, what cpu samples count (a
    // Stopwatch also counted the time the thread waited for a CPU on a loaded
    // machine, which once put HotSixty at 64.6% where the samples read 59.5%)
    private static long t60, t30, t10;
    private static bool stop;

    [MethodImpl(MethodImplOptions.NoInlining)]
    private static void Rounds()
    {
        long s = 0, a = 0, b = 0, c = 0;
        while (!Volatile.Read(ref stop))
        {
            for (int k = 0; k < 10; k++)
            {
                long t0 = ThreadClock.CpuNs();
                s += HotSixty(6 * Round);
                long t1 = ThreadClock.CpuNs();
                s += HotThirty(3 * Round);
                long t2 = ThreadClock.CpuNs();
                s += HotTen(1 * Round);
                long t3 = ThreadClock.CpuNs();
                a += t1 - t0; b += t2 - t1; c += t3 - t2;
            }
        }
        Interlocked.Add(ref sink, s);
        Interlocked.Add(ref t60, a);
        Interlocked.Add(ref t30, b);
        Interlocked.Add(ref t10, c);
    }

    // Two threads handing a token to each other through Semaphores until stop:
    // tens of thousands of context switches a second beside the hot threads.
    private static Thread[] Switchers()
    {
        var a = new Semaphore(1, int.MaxValue);
        var b = new Semaphore(0, int.MaxValue);
        var pair = new Thread[2];
        for (int i = 0; i < 2; i++)
        {
            var mine = i == 0 ? a : b;
            var next = i == 0 ? b : a;
            pair[i] = new Thread(() =>
            {
                while (!Volatile.Read(ref stop))
                {
                    if (mine.WaitOne(100)) // the token, or a look at stop
                        next.Release();
                }
            }) { Name = "switch-" + i };
            pair[i].Start();
        }
        return pair;
    }

    // shares: four threads run HotSixty, HotThirty and HotTen in turn for
    // CPU_SECONDS of the process's CPU time; sharesswitch: the same beside two
    // threads that switch all the time (Switchers).
    private static int Shares(string[] args, bool switching = false)
    {
        double cpu = args.Length > 1 ? double.Parse(args[1], System.Globalization.CultureInfo.InvariantCulture) : 4;
        if (args.Length > 2)
        {
            File.WriteAllText(args[2] + ".tmp", Environment.ProcessId.ToString());
            File.Move(args[2] + ".tmp", args[2], true);
            var sw = Stopwatch.StartNew();
            while (!File.Exists(args[2] + ".go") && sw.Elapsed.TotalSeconds < 60)
            {
                HotTen(Round); // warm: the methods are compiled before the attach
                HotThirty(Round);
                HotSixty(Round);
                Thread.Sleep(20);
            }
        }
        var proc = Process.GetCurrentProcess();
        TimeSpan start = proc.TotalProcessorTime;
        var wall = Stopwatch.StartNew();
        var threads = new Thread[4];
        for (int i = 0; i < threads.Length; i++)
        {
            threads[i] = new Thread(Rounds) { Name = "hot-" + i };
            threads[i].Start();
        }
        Thread[] switchers = switching ? Switchers() : Array.Empty<Thread>();
        // the main thread keeps the budget: the workers only run the hot methods
        for (;;)
        {
            Thread.Sleep(20);
            proc.Refresh();
            if ((proc.TotalProcessorTime - start).TotalSeconds >= cpu || wall.Elapsed.TotalSeconds > 60)
                break;
        }
        Volatile.Write(ref stop, true);
        foreach (var t in threads)
            t.Join();
        foreach (var t in switchers)
            t.Join();
        double all = t60 + t30 + t10;
        Console.WriteLine("shares 60 30 10");
        Console.Error.WriteLine($"measured {100 * t60 / all:F1} {100 * t30 / all:F1} {100 * t10 / all:F1}");
        return 0;
    }

    // A few instructions between its prologue and its epilogue: a third or more
    // of its samples fall where its own frame is not set up.
    [MethodImpl(MethodImplOptions.NoInlining)]
    public static long Tiny(long x) => x * 6364136223846793005L + 1442695040888963407L;

    [MethodImpl(MethodImplOptions.NoInlining)]
    private static long TightLoop(long n)
    {
        long x = n;
        for (long i = 0; i < n; i++)
            x = Tiny(x);
        return x;
    }

    private static readonly byte[][] kept = new byte[4096][];

    // Allocates n arrays of 256 bytes, each kept until 4096 later ones: the
    // allocation helpers and the gen0 GCs run on this thread, under this method.
    [MethodImpl(MethodImplOptions.NoInlining)]
    private static long AllocLoop(long n)
    {
        long x = 0;
        for (long i = 0; i < n; i++)
        {
            byte[] b = new byte[256];
            b[0] = (byte)i;
            kept[i & 4095] = b;
            x += b.Length;
        }
        return x;
    }

    private static int Alloc(string[] args)
    {
        double cpu = args.Length > 1 ? double.Parse(args[1], System.Globalization.CultureInfo.InvariantCulture) : 2;
        var proc = Process.GetCurrentProcess();
        TimeSpan start = proc.TotalProcessorTime;
        var wall = Stopwatch.StartNew();
        long s = 0;
        do
        {
            s += AllocLoop(200000);
            proc.Refresh();
        } while ((proc.TotalProcessorTime - start).TotalSeconds < cpu && wall.Elapsed.TotalSeconds < 60);
        Console.WriteLine("alloc " + (s != 1 ? "done" : "?"));
        return 0;
    }

    [MethodImpl(MethodImplOptions.NoInlining)]
    private static long ShortSpin(long ns)
    {
        long start = ThreadClock.CpuNs(), now = start, s = 0;
        while (now - start < ns)
        {
            for (int i = 0; i < 2000; i++)
                s += i * 7 ^ (s >> 3);
            now = ThreadClock.CpuNs();
        }
        Interlocked.Add(ref sink, s);
        return now - start;
    }

    private static int ShortThreads(int rounds, int n, int ms)
    {
        long total = 0, wall = 0;
        for (int r = 0; r < rounds; r++)
        {
            var threads = new Thread[n];
            for (int i = 0; i < n; i++)
                threads[i] = new Thread(() =>
                {
                    long start = Stopwatch.GetTimestamp();
                    Interlocked.Add(ref total, ShortSpin(ms * 1_000_000L));
                    Interlocked.Add(ref wall, Stopwatch.GetTimestamp() - start);
                });
            foreach (var t in threads)
                t.Start();
            foreach (var t in threads)
                t.Join();
        }
        Console.WriteLine($"shortthreads ms={total / 1_000_000} wall={wall * 1000 / Stopwatch.Frequency}");
        return 0;
    }

    private static int Tight(string[] args)
    {
        double cpu = args.Length > 1 ? double.Parse(args[1], System.Globalization.CultureInfo.InvariantCulture) : 2;
        var proc = Process.GetCurrentProcess();
        TimeSpan start = proc.TotalProcessorTime;
        var wall = Stopwatch.StartNew();
        long s = 0;
        do
        {
            s += TightLoop(1000000);
            proc.Refresh();
        } while ((proc.TotalProcessorTime - start).TotalSeconds < cpu && wall.Elapsed.TotalSeconds < 60);
        Console.WriteLine("tight " + (s != 1 ? "done" : "?"));
        return 0;
    }

    private static int Deep(string[] args)
    {
        int depth = args.Length > 1 ? int.Parse(args[1]) : 1000;
        double cpu = args.Length > 2 ? double.Parse(args[2], System.Globalization.CultureInfo.InvariantCulture) : 1;
        sink += Descend(depth, cpu) + ShallowBurn(cpu);
        Console.WriteLine("deep done");
        return 0;
    }

    [MethodImpl(MethodImplOptions.NoInlining)]
    private static long Descend(int n, double cpu) => n == 0 ? DeepBurn(cpu) : Descend(n - 1, cpu) + 1;

    [MethodImpl(MethodImplOptions.NoInlining)]
    private static long DeepBurn(double cpu) => BurnCpu(cpu);

    [MethodImpl(MethodImplOptions.NoInlining)]
    private static long ShallowBurn(double cpu) => BurnCpu(cpu);

    // Loops until the process has used cpu more seconds of CPU (60 s of wall at most).
    private static long BurnCpu(double cpu)
    {
        var proc = Process.GetCurrentProcess();
        TimeSpan start = proc.TotalProcessorTime;
        var wall = Stopwatch.StartNew();
        long x = 0;
        do
        {
            for (int i = 0; i < 2000000; i++)
                x += i ^ (x >> 3);
            proc.Refresh();
        } while ((proc.TotalProcessorTime - start).TotalSeconds < cpu && wall.Elapsed.TotalSeconds < 60);
        return x;
    }

    private interface IStep { long Step(long x); }
    private sealed class StepA : IStep { [MethodImpl(MethodImplOptions.NoInlining)] public long Step(long x) => x + 1; }
    private sealed class StepB : IStep { [MethodImpl(MethodImplOptions.NoInlining)] public long Step(long x) => x ^ 3; }
    private sealed class StepC : IStep { [MethodImpl(MethodImplOptions.NoInlining)] public long Step(long x) => x - 2; }
    private sealed class StepD : IStep { [MethodImpl(MethodImplOptions.NoInlining)] public long Step(long x) => x * 3; }

    [MethodImpl(MethodImplOptions.NoInlining)]
    private static long Dispatch(IStep[] steps, int n)
    {
        long x = 0;
        for (int i = 0; i < n; i++)
            x = steps[i & 3].Step(x); // one call site, four classes: a polymorphic dispatch stub
        return x;
    }

    private static int Stubs(string[] args)
    {
        double cpu = args.Length > 1 ? double.Parse(args[1], System.Globalization.CultureInfo.InvariantCulture) : 2;
        var steps = new IStep[] { new StepA(), new StepB(), new StepC(), new StepD() };
        var proc = Process.GetCurrentProcess();
        TimeSpan start = proc.TotalProcessorTime;
        var wall = Stopwatch.StartNew();
        long s = 0;
        do
        {
            s += Dispatch(steps, 1000000);
            proc.Refresh();
        } while ((proc.TotalProcessorTime - start).TotalSeconds < cpu && wall.Elapsed.TotalSeconds < 60);
        Console.WriteLine("stubs " + (s != 1 ? "done" : "?"));
        return 0;
    }

    [MethodImpl(MethodImplOptions.NoInlining)]
    public static long LcgWork(long n) => HotThirty(n);

    [MethodImpl(MethodImplOptions.NoInlining)]
    private static long LcgCaller(Func<long, long> dynamicWork, double seconds)
    {
        // seconds of the process's CPU (at most a minute of wall time), as the
        // other workloads: a loaded machine gives the thread a share of the wall
        var proc = Process.GetCurrentProcess();
        TimeSpan start = proc.TotalProcessorTime;
        var wall = Stopwatch.StartNew();
        long s = 0;
        do
        {
            for (int i = 0; i < 16; i++)
                s += dynamicWork(3 * Round);
            proc.Refresh();
        } while ((proc.TotalProcessorTime - start).TotalSeconds < seconds && wall.Elapsed.TotalSeconds < 60);
        return s;
    }

    private static int Lcg(double seconds)
    {
        var n = System.Linq.Expressions.Expression.Parameter(typeof(long), "n");
        var call = System.Linq.Expressions.Expression.Call(typeof(SampleScenario).GetMethod(nameof(LcgWork))!, n);
        var body = System.Linq.Expressions.Expression.Add(call, System.Linq.Expressions.Expression.Constant(1L));
        var dynamicWork = System.Linq.Expressions.Expression.Lambda<Func<long, long>>(body, "DynamicWork", new[] { n }).Compile();
        Console.WriteLine("lcg " + (LcgCaller(dynamicWork, seconds) != 1 ? "done" : "?"));
        return 0;
    }

    private delegate long SpinFn(long n);

    [MethodImpl(MethodImplOptions.NoInlining)]
    private static long NativeWork(SpinFn spin) => spin(3 * Round);

    [MethodImpl(MethodImplOptions.NoInlining)]
    private static long ManagedWork() => HotThirty(3 * Round);

    private static int Native(string[] args)
    {
        if (args.Length < 3)
            return 2;
        IntPtr lib = NativeLibrary.Load(args[1]);
        var spin = Marshal.GetDelegateForFunctionPointer<SpinFn>(NativeLibrary.GetExport(lib, "dnp_native_spin"));
        double seconds = double.Parse(args[2], System.Globalization.CultureInfo.InvariantCulture);
        var sw = Stopwatch.StartNew();
        long s = 0;
        while (sw.Elapsed.TotalSeconds < seconds)
        {
            s += NativeWork(spin);
            s += ManagedWork();
        }
        Console.WriteLine("native " + (s != 1 ? "done" : "?"));
        return 0;
    }

    private static int Bench(string what, int times)
    {
        var sw = Stopwatch.StartNew();
        long s = 0;
        if (what == "cpu")
        {
            for (int k = 0; k < 1500 * times; k++) // times: longer runs (bench/bench_windows.sh)
            {
                s += HotSixty(6 * Round);
                s += HotThirty(3 * Round);
                s += HotTen(1 * Round);
            }
        }
        else if (what.StartsWith("busy") || what.StartsWith("wake") || what.StartsWith("block"))
        {
            s = ServerBench(what, times);
        }
        else
        {
            int Workers = 64, Requests = 20000 * times;
            var queue = new System.Collections.Concurrent.BlockingCollection<int>();
            var threads = new Thread[Workers];
            long done = 0;
            for (int i = 0; i < Workers; i++)
            {
                threads[i] = new Thread(() =>
                {
                    long r = 0;
                    foreach (int req in queue.GetConsumingEnumerable())
                    {
                        r += HotTen(2 * Round);
                        if (req % 8 == 0)
                            Thread.Sleep(1);
                        Interlocked.Increment(ref done);
                    }
                    Interlocked.Add(ref sink, r);
                });
                threads[i].Start();
            }
            for (int q = 0; q < Requests; q++)
                queue.Add(q);
            queue.CompleteAdding();
            foreach (var t in threads)
                t.Join();
            s = done;
        }
        sw.Stop();
        Console.WriteLine($"{what} {sw.Elapsed.TotalMilliseconds:F1} ms {s % 7}");
        return 0;
    }

    // bench/bench_server.sh's workloads, a fixed amount of work whatever the
    // machine, so that CPU times compare (issue 26):
    //   busyN: N threads, each 40 * times rounds of compute, never blocking;
    //   wakeN: N threads handing a token round a ring (SemaphoreSlim),
    //          2,000 * times hand-offs each, with a little compute between:
    //          threads that wake thousands of times a second. SemaphoreSlim
    //          spins before it blocks (sched_yield: over half of its CPU time),
    //          so its CPU time moves by 13-20% from run to run;
    //   blockN: the same ring through Semaphore, which blocks at once (the
    //          runtime's wait subsystem: a condition variable, no spinning):
    //          threads that block and wake, at a CPU time that repeats. (An
    //          AutoResetEvent, used before, cannot count: a token that caught
    //          up with the one ahead was lost, and the ring hung at its end.)
    private static long ServerBench(string what, int times)
    {
        int n = int.Parse(what.Substring(what.StartsWith("block") ? 5 : 4));
        var threads = new Thread[n];
        long total = 0;
        if (what.StartsWith("busy"))
        {
            for (int i = 0; i < n; i++)
                threads[i] = new Thread(() =>
                {
                    long r = 0;
                    for (int k = 0; k < 40 * times; k++)
                        r += HotSixty(6 * Round) + HotThirty(3 * Round) + HotTen(Round);
                    Interlocked.Add(ref total, r & 1);
                });
        }
        else
        {
            // the ring: eight tokens go round, each thread waits for one and passes it on
            Action<int> wait, pass;
            if (what.StartsWith("block"))
            {
                var sems = new Semaphore[n];
                for (int i = 0; i < n; i++)
                    sems[i] = new Semaphore(i % 8 == 0 ? 1 : 0, int.MaxValue);
                wait = i => sems[i].WaitOne();
                pass = i => sems[i].Release();
            }
            else
            {
                var sems = new SemaphoreSlim[n];
                for (int i = 0; i < n; i++)
                    sems[i] = new SemaphoreSlim(i % 8 == 0 ? 1 : 0);
                wait = i => sems[i].Wait();
                pass = i => sems[i].Release();
            }
            int rounds = 2000 * times;
            for (int i = 0; i < n; i++)
            {
                int me = i;
                threads[i] = new Thread(() =>
                {
                    long r = 0;
                    for (int k = 0; k < rounds; k++)
                    {
                        wait(me);
                        r += HotTen(Round / 50);
                        pass((me + 1) % n);
                    }
                    Interlocked.Add(ref total, r & 1);
                });
            }
        }
        foreach (var t in threads)
            t.Start();
        foreach (var t in threads)
            t.Join();
        return total;
    }

    // 64 threads: a third spin and sleep, a third talk through anonymous pipes,
    // a third through TCP sockets on loopback. Every count is known in advance.
    private static int Harm()
    {
        const int N = 64, Messages = 2000;
        var threads = new Thread[N];
        long[] results = new long[N];
        var listener = new TcpListener(IPAddress.Loopback, 0);
        listener.Start(N);
        int port = ((IPEndPoint)listener.LocalEndpoint).Port;
        var server = new Thread(() =>
        {
            for (int c = 0; c < N / 3; c++)
            {
                var client = listener.AcceptTcpClient();
                new Thread(() =>
                {
                    using var st = client.GetStream();
                    var buf = new byte[64];
                    int got;
                    while ((got = st.Read(buf, 0, buf.Length)) > 0)
                        st.Write(buf, 0, got);
                    client.Dispose();
                }).Start();
            }
        });
        server.Start();
        for (int i = 0; i < N; i++)
        {
            int id = i;
            threads[i] = new Thread(() =>
            {
                long r = 0;
                switch (id % 3)
                {
                    case 0:
                        for (int k = 0; k < 20; k++) { r += HotTen(50 * Round) & 1; Thread.Sleep(5); r += 1; }
                        r = 20 + (r - 20) * 0; // the sleeps' count; the spin's parity is noise
                        break;
                    case 1:
                        using (var server = new AnonymousPipeServerStream(PipeDirection.Out))
                        using (var client = new AnonymousPipeClientStream(PipeDirection.In, server.ClientSafePipeHandle))
                        {
                            var writer = new Thread(() =>
                            {
                                for (int m = 0; m < Messages; m++) { server.WriteByte((byte)m); if (m % 500 == 0) Thread.Sleep(2); }
                                server.Dispose();
                            });
                            writer.Start();
                            int b;
                            while ((b = client.ReadByte()) >= 0) r += b;
                            writer.Join();
                        }
                        break;
                    default:
                        using (var c = new TcpClient())
                        {
                            c.Connect(IPAddress.Loopback, port);
                            using var st = c.GetStream();
                            var buf = new byte[1];
                            for (int m = 0; m < Messages; m++)
                            {
                                st.WriteByte((byte)m);
                                int got = st.Read(buf, 0, 1);
                                r += got == 1 ? buf[0] : -100000;
                            }
                        }
                        break;
                }
                results[id] = r;
            });
            threads[i].Start();
        }
        foreach (var t in threads)
            t.Join();
        server.Join();
        listener.Stop();
        long total = 0;
        for (int i = 0; i < N; i++)
        {
            Console.WriteLine($"thread {i} {results[i]}");
            total += results[i];
        }
        Console.WriteLine($"total {total}");
        return 7;
    }
}
