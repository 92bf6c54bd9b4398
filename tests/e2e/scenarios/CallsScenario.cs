// CallsScenario: calls of known number and shape, for method enter/leave
// (dnprof run --calls, --args, --timeline). `dotnet Scenarios.dll calls [NAME]`
// runs one sub-scenario, or all but "args" without a name. Every counted method
// is NoInlining: an inlined method has no hooks. tests/e2e/test_calls.c holds
// the trace up against the counts printed here.
using System;
using System.Collections.Generic;
using System.Reflection;
using System.Reflection.Emit;
using System.Runtime.CompilerServices;
using System.Runtime.InteropServices;
using System.Threading;
using System.Threading.Tasks;

namespace Scenarios;

public enum Color { Red = 1, Green = 2, Blue = 4 }

public struct One { public int A; }
public struct Two { public int A; public int B; }
public struct Three { public int A; public int B; public int C; }
public struct Mixed { public int I; public double D; }
public struct Sixteen { public long L; public double D; }
public struct Big { public long A; public long B; public long C; public long D; }

public sealed class Payload { public int Value = 7; }

public class GenericBox<T>
{
    private readonly T value;
    public GenericBox(T value) { this.value = value; }

    [MethodImpl(MethodImplOptions.NoInlining)]
    public T Get() => value;
}

public static class CallsScenario
{
    public static int Run(string[] args)
    {
        string name = args.Length > 0 ? args[0] : "all";
        switch (name)
        {
            case "recursion": Recursion(); break;
            case "tail": Tail(); break;
            case "generics": Generics(); break;
            case "threads": Threads(); break;
            case "exceptions": Exceptions(); break;
            case "async": Async(); break;
            case "args": Args(); break;
            case "bench": return Bench(args);
            case "shares": return Shares(args);
            case "osr": Osr(); break;
            case "alloc": return Alloc();
            case "exact": Exact(args); break;
            case "jit": return Jit(args.Length > 1 ? int.Parse(args[1]) : 40);
            case "all":
                Recursion(); Tail(); Generics(); Threads(); Exceptions(); Async();
                break;
            default:
                Console.Error.WriteLine($"usage: Scenarios calls [recursion|tail|generics|threads|exceptions|async|args|bench|shares|osr|alloc|exact], not '{name}'");
                return 2;
        }
        return 0;
    }

    // ---- recursion: Recurse 10 x 101 calls, max depth 101; Fib(20) 21891 calls ----

    [MethodImpl(MethodImplOptions.NoInlining)]
    public static int Recurse(int n) => n == 0 ? 0 : 1 + Recurse(n - 1);

    [MethodImpl(MethodImplOptions.NoInlining)]
    public static int Fib(int n) => n < 2 ? n : Fib(n - 1) + Fib(n - 2);

    private static void Recursion()
    {
        int sum = 0;
        for (int i = 0; i < 10; i++)
            sum += Recurse(100);
        Console.WriteLine($"Recurse calls 1010 sum {sum}");
        Console.WriteLine($"Fib calls 21891 value {Fib(20)}");
    }

    // ---- tail calls: C# cannot ask for one, so Ping and Pong, which call each
    // other with the IL `tail.` prefix, are emitted into a dynamic assembly
    // (which, unlike a DynamicMethod, has metadata and gets enter/leave hooks).
    // A method that tail-calls itself would become a loop: two are needed.
    // Ping(100) x 10: Ping 510 calls, Pong 500, 1000 tail calls in all. ----

    private static void Tail()
    {
        var asm = AssemblyBuilder.DefineDynamicAssembly(new AssemblyName("TailCalls"), AssemblyBuilderAccess.Run);
        var mod = asm.DefineDynamicModule("TailCalls");
        var type = mod.DefineType("Scenarios.TailCalls", TypeAttributes.Public | TypeAttributes.Abstract | TypeAttributes.Sealed);
        var ping = type.DefineMethod("Ping", MethodAttributes.Public | MethodAttributes.Static, typeof(int), new[] { typeof(int) });
        var pong = type.DefineMethod("Pong", MethodAttributes.Public | MethodAttributes.Static, typeof(int), new[] { typeof(int) });
        foreach (var (m, other) in new[] { (ping, pong), (pong, ping) })
        {
            m.SetImplementationFlags(MethodImplAttributes.NoInlining);
            var il = m.GetILGenerator();
            var done = il.DefineLabel();
            il.Emit(OpCodes.Ldarg_0);
            il.Emit(OpCodes.Brfalse_S, done);
            il.Emit(OpCodes.Ldarg_0);
            il.Emit(OpCodes.Ldc_I4_1);
            il.Emit(OpCodes.Sub);
            il.Emit(OpCodes.Tailcall);
            il.Emit(OpCodes.Call, other);
            il.Emit(OpCodes.Ret);
            il.MarkLabel(done);
            il.Emit(OpCodes.Ldc_I4, 42);
            il.Emit(OpCodes.Ret);
        }
        var t = type.CreateType()!;
        var f = t.GetMethod("Ping")!.CreateDelegate<Func<int, int>>();
        int r = 0;
        for (int i = 0; i < 10; i++)
            r = f(100);
        Console.WriteLine($"Ping calls 510 Pong calls 500 tailcalls 1000 value {r}");
    }

    // ---- generics: GenericIdentity<int> 3, <string> 2, <double> 1; GenericBox<...>.Get 3 ----

    [MethodImpl(MethodImplOptions.NoInlining)]
    public static T GenericIdentity<T>(T value) => value;

    private static void Generics()
    {
        int a = GenericIdentity(1) + GenericIdentity(2) + GenericIdentity(3);
        string s = GenericIdentity("x") + GenericIdentity("y");
        double d = GenericIdentity(1.5);
        int b = new GenericBox<int>(5).Get() + new GenericBox<long>(6).Get().GetHashCode();
        string c = new GenericBox<string>("z").Get();
        Console.WriteLine($"GenericIdentity {a} {s} {d}; GenericBox {b} {c}");
    }

    // ---- threads: Work 8 threads x 1000 calls, all at once ----

    private static int workSum;

    [MethodImpl(MethodImplOptions.NoInlining)]
    public static int Work(int i) => (i * 7) & 15;

    private static void Threads()
    {
        var start = new Barrier(8);
        var threads = new Thread[8];
        for (int t = 0; t < 8; t++)
        {
            threads[t] = new Thread(() =>
            {
                start.SignalAndWait();
                int s = 0;
                for (int i = 0; i < 1000; i++)
                    s += Work(i);
                Interlocked.Add(ref workSum, s);
            });
            threads[t].Start();
        }
        foreach (var t in threads)
            t.Join();
        Console.WriteLine($"Work calls 8000 sum {workSum}");
    }

    // ---- exceptions: 10 throws through Level1..Level5 (each with a finally),
    // caught in Catcher; AfterCatch 10 calls from the catching frame ----

    private static int finallies;

    [MethodImpl(MethodImplOptions.NoInlining)]
    public static void Level5(int n) { try { throw new InvalidOperationException("level " + n); } finally { finallies++; } }
    [MethodImpl(MethodImplOptions.NoInlining)]
    public static void Level4(int n) { try { Level5(n); } finally { finallies++; } }
    [MethodImpl(MethodImplOptions.NoInlining)]
    public static void Level3(int n) { try { Level4(n); } finally { finallies++; } }
    [MethodImpl(MethodImplOptions.NoInlining)]
    public static void Level2(int n) { try { Level3(n); } finally { finallies++; } }
    [MethodImpl(MethodImplOptions.NoInlining)]
    public static void Level1(int n) { try { Level2(n); } finally { finallies++; } }

    [MethodImpl(MethodImplOptions.NoInlining)]
    public static int AfterCatch(int n) => n + 1;

    [MethodImpl(MethodImplOptions.NoInlining)]
    public static int Catcher(int n)
    {
        try { Level1(n); }
        catch (InvalidOperationException) { }
        return AfterCatch(n);
    }

    private static void Exceptions()
    {
        int s = 0;
        for (int i = 0; i < 10; i++)
            s += Catcher(i);
        Console.WriteLine($"Catcher calls 10 finallies {finallies} sum {s}");
    }

    // ---- async: AsyncStep 20 calls, each resumes once after Task.Yield ----

    [MethodImpl(MethodImplOptions.NoInlining)]
    public static async Task<int> AsyncStep(int n)
    {
        await Task.Yield();
        return n * 2;
    }

    private static void Async()
    {
        int s = 0;
        for (int i = 0; i < 20; i++)
            s += AsyncStep(i).GetAwaiter().GetResult();
        Console.WriteLine($"AsyncStep calls 20 sum {s}");
    }

    // ---- args: every primitive, strings, enums, structs, objects, by-ref, arrays ----

    [MethodImpl(MethodImplOptions.NoInlining)]
    public static int Ints(sbyte a, byte b, short c, ushort d, int e, uint f, long g, ulong h) => e + 1;
    [MethodImpl(MethodImplOptions.NoInlining)]
    public static double Floats(float a, double b, bool c, char d, nint e, nuint f) => b * 2;
    [MethodImpl(MethodImplOptions.NoInlining)]
    public static string Strings(string a, string? b, string c) => a + c;
    [MethodImpl(MethodImplOptions.NoInlining)]
    public static Color Enums(Color a, Color b) => Color.Blue;
    [MethodImpl(MethodImplOptions.NoInlining)]
    public static Two Structs(One a, Two b, Three c, Mixed d, Sixteen e, Big f) => new Two { A = b.A + 1, B = b.B + 1 };
    [MethodImpl(MethodImplOptions.NoInlining)]
    public static Mixed MixedReturn(int i, double d) => new Mixed { I = i, D = d };
    [MethodImpl(MethodImplOptions.NoInlining)]
    public static Big BigReturn(long a) => new Big { A = a, B = a + 1, C = a + 2, D = a + 3 };
    [MethodImpl(MethodImplOptions.NoInlining)]
    public static int Objects(Payload p, object? none, int[] array, ref int r) { r++; return array.Length; }

    public sealed class Counter
    {
        public int Total;
        [MethodImpl(MethodImplOptions.NoInlining)]
        public long Add(int n) { Total += n; return Total; }
    }

    private static void Args()
    {
        Console.WriteLine(Ints(-8, 200, -1234, 54321, -123456789, 3000000000, -9000000000000, 18000000000000000000));
        Console.WriteLine(Floats(1.5f, -2.25, true, 'é', -5, 6));
        Console.WriteLine(Strings("héllo wörld ✓", null, ""));
        Console.WriteLine(Enums(Color.Green, Color.Red | Color.Blue));
        var two = Structs(new One { A = 1 }, new Two { A = 2, B = 3 }, new Three { A = 4, B = 5, C = 6 },
            new Mixed { I = 7, D = 8.5 }, new Sixteen { L = 9, D = 10.25 }, new Big { A = 11, B = 12, C = 13, D = 14 });
        Console.WriteLine(two.A + two.B);
        Console.WriteLine(MixedReturn(3, 4.5).D);
        Console.WriteLine(BigReturn(20).D);
        int r = 41;
        Console.WriteLine(Objects(new Payload(), null, new[] { 1, 2, 3 }, ref r));
        Console.WriteLine(new Counter().Add(5));
        Console.WriteLine(GenericIdentity(77));
    }

    // ---- bench: `calls bench N` calls Fib to about N calls, and a mixed workload ----

    [MethodImpl(MethodImplOptions.NoInlining)]
    public static int Leaf(int x) => x ^ (x >> 3);

    [MethodImpl(MethodImplOptions.NoInlining)]
    public static int MixedWork(int n)
    {
        // Work with few calls: a loop over a string builder and a dictionary,
        // calling a small hooked helper every 16 iterations.
        var d = new System.Collections.Generic.Dictionary<int, int>();
        int s = 0;
        for (int i = 0; i < n; i++)
        {
            d[i & 1023] = i;
            d.TryGetValue((i * 7) & 1023, out int v);
            s += v;
            if ((i & 15) == 0)
                s += Leaf(i);
        }
        return s;
    }

    private static int Bench(string[] args)
    {
        string what = args.Length > 1 ? args[1] : "fib";
        var sw = System.Diagnostics.Stopwatch.StartNew();
        long result = what == "mixed" ? MixedWork(20_000_000) : Fib(32);
        sw.Stop();
        Console.WriteLine($"{what} {result} {sw.Elapsed.TotalMilliseconds:F1} ms");
        return 0;
    }

    // ---- shares: call times held up against the truth (issue 11) ----
    // loop: Loop calls Chain 5M times, Chain is 40 dependent multiply-adds, the
    // loop's own work is small. driver: a CPU-bound loop with dependent
    // arithmetic of its own that calls Small (2 multiply-adds), Mid (10) and
    // Top (60) 3M times each. `calls shares run` runs both once; `calls shares
    // truth` measures without a profiler what the shares are: each program
    // with the callees' work taken out (an empty method called instead), the
    // minimum of 5 interleaved runs, printed as "truth NAME NS-PER-ITERATION".

    public const int LoopCalls = 5_000_000, DriverIterations = 3_000_000;

    [MethodImpl(MethodImplOptions.NoInlining)]
    public static long Empty(long x) => x;

    [MethodImpl(MethodImplOptions.NoInlining)]
    public static long Chain(long x)
    {
        for (int i = 0; i < 40; i++)
            x = x * 2862933555777941757L + i;
        return x;
    }

    [MethodImpl(MethodImplOptions.NoInlining)]
    public static long Small(long x)
    {
        for (int i = 0; i < 2; i++)
            x = x * 3935559000370003845L + i;
        return x;
    }

    [MethodImpl(MethodImplOptions.NoInlining)]
    public static long Mid(long x)
    {
        for (int i = 0; i < 10; i++)
            x = x * 3202034522624059733L + i;
        return x;
    }

    [MethodImpl(MethodImplOptions.NoInlining)]
    public static long Top(long x)
    {
        for (int i = 0; i < 60; i++)
            x = x * 6364136223846793005L + i;
        return x;
    }

    // variant 0: Chain; 1: Empty instead
    [MethodImpl(MethodImplOptions.NoInlining)]
    public static long Loop(int n, int variant)
    {
        long s = 1;
        for (int i = 0; i < n; i++)
            s = variant == 0 ? Chain(s) : Empty(s);
        return s;
    }

    // variant 0: every callee; 1: Empty instead of Top; 2: Empty instead of each
    [MethodImpl(MethodImplOptions.NoInlining)]
    public static long Driver(int n, int variant)
    {
        long s = 1;
        for (int i = 0; i < n; i++)
        {
            for (int k = 0; k < 20; k++)
                s = s * 1442695040888963407L + k;
            s = variant == 2 ? Empty(s) : Small(s);
            s = variant == 2 ? Empty(s) : Mid(s);
            s = variant >= 1 ? Empty(s) : Top(s);
        }
        return s;
    }

    private static int Shares(string[] args)
    {
        string what = args.Length > 1 ? args[1] : "run";
        if (what == "run")
        {
            long c0 = ThreadClock.CpuNs();
            long a = Loop(LoopCalls, 0);
            long c1 = ThreadClock.CpuNs();
            long b = Driver(DriverIterations, 0);
            long c2 = ThreadClock.CpuNs();
            Console.WriteLine($"shares loop {a} cpu {(c1 - c0) / 1e6:F1} ms driver {b} cpu {(c2 - c1) / 1e6:F1} ms");
            return 0;
        }
        const int n = 1_000_000;
        var best = new double[5]; // CPU time of this thread: waiting for a CPU is no one's
        Array.Fill(best, double.MaxValue);
        for (int v = 0; v < 5; v++) // warm up
            _ = v < 2 ? Loop(1000, v) : Driver(1000, v - 2);
        for (int rep = 0; rep < 5; rep++)
        {
            for (int v = 0; v < 5; v++)
            {
                long start = ThreadClock.CpuNs();
                _ = v < 2 ? Loop(n, v) : Driver(n, v - 2);
                best[v] = Math.Min(best[v], (double)(ThreadClock.CpuNs() - start) / n);
            }
        }
        string[] names = { "loop", "loop-empty", "driver", "driver-no-top", "driver-no-calls" };
        for (int v = 0; v < 5; v++)
            Console.WriteLine($"truth {names[v]} {best[v]:F2}");
        return 0;
    }

    // ---- osr: one call of a method with a hot loop: with tiered compilation
    // (the default) the runtime moves it to optimized code in the middle of the
    // loop (on-stack replacement). OsrLeaf is called 20,000 times at the end (enough that one interrupted
    // call, tens of us on a virtual machine, cannot lift its time per call). ----

    [MethodImpl(MethodImplOptions.NoInlining)]
    public static long OsrLeaf(long x) => x * 3 + 1;

    [MethodImpl(MethodImplOptions.NoInlining)]
    public static long OsrHot(int n)
    {
        long s = 1;
        for (int i = 0; i < n; i++)
        {
            for (int k = 0; k < 8; k++)
                s = s * 6364136223846793005L + k;
        }
        for (int i = 0; i < 20_000; i++)
            s = OsrLeaf(s);
        return s;
    }

    private static void Osr()
    {
        long start = ThreadClock.CpuNs();
        long s = OsrHot(30_000_000);
        Console.WriteLine($"OsrHot calls 1 OsrLeaf calls 20000 value {s} cpu {(ThreadClock.CpuNs() - start) / 1e6:F1} ms");
    }

    // ---- exact: small methods the JIT would inline, in hot loops (issue 24):
    // with tiered compilation (the default) the loop moves to optimized code
    // (OSR, then tier 1 of Exact), which inlined Point's constructor and Twice
    // until the agent refused it. Not NoInlining, on purpose: hooked methods
    // must be counted however the JIT would compile them.
    // `calls exact` makes 20 x 1000 Points, calls Twice 50 x 1000 times and
    // Stack<int>.Push 30 x 1000 times. ----

    public const int ExactPoints = 20_000, ExactTwice = 50_000, ExactPushes = 30_000;

    public sealed class Point
    {
        public int X, Y;
        public Point(int x, int y) { X = x; Y = y; }
    }

    public static int Twice(int x) => x * 2;

    private static void Exact(string[] args)
    {
        var sw = System.Diagnostics.Stopwatch.StartNew();
        long sum = 0;
        for (int outer = 0; outer < ExactPoints / 1000; outer++)
        {
            for (int i = 0; i < 1000; i++)
            {
                var p = new Point(i, outer);
                sum += p.X + p.Y;
            }
        }
        for (int outer = 0; outer < ExactTwice / 1000; outer++)
            for (int i = 0; i < 1000; i++)
                sum += Twice(i);
        // framework code, precompiled (ReadyToRun) and small: hooked only
        // when --include names it
        var stack = new Stack<int>();
        for (int outer = 0; outer < ExactPushes / 1000; outer++)
        {
            for (int i = 0; i < 1000; i++)
                stack.Push(i);
            sum += stack.Count;
            stack.Clear();
        }
        Console.WriteLine($"exact {sum} {sw.Elapsed.TotalMilliseconds:F1} ms");
    }

    // ---- alloc: an allocating workload of many small calls, as a web
    // endpoint's (bench_calls "alloc", issue 11's throughput) ----

    public sealed class Item { public int Id; public string Name = ""; public double Price; }

    public static Item MakeItem(int i) => new Item { Id = i, Name = "item" + i.ToString(), Price = i * 0.5 };

    public static List<Item> Page(int start, int n)
    {
        var list = new List<Item>(n);
        for (int i = 0; i < n; i++)
            list.Add(MakeItem(start + i));
        return list;
    }

    public static int Render(List<Item> items)
    {
        var sb = new System.Text.StringBuilder();
        foreach (var it in items)
            sb.Append(it.Name).Append(':').Append(it.Price).Append(';');
        return sb.ToString().Length;
    }

    private static int Alloc()
    {
        long total = 0;
        for (int i = 0; i < 2000; i++) // warm up: tiered compilation
            total += Render(Page(i, 20));
        var sw = System.Diagnostics.Stopwatch.StartNew();
        for (int i = 0; i < 100_000; i++)
            total += Render(Page(i, 20));
        Console.WriteLine($"alloc {total} {sw.Elapsed.TotalMilliseconds:F1} ms");
        return 0;
    }

    // jit [N]: N expression trees of 300 terms each compiled and called once on
    // the main thread (JitMany): the JIT's work, which --calls must not charge to
    // JitMany. Prints "jit thread_ms=X", the main thread's time in the JIT since
    // start by the runtime's own count (System.Runtime.JitInfo: elapsed time),
    // and "cpu_share=R", the thread's CPU time over JitMany's elapsed time (1 on
    // a quiet machine; less where the thread waited for a CPU).
    private static int Jit(int n)
    {
        var wall = System.Diagnostics.Stopwatch.StartNew();
        long cpu0 = ThreadClock.CpuNs();
        long sum = JitMany(n);
        double share = (ThreadClock.CpuNs() - cpu0) / 1e6 / wall.Elapsed.TotalMilliseconds;
        double ms = System.Runtime.JitInfo.GetCompilationTime(currentThread: true).TotalMilliseconds;
        Console.WriteLine($"jit thread_ms={ms:F1} sum={sum} cpu_share={share:F3}");
        return 0;
    }

    [MethodImpl(MethodImplOptions.NoInlining)]
    private static long JitMany(int n)
    {
        long sum = 0;
        for (int k = 0; k < n; k++)
        {
            var x = System.Linq.Expressions.Expression.Parameter(typeof(long), "x");
            System.Linq.Expressions.Expression body = x;
            for (int i = 0; i < 300; i++)
                body = System.Linq.Expressions.Expression.Add(
                    System.Linq.Expressions.Expression.Multiply(body, System.Linq.Expressions.Expression.Constant((long)(i % 7 + 1))),
                    System.Linq.Expressions.Expression.Constant((long)(k + i)));
            sum += System.Linq.Expressions.Expression.Lambda<Func<long, long>>(body, x).Compile()(k);
        }
        return sum;
    }
}
