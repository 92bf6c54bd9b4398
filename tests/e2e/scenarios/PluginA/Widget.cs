// PluginA: loaded by the "alc" scenario into a collectible AssemblyLoadContext.
namespace PluginA;

public sealed class Widget
{
    private readonly WidgetPart _part = new WidgetPart(3);

    public int Spin(int turns) => _part.Size * turns;
}

public sealed class WidgetPart
{
    public WidgetPart(int size) => Size = size;

    public int Size { get; }
}
