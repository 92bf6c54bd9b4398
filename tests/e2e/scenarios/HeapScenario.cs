// HeapScenario: holds known numbers of objects of its own classes, for the heap
// snapshot tests (tests/e2e/test_heap.c) and the benchmark (bench/bench_heap.c).
//
//   dotnet Scenarios.dll heap [list=N] [chain=N] [array=N] [cwt=N] [bulk=N] [wait=FILE] [pauses=1]
//
// pauses=1 (the benchmark): times three full blocking GCs of its own and says
// the fastest ("heap gc_ms=..."), then a thread of its own prints "pause <ms>"
// whenever it was held up more than 5 ms (the runtime suspended it for a GC).
//
// Prints one line "heap counts ..." with what it holds and the retained size of
// the holder (from the x64 object layouts), then "ready PID", then waits for
// FILE to exist (when wait= is given) and exits, everything still alive.
using System;
using System.Collections.Concurrent;
using System.Collections.Generic;
using System.IO;
using System.Runtime.CompilerServices;
using System.Threading;

namespace Scenarios;

// In a static list.
public sealed class HeapListItem
{
    public int Id;
    public HeapListItem(int id) { Id = id; }
}

// A chain, each node held by the previous one only.
public sealed class HeapChainNode
{
    public HeapChainNode? Next;
    public long Value;
}

// An array reachable only through its one holder.
public sealed class HeapHolder
{
    public HeapArrayItem[] Items;
    public HeapHolder(HeapArrayItem[] items) { Items = items; }
}

public sealed class HeapArrayItem
{
    public long A, B;
}

// ConditionalWeakTable keys (held by a static list) and values, which only the
// table's dependent handles keep alive.
public sealed class HeapCwtKey
{
    public int Id;
}

public sealed class HeapCwtValue
{
    public int Id;
}

// A static class (no instances) whose static field holds a queue: heap paths
// names the field (the runtime keeps it in a pinned Object[] a handle holds).
public sealed class HeapCachedItem
{
    public int Id;
}

public static class HeapCache
{
    public static readonly ConcurrentQueue<HeapCachedItem> Items = new();
}

// Many small objects for the benchmark: an array of them.
public sealed class HeapBulkItem
{
    public HeapBulkItem? Peer;
    public int Id;
}

public static class HeapScenario
{
    private static List<HeapListItem>? s_list;
    private static HeapChainNode? s_chain;
    private static HeapHolder? s_holder;
    private static List<HeapCwtKey>? s_keys;
    private static ConditionalWeakTable<HeapCwtKey, HeapCwtValue>? s_table;
    private static HeapBulkItem[]? s_bulk;

    // The size of an instance on x64: header and method table, then the fields,
    // rounded up to 8, at least 24 bytes.
    private static long ObjectSize(long fieldBytes) => Math.Max(24, 16 + ((fieldBytes + 7) & ~7L));
    private static long RefArraySize(long n) => 24 + 8 * n;

    public static int Run(string[] args)
    {
        int list = 1000, chain = 300000, array = 5000, cwt = 100, bulk = 0, cached = 10;
        string? wait = null;
        bool pauses = false;
        foreach (var a in args)
        {
            int eq = a.IndexOf('=');
            string k = eq > 0 ? a[..eq] : a, v = eq > 0 ? a[(eq + 1)..] : "";
            switch (k)
            {
                case "list": list = int.Parse(v); break;
                case "chain": chain = int.Parse(v); break;
                case "array": array = int.Parse(v); break;
                case "cwt": cwt = int.Parse(v); break;
                case "bulk": bulk = int.Parse(v); break;
                case "wait": wait = v; break;
                case "pauses": pauses = v == "1"; break;
                default: Console.Error.WriteLine($"heap: unknown argument '{a}'"); return 2;
            }
        }
        s_list = new List<HeapListItem>(list);
        for (int i = 0; i < list; i++)
            s_list.Add(new HeapListItem(i));
        HeapChainNode? head = null;
        for (int i = 0; i < chain; i++)
            head = new HeapChainNode { Next = head, Value = i };
        s_chain = head;
        var items = new HeapArrayItem[array];
        for (int i = 0; i < array; i++)
            items[i] = new HeapArrayItem { A = i, B = -i };
        s_holder = new HeapHolder(items);
        items = null;
        s_keys = new List<HeapCwtKey>(cwt);
        s_table = new ConditionalWeakTable<HeapCwtKey, HeapCwtValue>();
        for (int i = 0; i < cwt; i++)
        {
            var key = new HeapCwtKey { Id = i };
            s_keys.Add(key);
            s_table.Add(key, new HeapCwtValue { Id = i });
        }
        for (int i = 0; i < cached; i++)
            HeapCache.Items.Enqueue(new HeapCachedItem { Id = i });
        if (bulk > 0)
        {
            s_bulk = new HeapBulkItem[bulk];
            for (int i = 0; i < bulk; i++)
                s_bulk[i] = new HeapBulkItem { Id = i, Peer = i > 0 ? s_bulk[i - 1] : null };
        }
        long holderRetained = ObjectSize(8) + RefArraySize(array) + array * ObjectSize(16);
        long chainRetained = chain * ObjectSize(16);
        Console.WriteLine($"heap counts list={list} chain={chain} array={array} cwt={cwt} bulk={bulk} " +
                          $"holder_retained={holderRetained} chain_retained={chainRetained} " +
                          $"list_item_size={ObjectSize(4)} cwt_value_size={ObjectSize(4)} cached={cached}");
        if (pauses)
        {
            double best = double.MaxValue;
            for (int i = 0; i < 3; i++)
            {
                var sw = System.Diagnostics.Stopwatch.StartNew();
                GC.Collect(2, GCCollectionMode.Forced, blocking: true, compacting: false);
                best = Math.Min(best, sw.Elapsed.TotalMilliseconds);
            }
            Console.WriteLine($"heap gc_ms={best:F1}");
            var watcher = new Thread(() =>
            {
                var sw = System.Diagnostics.Stopwatch.StartNew();
                double last = 0;
                for (;;)
                {
                    Thread.Sleep(1);
                    double now = sw.Elapsed.TotalMilliseconds;
                    if (now - last > 5)
                    {
                        Console.WriteLine($"pause {now - last:F1}");
                        Console.Out.Flush();
                    }
                    last = now;
                }
            }) { IsBackground = true };
            watcher.Start();
        }
        Console.WriteLine($"ready {Environment.ProcessId}");
        Console.Out.Flush();
        if (wait != null)
        {
            var until = DateTime.UtcNow.AddSeconds(110);
            while (!File.Exists(wait) && DateTime.UtcNow < until)
                Thread.Sleep(20);
        }
        GC.KeepAlive(s_list);
        GC.KeepAlive(s_chain);
        GC.KeepAlive(s_holder);
        GC.KeepAlive(s_keys);
        GC.KeepAlive(s_table);
        GC.KeepAlive(s_bulk);
        GC.KeepAlive(HeapCache.Items);
        return 0;
    }
}
