// The service of e2e_sample_unwind_web: GET /work serializes a payload to JSON
// (Service.Serialize, managed: System.Text.Json), returns, then hashes the JSON
// 16 times with SHA-256 (Service.Hash: OpenSSL's libcrypto). A client in the
// same process keeps 4 requests in flight until the process has used
// CPU_SECONDS of CPU, then prints "web N requests". A second argument picks
// the endpoint: /work (the default) or /awork (the same work after an await).
using System;
using System.Diagnostics;
using System.Linq;
using System.Net.Http;
using System.Runtime.CompilerServices;
using System.Security.Cryptography;
using System.Text.Json;
using System.Threading.Tasks;
using Microsoft.AspNetCore.Builder;
using Microsoft.AspNetCore.Hosting;
using Microsoft.AspNetCore.Hosting.Server;
using Microsoft.AspNetCore.Hosting.Server.Features;
using Microsoft.AspNetCore.Http;
using Microsoft.Extensions.DependencyInjection;
using Microsoft.Extensions.Logging;

namespace Holdout;

public record Item(int Id, string Name, double Price, string[] Tags);

public static class Service
{
    private static readonly Item[] payload = Enumerable.Range(0, 400)
        .Select(i => new Item(i, "item-" + i, i * 1.25, new[] { "a" + i, "b" + (i % 7), "c" })).ToArray();

    [MethodImpl(MethodImplOptions.NoInlining)]
    public static byte[] Serialize() => JsonSerializer.SerializeToUtf8Bytes(payload);

    [MethodImpl(MethodImplOptions.NoInlining)]
    public static string Hash(byte[] json)
    {
        byte[] h = json;
        var big = new byte[json.Length * 16];
        for (int i = 0; i < 16; i++)
            Buffer.BlockCopy(json, 0, big, i * json.Length, json.Length);
        for (int i = 0; i < 16; i++)
            h = SHA256.HashData(big);
        return Convert.ToHexString(h);
    }

    public static string Handle()
    {
        byte[] json = Serialize();
        return Hash(json);
    }

    // The async endpoint (GET /awork, e2e_async_web): the handler awaits a
    // helper that waits a millisecond (as for I/O), then hashes; the hashing
    // runs on a pool thread after the await, so its logical stack is the
    // handler's under the pipeline's. (An await that completes at once, as
    // Task.Yield's, can resume before the handler has awaited the helper: that
    // first resume has no caller yet, docs/async.md.)
    [MethodImpl(MethodImplOptions.NoInlining)]
    public static async Task<string> HandleAsync()
    {
        string h = await HashLater();
        return h;
    }

    [MethodImpl(MethodImplOptions.NoInlining)]
    public static async Task<string> HashLater()
    {
        await Task.Delay(1);
        return Hash(Serialize());
    }
}

public static class Program
{
    public static async Task<int> Main(string[] args)
    {
        double seconds = args.Length > 0 ? double.Parse(args[0], System.Globalization.CultureInfo.InvariantCulture) : 3;
        var builder = WebApplication.CreateBuilder();
        builder.Logging.ClearProviders();
        builder.WebHost.UseUrls("http://127.0.0.1:0");
        var app = builder.Build();
        app.MapGet("/work", () => Service.Handle());
        app.MapGet("/awork", () => Service.HandleAsync());
        string path = args.Length > 1 ? args[1] : "/work";
        await app.StartAsync();
        string url = app.Services.GetRequiredService<IServer>().Features.Get<IServerAddressesFeature>()!.Addresses.First();
        using var client = new HttpClient { BaseAddress = new Uri(url) };
        // One request first, then a pause: the crypto libraries it loads get
        // their unwind tables read by the sampler thread (it looks every tick)
        // before the load starts, also on a machine too loaded to give that
        // thread its tick; samples taken before are the start-up's, not what
        // the test judges (docs/sampling.md: code loaded after the last look).
        if ((await client.GetStringAsync("/work")).Length != 64)
            throw new Exception("bad answer");
        await Task.Delay(300);
        var proc = Process.GetCurrentProcess();
        long requests = 0;
        async Task Loop()
        {
            while (true)
            {
                proc.Refresh();
                if (proc.TotalProcessorTime.TotalSeconds >= seconds)
                    return;
                string s = await client.GetStringAsync(path);
                if (s.Length != 64)
                    throw new Exception("bad answer " + s);
                System.Threading.Interlocked.Increment(ref requests);
            }
        }
        await Task.WhenAll(Enumerable.Range(0, 4).Select(_ => Task.Run(Loop)));
        await app.StopAsync();
        Console.WriteLine($"web {requests} requests");
        return 0;
    }
}
