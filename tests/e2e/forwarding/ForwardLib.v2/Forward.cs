using System.Runtime.CompilerServices;

[assembly: TypeForwardedTo(typeof(Fwd.Widget))]
