// StoriesScenario: exceptions whose stories the tests know, for `dnprof run
// --exceptions` (issue 4). `dotnet Scenarios.dll stories CASE`:
//   all        one thread: every kind of throw, catch, filter, finally, nesting,
//              async, and exceptions the framework throws and catches itself;
//              prints one line "case NAME: ..." per case
//   threads [T] [N]  T threads (8) each throwing and catching N (10000)
//              exceptions; prints "thread K: N thrown, N caught"
//   unhandled  an exception no one catches, on a thread of its own: the
//              process dies
//   bench [N]  N (100000) throw/catch through 10 frames; prints "ns per
//              exception: X"
//   replaced   issue 11: an exception no catch matches, replaced by one its
//              finally throws, which is caught; then unrelated exceptions
//   dispatch   issue 11: a task's exception caught by the thread pool, thrown
//              again by the await (ExceptionDispatchInfo.Throw) after that
//              catch has ended
//   deep [N]   issue 11: a recursion N (5000) calls deep, for `print` of a
//              --timeline trace; prints "deep: N"
//   gcrethrow [N]  issue 11: N times `throw;` after a GC has moved the
//              exception object; prints "gcrethrow: N rethrown, N caught"
//   edi        ExceptionDispatchInfo.Throw(e) in a catch, as the framework
//              rethrows keeping the trace; then a Parallel.For whose body
//              throws (its workers rethrow so); prints "case edi: ..." twice
//   awaitrethrow [N]  N times an async method's catch does `throw;` (as
//              HttpClient.GetStringAsync does), the method's own catch hands it
//              to the awaiting caller, whose continuation runs inline inside
//              that catch and catches it; prints "awaitrethrow: N caught"
using System;
using System.Collections.Generic;
using System.ComponentModel;
using System.Diagnostics;
using System.Runtime.CompilerServices;
using System.Threading;
using System.Threading.Tasks;

namespace Scenarios;

public class StoryException : Exception
{
    public const int StoryHResult = unchecked((int)0x80041234);

    public StoryException(string message) : base(message) => HResult = StoryHResult;
}

public sealed class AcrossException : StoryException
{
    public AcrossException(string message) : base(message) { }
}

public sealed class FilterVictimException : StoryException
{
    public FilterVictimException(string message) : base(message) { }
}

public sealed class RethrowException : StoryException
{
    public RethrowException(string message) : base(message) { }
}

public sealed class AsyncStoryException : StoryException
{
    public AsyncStoryException(string message) : base(message) { }
}

public sealed class WorkerException : StoryException
{
    public WorkerException(string message) : base(message) { }
}

public sealed class UnhandledStoryException : StoryException
{
    public UnhandledStoryException(string message) : base(message) { }
}

public sealed class LostException : StoryException
{
    public LostException(string message) : base(message) { }
}

public sealed class ReplacementException : StoryException
{
    public ReplacementException(string message) : base(message) { }
}

public sealed class DispatchedException : StoryException
{
    public DispatchedException(string message) : base(message) { }
}

public sealed class MovedException : StoryException
{
    public MovedException(string message) : base(message) { }
}

public sealed class BenchException : Exception
{
    public BenchException() : base("bench") { }
}

public static class StoriesScenario
{
    public static int Run(string[] args)
    {
        string what = args.Length > 0 ? args[0] : "all";
        switch (what)
        {
            case "all": return All();
            case "threads": return Threads(Arg(args, 1, 8), Arg(args, 2, 10000));
            case "unhandled": return Unhandled();
            case "bench": return Bench(Arg(args, 1, 100000));
            case "replaced": return Replaced();
            case "dispatch": return Dispatch();
            case "edi": return Edi();
            case "gcrethrow": return GcRethrow(Arg(args, 1, 2000));
            case "deep": return Deep(Arg(args, 1, 5000));
            case "awaitrethrow": return AwaitRethrow(Arg(args, 1, 20));
            default:
                Console.Error.WriteLine($"usage: Scenarios stories [all|threads [T] [N]|unhandled|bench [N]], not '{what}'");
                return 2;
        }
    }

    private static int Arg(string[] args, int i, int def) =>
        args.Length > i && int.TryParse(args[i], out int v) ? v : def;

    private static void Say(string line)
    {
        Console.WriteLine(line);
        Console.Out.Flush();
    }

    private static int All()
    {
        Across();
        Filters();
        FilterThrows();
        FinallyThrows();
        CatchThrows();
        CatchEscapes();
        CatchInner();
        Rethrow();
        ThrowEx();
        AsyncAwait();
        AsyncAggregate();
        FrameworkInternal();
        return 0;
    }

    // ---- throw/catch across frames, through two finally blocks ----

    private static void Across()
    {
        try
        {
            AcrossA();
        }
        catch (AcrossException e)
        {
            Say($"case across: caught {e.GetType().FullName}: {e.Message}");
        }
    }

    [MethodImpl(MethodImplOptions.NoInlining)]
    private static void AcrossA()
    {
        try
        {
            AcrossB();
        }
        finally
        {
            Say("case across: finally in AcrossA");
        }
    }

    [MethodImpl(MethodImplOptions.NoInlining)]
    private static void AcrossB()
    {
        try
        {
            AcrossC();
        }
        finally
        {
            Say("case across: finally in AcrossB");
        }
    }

    [MethodImpl(MethodImplOptions.NoInlining)]
    private static void AcrossC() => throw new AcrossException("thrown in AcrossC");

    // ---- when filters: one false, one true ----

    [MethodImpl(MethodImplOptions.NoInlining)]
    private static bool Verdict(bool v) => v;

    private static void Filters()
    {
        try
        {
            FiltersInner();
        }
        catch (ArgumentException e) when (Verdict(true))
        {
            Say($"case filters: caught {e.GetType().FullName}: {e.Message} (one filter false, one true)");
        }
    }

    [MethodImpl(MethodImplOptions.NoInlining)]
    private static void FiltersInner()
    {
        try
        {
            throw new ArgumentException("filtered");
        }
        catch (ArgumentException) when (Verdict(false))
        {
            Say("case filters: wrong catch");
        }
    }

    // ---- an exception thrown inside a filter: the filter counts as false ----

    [MethodImpl(MethodImplOptions.NoInlining)]
    private static bool ThrowingFilter() => throw new NotSupportedException("thrown in a filter");

    private static void FilterThrows()
    {
        try
        {
            try
            {
                throw new FilterVictimException("victim of a throwing filter");
            }
            catch (FilterVictimException) when (ThrowingFilter())
            {
                Say("case filter-throws: wrong catch");
            }
        }
        catch (FilterVictimException e)
        {
            Say($"case filter-throws: caught {e.GetType().FullName}: {e.Message}");
        }
    }

    // ---- an exception thrown inside a finally replaces the one unwinding ----

    private static void FinallyThrows()
    {
        try
        {
            FinallyThrowsInner();
        }
        catch (TimeoutException e)
        {
            Say($"case finally-throws: caught {e.GetType().FullName}: {e.Message}");
        }
    }

    [MethodImpl(MethodImplOptions.NoInlining)]
    private static void FinallyThrowsInner()
    {
        try
        {
            throw new ApplicationException("abandoned in a finally");
        }
        finally
        {
            throw new TimeoutException("thrown in a finally");
        }
    }

    // ---- an exception thrown inside a catch ----

    private static void CatchThrows()
    {
        try
        {
            try
            {
                throw new KeyNotFoundException("abandoned in a catch");
            }
            catch (KeyNotFoundException e)
            {
                throw new NotImplementedException("thrown in a catch", e);
            }
        }
        catch (NotImplementedException e)
        {
            Say($"case catch-throws: caught {e.GetType().FullName}: {e.Message}");
        }
    }

    // ---- an exception thrown inside a catch, caught by the caller ----

    private static void CatchEscapes()
    {
        try
        {
            CatchEscapesInner();
        }
        catch (InvalidCastException e)
        {
            Say($"case catch-escapes: caught {e.GetType().FullName}: {e.Message}");
        }
    }

    [MethodImpl(MethodImplOptions.NoInlining)]
    private static void CatchEscapesInner()
    {
        try
        {
            throw new DivideByZeroException("abandoned in a catch, in a callee");
        }
        catch (DivideByZeroException)
        {
            throw new InvalidCastException("thrown in a catch, caught by the caller");
        }
    }

    // ---- an exception thrown and caught inside a catch: the outer catch goes on ----

    private static void CatchInner()
    {
        try
        {
            throw new OverflowException("caught, with another caught inside its catch");
        }
        catch (OverflowException e)
        {
            try
            {
                throw new RankException("thrown and caught inside a catch");
            }
            catch (RankException inner)
            {
                Say($"case catch-inner: caught {inner.GetType().FullName}: {inner.Message}");
            }
            Say($"case catch-inner: caught {e.GetType().FullName}: {e.Message}");
        }
    }

    // ---- throw; and throw ex; ----

    private static void Rethrow()
    {
        try
        {
            try
            {
                throw new RethrowException("rethrown with throw;");
            }
            catch (RethrowException)
            {
                throw;
            }
        }
        catch (RethrowException e)
        {
            Say($"case rethrow: caught {e.GetType().FullName}: {e.Message}");
        }
    }

    private static void ThrowEx()
    {
        try
        {
            try
            {
                throw new RethrowException("thrown again with throw ex;");
            }
            catch (RethrowException ex)
            {
                throw ex;
            }
        }
        catch (RethrowException e)
        {
            Say($"case throw-ex: caught {e.GetType().FullName}: {e.Message}");
        }
    }

    // ---- async methods and tasks ----

    private static async Task AsyncThrower()
    {
        await Task.Yield();
        throw new AsyncStoryException("thrown in an async method");
    }

    private static async Task AsyncCaller()
    {
        try
        {
            await AsyncThrower();
        }
        catch (AsyncStoryException e)
        {
            Say($"case async: caught {e.GetType().FullName}: {e.Message}");
        }
    }

    private static void AsyncAwait() => AsyncCaller().GetAwaiter().GetResult();

    private static void AsyncAggregate()
    {
        Task a = Task.Run(() => throw new AsyncStoryException("task one"));
        Task b = Task.Run(() => throw new AsyncStoryException("task two"));
        try
        {
            Task.WhenAll(a, b).Wait();
        }
        catch (AggregateException e)
        {
            Say($"case aggregate: caught {e.GetType().FullName} of {e.InnerExceptions.Count}");
        }
    }

    // ---- thrown and caught inside the framework: int.Parse's FormatException,
    // wrapped by the converter in an ArgumentException, both caught by IsValid ----

    private static void FrameworkInternal()
    {
        bool valid = TypeDescriptor.GetConverter(typeof(int)).IsValid("not a number");
        Say($"case internal: IsValid(\"not a number\") = {valid}");
    }

    // ---- many threads ----

    private static int Threads(int nthreads, int each)
    {
        var threads = new Thread[nthreads];
        var thrown = new int[nthreads];
        var caught = new int[nthreads];
        using var start = new ManualResetEventSlim(false);
        for (int k = 0; k < nthreads; k++)
        {
            int slot = k;
            threads[k] = new Thread(() =>
            {
                start.Wait();
                var ex = $"worker {slot + 1}";
                for (int i = 0; i < each; i++)
                {
                    try
                    {
                        thrown[slot]++;
                        WorkerThrow(ex);
                    }
                    catch (WorkerException e) when (e.Message.Length > 0)
                    {
                        caught[slot]++;
                    }
                }
            }) { Name = $"stories-worker-{k + 1}" };
            threads[k].Start();
        }
        start.Set();
        foreach (Thread t in threads)
            t.Join();
        for (int k = 0; k < nthreads; k++)
            Say($"thread {k + 1}: {thrown[k]} thrown, {caught[k]} caught");
        return 0;
    }

    [MethodImpl(MethodImplOptions.NoInlining)]
    private static void WorkerThrow(string message) => throw new WorkerException(message);

    // ---- unhandled: the process dies ----

    private static int Unhandled()
    {
        Say("case unhandled: throwing on thread stories-doomed");
        var t = new Thread(UnhandledA) { Name = "stories-doomed" };
        t.Start();
        t.Join();
        Say("case unhandled: still alive?");
        return 0;
    }

    [MethodImpl(MethodImplOptions.NoInlining)]
    private static void UnhandledA()
    {
        try
        {
            UnhandledB();
        }
        finally
        {
            Say("case unhandled: finally in UnhandledA");
        }
    }

    [MethodImpl(MethodImplOptions.NoInlining)]
    private static void UnhandledB() => throw new UnhandledStoryException("no one catches this");

    // ---- the benchmark: a throw caught 10 frames up ----

    private static int Bench(int n)
    {
        int caught = 0;
        for (int i = 0; i < 1000; i++)
            caught += BenchOnce();
        var sw = Stopwatch.StartNew();
        for (int i = 0; i < n; i++)
            caught += BenchOnce();
        sw.Stop();
        Say($"exceptions: {n}, caught: {caught - 1000}");
        Say($"ns per exception: {sw.Elapsed.TotalMilliseconds * 1e6 / n:F0}");
        return 0;
    }

    [MethodImpl(MethodImplOptions.NoInlining)]
    private static int BenchOnce()
    {
        try
        {
            F1(0);
        }
        catch (BenchException)
        {
            return 1;
        }
        return 0;
    }

    [MethodImpl(MethodImplOptions.NoInlining)] private static int F1(int d) => F2(d + 1) + 1;
    [MethodImpl(MethodImplOptions.NoInlining)] private static int F2(int d) => F3(d + 1) + 1;
    [MethodImpl(MethodImplOptions.NoInlining)] private static int F3(int d) => F4(d + 1) + 1;
    [MethodImpl(MethodImplOptions.NoInlining)] private static int F4(int d) => F5(d + 1) + 1;
    [MethodImpl(MethodImplOptions.NoInlining)] private static int F5(int d) => F6(d + 1) + 1;
    [MethodImpl(MethodImplOptions.NoInlining)] private static int F6(int d) => F7(d + 1) + 1;
    [MethodImpl(MethodImplOptions.NoInlining)] private static int F7(int d) => F8(d + 1) + 1;
    [MethodImpl(MethodImplOptions.NoInlining)] private static int F8(int d) => F9(d + 1) + 1;
    [MethodImpl(MethodImplOptions.NoInlining)] private static int F9(int d) => F10(d + 1) + 1;
    [MethodImpl(MethodImplOptions.NoInlining)] private static int F10(int d) => throw new BenchException();

    // ---- issue 11: a finally that replaces an exception no catch matches ----

    private static int Replaced()
    {
        try
        {
            try
            {
                throw new LostException("lost");
            }
            finally
            {
                throw new ReplacementException("replacement");
            }
        }
        catch (ReplacementException e)
        {
            Say($"case replaced: caught {e.GetType().FullName}: {e.Message}");
        }
        // Unrelated exceptions afterwards on the same thread.
        try
        {
            int.Parse("not a number");
        }
        catch (FormatException)
        {
            Say("case replaced: then caught System.FormatException");
        }
        try
        {
            throw new AggregateException("after", new InvalidOperationException("inner"));
        }
        catch (AggregateException)
        {
            Say("case replaced: then caught System.AggregateException");
        }
        return 0;
    }

    // ---- issue 11: the thread pool's catch, then ExceptionDispatchInfo.Throw ----

    [MethodImpl(MethodImplOptions.NoInlining)]
    private static void DispatchThrow() => throw new DispatchedException("from a task");

    private static int Dispatch()
    {
        Task t = Task.Run(DispatchThrow);
        // Let the task end (its catch in the thread pool is over) before awaiting.
        ((IAsyncResult)t).AsyncWaitHandle.WaitOne();
        try
        {
            t.GetAwaiter().GetResult();
        }
        catch (DispatchedException e)
        {
            Say($"case dispatch: caught {e.GetType().FullName}: {e.Message}");
        }
        return 0;
    }

    // ---- ExceptionDispatchInfo.Throw(e) from the exception's own catch ----

    [MethodImpl(MethodImplOptions.NoInlining)]
    private static void EdiThrow(string message) => throw new StoryException(message);

    [MethodImpl(MethodImplOptions.NoInlining)]
    private static void EdiRethrow()
    {
        try
        {
            EdiThrow("edi");
        }
        catch (StoryException e)
        {
            System.Runtime.ExceptionServices.ExceptionDispatchInfo.Throw(e);
        }
    }

    private static int Edi()
    {
        try
        {
            EdiRethrow();
        }
        catch (StoryException e)
        {
            Say($"case edi: caught {e.Message}");
        }
        try
        {
            Parallel.For(0, 4, new ParallelOptions { MaxDegreeOfParallelism = 1 }, i =>
            {
                if (i == 2)
                    EdiThrow("parallel");
            });
        }
        catch (AggregateException e)
        {
            Say($"case edi: Parallel.For threw {e.InnerExceptions.Count} ({e.InnerExceptions[0].Message})");
        }
        return 0;
    }

    // ---- `throw;` in an async method's catch, awaited by a caller run inline ----

    [MethodImpl(MethodImplOptions.NoInlining)]
    private static void AwaitThrow(int i) => throw new StoryException($"await {i}");

    private static async Task RethrowingAsync(int i)
    {
        await Task.Yield(); // the rest runs on the pool: the caller's continuation waits for it
        try
        {
            AwaitThrow(i);
        }
        catch (StoryException)
        {
            throw;
        }
    }

    private static async Task<bool> AwaitingAsync(int i)
    {
        try
        {
            await RethrowingAsync(i);
            return false;
        }
        catch (StoryException)
        {
            return true;
        }
    }

    private static int AwaitRethrow(int n)
    {
        int caught = 0;
        for (int i = 0; i < n; i++)
            caught += AwaitingAsync(i).GetAwaiter().GetResult() ? 1 : 0;
        Say($"awaitrethrow: {caught} caught");
        return 0;
    }

    // ---- issue 11: `throw;` after a GC moved the exception object ----

    [MethodImpl(MethodImplOptions.NoInlining)]
    private static void MovedThrow(int i) => throw new MovedException($"moved {i}");

    private static int GcRethrow(int n)
    {
        int rethrown = 0, caught = 0;
        var keep = new List<object>();
        for (int i = 0; i < n; i++)
        {
            try
            {
                try
                {
                    MovedThrow(i);
                }
                catch (MovedException)
                {
                    // Garbage before the object, so that a compacting GC moves it.
                    for (int k = 0; k < 64; k++)
                        keep.Add(new byte[32]);
                    keep.Clear();
                    GC.Collect(0, GCCollectionMode.Forced, true, true);
                    rethrown++;
                    throw;
                }
            }
            catch (MovedException)
            {
                caught++;
            }
        }
        Say($"gcrethrow: {rethrown} rethrown, {caught} caught");
        return 0;
    }

    // ---- issue 11: print's indentation of a deep recursion ----

    [MethodImpl(MethodImplOptions.NoInlining)]
    private static int DeepRecurse(int n) => n == 0 ? 0 : 1 + DeepRecurse(n - 1);

    private static int Deep(int n)
    {
        var t = new Thread(() => Say($"deep: {DeepRecurse(n)}"), 64 * 1024 * 1024);
        t.Start();
        t.Join();
        return 0;
    }
}
