// Scenarios: the program the end-to-end tests profile. `dotnet Scenarios.dll NAME`
// runs one scenario, which does known things and prints what it did, so that a
// test can hold the trace up against it.
using System;
using System.Collections.Generic;
using System.Diagnostics;
using System.IO;
using System.Reflection;
using System.Runtime.CompilerServices;
using System.Runtime.Loader;
using System.Threading;

namespace Scenarios;

public static class Program
{
    public static int Main(string[] args)
    {
        string name = args.Length > 0 ? args[0] : "";
        switch (name)
        {
            case "hello": return Hello();
            case "classes": return Classes();
            case "jit": return Jit();
            case "threads": return Threads();
            case "alc": return Alc();
            case "spin": return Spin();
            case "exceptions": return Exceptions();
            case "children": return Children();
            case "exitcode": return ExitCode();
            case "mvid": // CoreLib's module version id, its bytes in hex (the async facts' cache file: docs/async.md)
                Console.WriteLine(Convert.ToHexString(typeof(object).Module.ModuleVersionId.ToByteArray()).ToLowerInvariant());
                return 0;
            default:
                // Scenarios kept in files of their own: a public static class
                // Scenarios.<Name>Scenario with `public static int Run(string[] args)`,
                // e.g. "calls" runs CallsScenario.Run (args without the name).
                var type = typeof(Program).Assembly.GetType(
                    "Scenarios." + char.ToUpperInvariant(name.Length > 0 ? name[0] : 'x') +
                    (name.Length > 1 ? name.Substring(1) : "") + "Scenario");
                var run = type?.GetMethod("Run", BindingFlags.Public | BindingFlags.Static);
                if (run != null)
                    return (int)run.Invoke(null, new object[] { args[1..] })!;
                Console.Error.WriteLine($"usage: Scenarios NAME (hello classes jit threads alc spin exceptions children exitcode, or a NameScenario class), not '{name}'");
                return 2;
        }
    }

    private static int Hello()
    {
        Console.WriteLine("hello from Scenarios");
        return 0;
    }

    // Loads Outer, Outer+Inner, Box<Outer>, Dictionary<string, int>, int[],
    // string[,] and Outer[].
    private static int Classes()
    {
        var outer = new Outer(2);
        var inner = new Outer.Inner(outer);
        var box = new Box<Outer>(outer);
        var counts = new Dictionary<string, int> { ["one"] = 1, ["two"] = 2 };
        int[] ints = { 1, 2, 3 };
        string[,] grid = new string[2, 3];
        grid[1, 2] = "corner";
        Outer[] outers = { outer, new Outer(5) };
        Console.WriteLine($"Outer+Inner.Twice = {inner.Twice()}");
        Console.WriteLine($"Box<Outer>.Value.Size = {box.Value!.Size}");
        Console.WriteLine($"Dictionary<string, int>.Count = {counts.Count}");
        Console.WriteLine($"int[].Length = {ints.Length}, string[,].Length = {grid.Length}, Outer[].Length = {outers.Length}");
        return 0;
    }

    private static int Jit()
    {
        Console.WriteLine($"JitTarget.KnownMethod() = {JitTarget.KnownMethod()}");
        Console.WriteLine($"JitTarget.GenericMethod<int>() = {JitTarget.GenericMethod<int>()}");
        return 0;
    }

    private static int Threads()
    {
        var threads = new Thread[3];
        var sums = new long[3];
        for (int i = 0; i < threads.Length; i++)
        {
            int slot = i;
            threads[i] = new Thread(() => sums[slot] = Work(slot + 1)) { Name = $"dnprof-worker-{i + 1}" };
        }
        foreach (Thread t in threads)
            t.Start();
        foreach (Thread t in threads)
            t.Join();
        for (int i = 0; i < threads.Length; i++)
            Console.WriteLine($"{threads[i].Name}: {sums[i]}");
        return 0;
    }

    private static long Work(int seed)
    {
        long sum = 0;
        var parts = new List<string>();
        for (int i = 0; i < 1000; i++)
        {
            parts.Add((i * seed).ToString());
            sum += parts[^1].Length;
        }
        return sum;
    }

    // PluginA into a collectible context, used, unloaded; then PluginB the same
    // way, so that its classes may get the IDs PluginA's had.
    private static int Alc()
    {
        string dir = Path.GetDirectoryName(typeof(Program).Assembly.Location)!;
        LoadUseUnload(Path.Combine(dir, "PluginA.dll"), "PluginA.Widget", "Spin");
        LoadUseUnload(Path.Combine(dir, "PluginB.dll"), "PluginB.Gadget", "Turn");
        return 0;
    }

    private static void LoadUseUnload(string path, string typeName, string method)
    {
        WeakReference context = LoadAndUse(path, typeName, method, out int result);
        int tries = 0;
        while (context.IsAlive && tries < 50)
        {
            GC.Collect();
            GC.WaitForPendingFinalizers();
            tries++;
        }
        string plugin = Path.GetFileNameWithoutExtension(path);
        Console.WriteLine($"{typeName}.{method}(3) = {result}");
        Console.WriteLine(context.IsAlive
            ? $"{plugin} not unloaded after {tries} collections"
            : $"{plugin} unloaded after {tries} collections");
    }

    [MethodImpl(MethodImplOptions.NoInlining)]
    private static WeakReference LoadAndUse(string path, string typeName, string method, out int result)
    {
        var context = new AssemblyLoadContext(Path.GetFileNameWithoutExtension(path), isCollectible: true);
        Assembly assembly = context.LoadFromAssemblyPath(path);
        Type type = assembly.GetType(typeName, throwOnError: true)!;
        object instance = Activator.CreateInstance(type)!;
        result = (int)type.GetMethod(method)!.Invoke(instance, new object[] { 3 })!;
        context.Unload();
        return new WeakReference(context);
    }

    // Runs until killed: loads a new generic instantiation, allocates, throws and
    // catches, a little at a time.
    private static int Spin()
    {
        Console.WriteLine("ready");
        Console.Out.Flush();
        Type[] roots = { typeof(int), typeof(string), typeof(Outer), typeof(long), typeof(double), typeof(byte) };
        Type current = roots[0];
        for (long i = 1; ; i++)
        {
            Type argument = i % 16 == 0 ? roots[i / 16 % roots.Length] : current;
            current = typeof(Box<>).MakeGenericType(argument);
            object? box = Activator.CreateInstance(current);
            var junk = new byte[256 + (int)(i % 1024)];
            try
            {
                if (i % 3 == 0)
                    throw new InvalidOperationException($"spin {i}");
            }
            catch (InvalidOperationException)
            {
                junk[0] = 1;
            }
            if (i % 100 == 0)
            {
                Console.WriteLine($"iteration {i}: {box?.GetType().Name}");
                Console.Out.Flush();
            }
            Thread.Sleep(1);
        }
    }

    private static int Exceptions()
    {
        try
        {
            Level1();
        }
        catch (InvalidOperationException e)
        {
            Console.WriteLine($"caught {e.GetType().FullName}: {e.Message}");
        }
        return 0;
    }

    [MethodImpl(MethodImplOptions.NoInlining)]
    private static void Level1() => Level2();

    [MethodImpl(MethodImplOptions.NoInlining)]
    private static void Level2()
    {
        try
        {
            Level3();
        }
        finally
        {
            Console.WriteLine("finally in Level2");
        }
    }

    [MethodImpl(MethodImplOptions.NoInlining)]
    private static void Level3() => throw new InvalidOperationException("thrown in Level3");

    // The same host and the same environment: a profiled child of its own.
    private static int Children()
    {
        var start = new ProcessStartInfo(Environment.ProcessPath!) { UseShellExecute = false };
        start.ArgumentList.Add(typeof(Program).Assembly.Location);
        start.ArgumentList.Add("hello");
        using Process child = Process.Start(start)!;
        child.WaitForExit();
        Console.WriteLine($"child {child.Id} exited with {child.ExitCode}");
        return 0;
    }

    private static int ExitCode()
    {
        Console.WriteLine("bye");
        return 42;
    }
}

public class Outer
{
    public Outer(int size) => Size = size;

    public int Size { get; }

    public class Inner
    {
        private readonly Outer _outer;

        public Inner(Outer outer) => _outer = outer;

        public int Twice() => _outer.Size * 2;
    }
}

public sealed class Box<T>
{
    public Box() { }

    public Box(T value) => Value = value;

    public T? Value { get; }
}

public static class JitTarget
{
    [MethodImpl(MethodImplOptions.NoInlining)]
    public static int KnownMethod() => Environment.ProcessorCount > 0 ? 42 : 0;

    [MethodImpl(MethodImplOptions.NoInlining)]
    public static T? GenericMethod<T>() => default;
}
