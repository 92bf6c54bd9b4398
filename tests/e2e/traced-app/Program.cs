// The traced scenario as a program of its own (TracedApp.csproj): `traced traced
// ARGS` is `Scenarios.dll traced ARGS`.
namespace Scenarios;

public static class TracedApp
{
    public static int Main(string[] args) =>
        TracedScenario.Run(args.Length > 0 && args[0] == "traced" ? args[1..] : args);
}
