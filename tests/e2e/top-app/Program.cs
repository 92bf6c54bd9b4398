// The top scenario as a program of its own (TopApp.csproj): `topapp top ARGS`
// is `Scenarios.dll top ARGS`.
namespace Scenarios;

public static class TopApp
{
    public static int Main(string[] args) =>
        TopScenario.Run(args.Length > 0 && args[0] == "top" ? args[1..] : args);
}
