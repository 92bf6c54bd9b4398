// PluginB: loaded after PluginA was unloaded, so that its classes may be given
// the IDs (addresses) PluginA's had. Its names share nothing with PluginA's.
namespace PluginB;

public sealed class Gadget
{
    private readonly GadgetCog _cog = new GadgetCog(7);

    public int Turn(int times) => _cog.Teeth + times;
}

public sealed class GadgetCog
{
    public GadgetCog(int teeth) => Teeth = teeth;

    public int Teeth { get; }
}
