namespace Fwd;

public class Widget
{
    public string Where() => "ForwardLib v1";
}
