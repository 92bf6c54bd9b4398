// SampleGcPause.cs: `sample gcpause SECONDS`, for wall-clock sampling's
// [GC pause] (tests/e2e/test_sample_wall.c). A thread computes in PauseVictim,
// never allocating, while the main thread (PauseCollector) keeps 300,000 small
// objects alive and forces a blocking full collection every 15 ms: the victim
// is stopped by every pause. Prints "gcpause pause_ms=P wall_ms=W gcs=N": the
// pauses' total (GC.GetTotalPauseDuration) and the wall time while the victim
// ran (the truth: P of the victim's W ms it was held). A third thread
// (PauseWaiter) waits on two events in turn, in WaitA and WaitB, and the
// collector sets the one it waits on just before each collection, then waits
// until the waiter says it goes back to wait (and half a millisecond more):
// as the collection holds the others, the waiter is in its own wait, in
// another place than a moment before, a wait the collection does not touch.
// A fourth (PipeWaiter) reads from two pipes in turn (libc's read, in
// ReadA and ReadB), kicked the same way before each collection and once more
// right after it: it waits in native code through the collection, and has
// moved by its next sample.
using System;
using System.Diagnostics;
using System.Runtime.CompilerServices;
using System.Runtime.InteropServices;
using System.Threading;

namespace Scenarios;

public static partial class SampleScenario
{
    private sealed class Node { public Node? Next; public long Value; }

    private static volatile bool pauseStop;
    private static readonly AutoResetEvent kickA = new(false), kickB = new(false);
    private static int waits; // the waits the waiter has gone back to

    [MethodImpl(MethodImplOptions.NoInlining)]
    private static void WaitA()
    {
        Interlocked.Increment(ref waits);
        kickA.WaitOne();
    }

    [MethodImpl(MethodImplOptions.NoInlining)]
    private static void WaitB()
    {
        Interlocked.Increment(ref waits);
        kickB.WaitOne();
    }

    private static readonly int[] pipeA = new int[2], pipeB = new int[2];
    private static int pipeWaits, pipeKicks;

    [DllImport("libc")]
    private static extern int pipe(int[] fds);

    [DllImport("libc")]
    private static extern nint read(int fd, byte[] buf, nint count);

    [DllImport("libc")]
    private static extern nint write(int fd, byte[] buf, nint count);

    [MethodImpl(MethodImplOptions.NoInlining)]
    private static void ReadA()
    {
        Interlocked.Increment(ref pipeWaits);
        read(pipeA[0], new byte[1], 1);
    }

    [MethodImpl(MethodImplOptions.NoInlining)]
    private static void ReadB()
    {
        Interlocked.Increment(ref pipeWaits);
        read(pipeB[0], new byte[1], 1);
    }

    [MethodImpl(MethodImplOptions.NoInlining)]
    private static void PipeWaiter()
    {
        while (!pauseStop)
        {
            ReadA();
            ReadB();
        }
    }

    private static void KickPipe() => write((pipeKicks++ % 2 == 0 ? pipeA : pipeB)[1], new byte[1], 1);

    [MethodImpl(MethodImplOptions.NoInlining)]
    private static void PauseWaiter()
    {
        while (!pauseStop)
        {
            WaitA();
            WaitB();
        }
    }

    [MethodImpl(MethodImplOptions.NoInlining)]
    private static void PauseVictim()
    {
        long s = 0;
        while (!pauseStop)
            for (int i = 0; i < 20000; i++)
                s += i * 7 ^ (s >> 3);
        Interlocked.Add(ref sink, s);
    }

    [MethodImpl(MethodImplOptions.NoInlining)]
    private static int PauseCollector(double seconds)
    {
        Node? keep = null;
        for (int i = 0; i < 300_000; i++)
            keep = new Node { Next = keep, Value = i };
        int gcs = 0;
        var wall = Stopwatch.StartNew();
        while (wall.Elapsed.TotalSeconds < seconds)
        {
            int before = Volatile.Read(ref waits), pipeBefore = Volatile.Read(ref pipeWaits);
            (gcs % 2 == 0 ? kickA : kickB).Set();
            KickPipe();
            var back = Stopwatch.StartNew();
            while ((Volatile.Read(ref waits) == before || Volatile.Read(ref pipeWaits) == pipeBefore) &&
                   back.ElapsedMilliseconds < 100)
                Thread.SpinWait(20);
            while (back.Elapsed.TotalMilliseconds < 0.5)
                Thread.SpinWait(20);
            GC.Collect(2, GCCollectionMode.Forced, blocking: true);
            KickPipe(); /* it moves on before its next sample */
            gcs++;
            Thread.Sleep(15);
        }
        GC.KeepAlive(keep);
        return gcs;
    }

    private static int GcPause(double seconds)
    {
        var victim = new Thread(PauseVictim) { Name = "PauseVictim" };
        var waiter = new Thread(PauseWaiter) { Name = "PauseWaiter" };
        var piper = new Thread(PipeWaiter) { Name = "PipeWaiter" };
        if (pipe(pipeA) != 0 || pipe(pipeB) != 0)
            throw new InvalidOperationException("no pipe");
        waiter.Start();
        piper.Start();
        GC.Collect();
        TimeSpan before = GC.GetTotalPauseDuration();
        var wall = Stopwatch.StartNew();
        victim.Start();
        int gcs = PauseCollector(seconds);
        pauseStop = true;
        victim.Join();
        kickA.Set();
        kickB.Set();
        waiter.Join();
        KickPipe();
        KickPipe();
        piper.Join();
        double wallMs = wall.Elapsed.TotalMilliseconds;
        double pauseMs = (GC.GetTotalPauseDuration() - before).TotalMilliseconds;
        Console.WriteLine(System.FormattableString.Invariant($"gcpause pause_ms={pauseMs:F1} wall_ms={wallMs:F1} gcs={gcs}"));
        return 0;
    }
}
