// GcPauses FILE.nettrace: one line per collection of the first .NET process in
// the trace, as TraceEvent's GC analysis (PerfView's GCStats) computes it:
//   gc NUMBER gen GENERATION reason REASON type TYPE pause MS
using System;
using System.Linq;
using Microsoft.Diagnostics.Tracing;
using Microsoft.Diagnostics.Tracing.Analysis;

public static class Program
{
    public static int Main(string[] args)
    {
        if (args.Length != 1)
        {
            Console.Error.WriteLine("usage: GcPauses FILE.nettrace");
            return 2;
        }
        using var source = new EventPipeEventSource(args[0]);
        source.NeedLoadedDotNetRuntimes();
        source.Process();
        foreach (var process in source.Processes())
        {
            var runtime = process.LoadedDotNetRuntime();
            if (runtime == null)
                continue;
            foreach (var gc in runtime.GC.GCs.OrderBy(g => g.Number))
                Console.WriteLine($"gc {gc.Number} gen {gc.Generation} reason {gc.Reason} type {gc.Type} " +
                                  $"pause {gc.PauseDurationMSec:F4}");
        }
        return 0;
    }
}
