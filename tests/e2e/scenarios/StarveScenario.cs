// StarveScenario: a starved thread pool, for dnprof run/attach --threadpool.
// `dotnet Scenarios.dll starve [TASKS] [MS]` queues TASKS work items (default
// 12) that each block their pool thread in Thread.Sleep(MS) (default 2000) and
// then in .Result on a task that a thread of its own completes after MS, with the pool's
// minimum left as it is (the processor count), so the pool is starved and the
// runtime injects threads. It prints the pool's thread count before and at
// its largest ("threads start=A max=B", then its minimum "min=M"), which bound the injections. With
// "TASKS MS wait FILE" it first prints "ready pid=PID" and waits up to 60 s for
// FILE (an attach test attaches meanwhile). With "TASKS MS tasks" each item
// blocks in Task.Delay(MS).Wait() instead, sync over async: the runtime then
// raises the pool's count for each blocked thread (cooperative blocking).
// With "TASKS MS sleep" each item only sleeps MS: short sleeps, many items, a
// saturated pool whose queue waits while work items still complete (which the
// runtime does not count as starvation).
using System;
using System.Diagnostics;
using System.Threading;
using System.Threading.Tasks;

namespace Scenarios;

public static class StarveScenario
{
    public static int Run(string[] args)
    {
        int tasks = args.Length > 0 && int.TryParse(args[0], out int t) ? t : 12;
        int ms = args.Length > 1 && int.TryParse(args[1], out int m) ? m : 2000;
        if (args.Length > 3 && args[2] == "wait")
        {
            Console.WriteLine($"ready pid={Environment.ProcessId}");
            Console.Out.Flush();
            for (int i = 0; i < 600 && !System.IO.File.Exists(args[3]); i++)
                Thread.Sleep(100);
        }
        int start = ThreadPool.ThreadCount, max = start;
        var watch = Stopwatch.StartNew();
        var gate = new TaskCompletionSource<int>();
        var work = new Task[tasks];
        bool onTasks = args.Length > 2 && args[2] == "tasks", sleep = args.Length > 2 && args[2] == "sleep";
        for (int i = 0; i < tasks; i++)
            work[i] = onTasks ? Task.Run(() => WaitOnTask(ms))
                      : sleep ? Task.Run(() => Thread.Sleep(ms))
                              : Task.Run(() => Block(ms, gate.Task));
        var release = new Thread(() =>
        {
            Thread.Sleep(ms);
            gate.SetResult(1);
        });
        release.Start();
        while (!Task.WaitAll(work, 50))
            max = Math.Max(max, ThreadPool.ThreadCount);
        max = Math.Max(max, ThreadPool.ThreadCount);
        ThreadPool.GetMinThreads(out int minWorkers, out _);
        Console.WriteLine($"threads start={start} max={max} tasks={tasks} ms={watch.ElapsedMilliseconds} " +
                          $"min={minWorkers}");
        return 0;
    }

    [System.Runtime.CompilerServices.MethodImpl(System.Runtime.CompilerServices.MethodImplOptions.NoInlining)]
    private static void WaitOnTask(int ms)
    {
        Task.Delay(ms).Wait();
    }

    private static int Block(int ms, Task<int> gate)
    {
        Thread.Sleep(ms);
        return gate.Result;
    }
}
