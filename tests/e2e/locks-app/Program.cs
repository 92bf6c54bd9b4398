// The locks scenario as a program of its own (LocksApp.csproj): `locks ARGS`
// is `Scenarios.dll locks ARGS`.
namespace Scenarios;

public static class LocksApp
{
    public static int Main(string[] args) => LocksScenario.Run(args);
}
