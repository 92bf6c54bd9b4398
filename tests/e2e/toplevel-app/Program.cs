// Top-level statements that await, then burn CPU on a pool thread in
// TopLevelBurn, ROUNDS times (`toplevel ROUNDS`, 10 by default): the burn's
// logical stack is Main (async) > TopLevelBurn, with nothing above Main, which
// the runtime's entry point waits for. Prints "toplevel N".
using System;
using System.Diagnostics;
using System.Threading.Tasks;

int rounds = args.Length > 0 ? int.Parse(args[0]) : 10;
double sum = 0;
for (int i = 0; i < rounds; i++)
{
    await Task.Delay(5);
    sum += TopLevelBurn(60);
}
Console.WriteLine($"toplevel {rounds} {(sum > 0 ? "ok" : "?")}");

static double TopLevelBurn(int ms)
{
    var sw = Stopwatch.StartNew();
    double s = 0;
    while (sw.ElapsedMilliseconds < ms)
        s += Math.Sqrt(sw.ElapsedTicks);
    return s;
}
