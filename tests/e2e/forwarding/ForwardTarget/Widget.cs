namespace Fwd;

public class Widget
{
    public string Where() => "ForwardTarget";
}
