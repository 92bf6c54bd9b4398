// NamesScenario: one async method that burns CPU, allocates and throws, so that
// the sample, call, allocation and exception reports each name it
// (tests/e2e/test_names_agree.c): they must all say "Scenarios.NamesOrderService::GetAsync (async)".
//   names MS    GetAsync runs its loop for MS milliseconds, then throws and catches;
//               then the iterator Items yields 3 items
using System;
using System.Diagnostics;
using System.Runtime.CompilerServices;
using System.Threading.Tasks;

namespace Scenarios;

public static class NamesScenario
{
    public static int Run(string[] args)
    {
        int ms = args.Length > 0 ? int.Parse(args[0]) : 300;
        long r = NamesOrderService.GetAsync(ms).GetAwaiter().GetResult();
        foreach (int item in NamesOrderService.Items())
            r += item;
        Console.WriteLine($"names: {r}");
        return 0;
    }
}

public static class NamesOrderService
{
    // An iterator: a state machine of the same shape as GetAsync's, whose
    // MoveNext is an iterator's step (4 calls: 3 items, then the end).
    public static System.Collections.Generic.IEnumerable<int> Items()
    {
        for (int i = 1; i <= 3; i++)
            yield return i;
    }

    private static byte[]? keep;

    // The body, in the state machine's MoveNext, does all the work itself: the
    // samples, the allocations and the throw all land in it.
    [MethodImpl(MethodImplOptions.NoInlining)]
    public static async Task<long> GetAsync(int ms)
    {
        await Task.Yield();
        long sum = 0;
        var sw = Stopwatch.StartNew();
        while (sw.ElapsedMilliseconds < ms)
        {
            var a = new byte[2000];
            keep = a;
            for (int i = 0; i < a.Length; i++)
                sum += a[i] ^ i;
        }
        try
        {
            throw new InvalidOperationException("thrown in GetAsync");
        }
        catch (InvalidOperationException)
        {
            sum++;
        }
        return sum;
    }
}
