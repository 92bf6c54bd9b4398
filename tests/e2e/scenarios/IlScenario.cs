// IlScenario: methods of known IL bodies, for dnprof run --il (docs/il.md).
// `dotnet Scenarios.dll il` calls a method with a tiny header and one with a
// fat header (locals, try/catch with a filter, a plain catch and a finally),
// then prints each body as reflection reads it from the assembly
// (MethodBody): tests/e2e/test_il.c holds the trace's ILBody events up
// against these lines.
using System;
using System.Reflection;
using System.Runtime.CompilerServices;

namespace Scenarios;

public static class IlScenario
{
    public static int Run(string[] args)
    {
        Tiny();
        Console.WriteLine($"fat = {Fat(3)}");
        foreach (string name in new[] { "Tiny", "Fat" })
            Describe(name, typeof(IlScenario).GetMethod(name, BindingFlags.NonPublic | BindingFlags.Static)!);
        return 0;
    }

    [MethodImpl(MethodImplOptions.NoInlining)]
    private static void Tiny()
    {
        Console.WriteLine("hello from the tiny method");
    }

    [MethodImpl(MethodImplOptions.NoInlining)]
    private static int Fat(int n)
    {
        int result = 0;
        try
        {
            try
            {
                if (n > 2)
                    throw new InvalidOperationException("fat method's throw");
                result = 1;
            }
            catch (InvalidOperationException e) when (e.Message.Contains("fat"))
            {
                result = 2;
            }
            catch (ArgumentException)
            {
                result = 3;
            }
        }
        finally
        {
            result += 10;
            Console.WriteLine("finally of the fat method");
        }
        return result;
    }

    // "il body NAME maxstack=M localsig=0xT initlocals=0|1 codesize=N code=HEX",
    // then "il clause NAME kind=K try=O,L handler=O,L filter=F catch=TYPE" per
    // clause, in the body's order (kind: 0 catch, 1 filter, 2 finally, 4 fault).
    private static void Describe(string name, MethodInfo m)
    {
        MethodBody body = m.GetMethodBody()!;
        byte[] code = body.GetILAsByteArray()!;
        Console.WriteLine($"il body {name} maxstack={body.MaxStackSize} localsig=0x{body.LocalSignatureMetadataToken:x8} " +
                          $"initlocals={(body.InitLocals ? 1 : 0)} codesize={code.Length} code={Convert.ToHexString(code).ToLowerInvariant()}");
        foreach (ExceptionHandlingClause c in body.ExceptionHandlingClauses)
        {
            int filter = c.Flags == ExceptionHandlingClauseOptions.Filter ? c.FilterOffset : 0;
            string type = c.Flags == ExceptionHandlingClauseOptions.Clause ? c.CatchType!.FullName! : "-";
            Console.WriteLine($"il clause {name} kind={(int)c.Flags} try={c.TryOffset},{c.TryLength} " +
                              $"handler={c.HandlerOffset},{c.HandlerLength} filter={filter} catch={type}");
        }
    }
}
