// StarveScenario: a starved thread pool, for dnprof run/attach --threadpool.
// `dotnet Scenarios.dll starve [TASKS] [MS]` queues TASKS work items (default
// 12) that each block their pool thread in Thread.Sleep(MS) (default 2000) and
// then in .Result on a task that a thread of its own completes after MS, with the pool's
// minimum left as it is (the processor count), so the pool is starved and the
// runtime injects threads. It prints the pool's thread count before and at
// its largest ("threads start=A max=B"), which bounds the injections. With
// "TASKS MS wait FILE" it first prints "ready pid=PID" and waits up to 60 s for
// FILE (an attach test attaches meanwhile).
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
        for (int i = 0; i < tasks; i++)
            work[i] = Task.Run(() => Block(ms, gate.Task));
        var release = new Thread(() =>
        {
            Thread.Sleep(ms);
            gate.SetResult(1);
        });
        release.Start();
        while (!Task.WaitAll(work, 50))
            max = Math.Max(max, ThreadPool.ThreadCount);
        max = Math.Max(max, ThreadPool.ThreadCount);
        Console.WriteLine($"threads start={start} max={max} tasks={tasks} ms={watch.ElapsedMilliseconds}");
        return 0;
    }

    private static int Block(int ms, Task<int> gate)
    {
        Thread.Sleep(ms);
        return gate.Result;
    }
}
