// ForwardClient: uses Fwd.Widget through a TypeRef to ForwardLib, which at run
// time forwards it to ForwardTarget. Prints the assembly the type came from.
using System;
using System.IO;
using System.Reflection;
using System.Runtime.CompilerServices;
using System.Runtime.Loader;

public static class Program
{
    public static int Main()
    {
        // ForwardTarget is not in this app's deps.json (the app was built
        // against v1): find it beside the app, as a plugin host would.
        AssemblyLoadContext.Default.Resolving += (context, name) =>
        {
            string path = Path.Combine(AppContext.BaseDirectory, name.Name + ".dll");
            return File.Exists(path) ? context.LoadFromAssemblyPath(path) : null;
        };
        Use();
        return 0;
    }

    [MethodImpl(MethodImplOptions.NoInlining)]
    private static void Use()
    {
        var w = new Fwd.Widget();
        Console.WriteLine($"Fwd.Widget from {typeof(Fwd.Widget).Assembly.GetName().Name}: {w.Where()}");
    }
}
