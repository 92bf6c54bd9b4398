// AttachScenario: a program that runs until told to stop, for `dnprof attach`.
// `dotnet Scenarios.dll attach` prints "ready", then reads commands from stdin:
//   work N   does round N's work, new in every round: loads the class
//            AttachBox<...<AttachRound>> (N + 1 deep), JIT-compiles
//            AttachWork::Compute<AttachVal<...<int>>> (N + 1 deep), throws and
//            catches an AttachRoundException, collects garbage; prints "done N"
//   quit     prints "bye" and exits with code 3
// End of input is quit too. What it prints does not depend on being profiled.
using System;

namespace Scenarios;

public sealed class AttachRound { }

public sealed class AttachBox<T>
{
    public T? Value;
    public override string ToString() => typeof(T).Name;
}

public struct AttachVal<T>
{
    public T Inner;
    public int Round;
}

public sealed class AttachRoundException : Exception
{
    public AttachRoundException(string message) : base(message) { }
}

public static class AttachWork
{
    [System.Runtime.CompilerServices.MethodImpl(System.Runtime.CompilerServices.MethodImplOptions.NoInlining)]
    public static int Compute<T>(int n) where T : struct
    {
        T value = default;
        return value.GetHashCode() ^ n;
    }
}

public static class AttachScenario
{
    public static int Run(string[] args)
    {
        Console.WriteLine("ready");
        Console.Out.Flush();
        string? line;
        while ((line = Console.In.ReadLine()) != null)
        {
            line = line.Trim();
            if (line == "quit")
                break;
            if (line.StartsWith("work ") && int.TryParse(line.AsSpan(5), out int round))
            {
                Work(round);
                Console.WriteLine($"done {round}");
                Console.Out.Flush();
            }
        }
        Console.WriteLine("bye");
        Console.Out.Flush();
        return 3;
    }

    private static void Work(int round)
    {
        Type box = typeof(AttachRound), val = typeof(int);
        for (int i = 0; i <= round; i++)
        {
            box = typeof(AttachBox<>).MakeGenericType(box);
            val = typeof(AttachVal<>).MakeGenericType(val);
        }
        object? instance = Activator.CreateInstance(box);
        var compute = typeof(AttachWork).GetMethod(nameof(AttachWork.Compute))!.MakeGenericMethod(val);
        int sum = (int)compute.Invoke(null, new object[] { round })! + (instance?.GetHashCode() ?? 0);
        try
        {
            throw new AttachRoundException($"round {round}");
        }
        catch (AttachRoundException e) when (e.Message.Length > 0)
        {
            sum ^= e.Message.Length;
        }
        var garbage = new object[1000];
        for (int i = 0; i < garbage.Length; i++)
            garbage[i] = new byte[100 + i % 50];
        GC.Collect();
        GC.WaitForPendingFinalizers();
        GC.KeepAlive(sum);
    }
}
