// Tests.Connection.cs: the C# client's tests (Tests.cs runs them) of connection trouble,
// staged by FlakyProxy, an in-process TCP proxy in front of the real server: cancelling, a
// timeout, reconnects, a restart, heartbeats.

using System;
using System.Collections.Generic;
using System.Diagnostics;
using System.Globalization;
using System.Linq;
using System.Net;
using System.Net.Sockets;
using System.Text.RegularExpressions;
using System.Threading;
using System.Threading.Tasks;
using PathServer;

static partial class Tests
{
    // ---------------------------------------------------------------- connection trouble

    static async Task Cancellation()
    {
        await RequireServer();
        using (var proxy = new FlakyProxy(_endpoint))
        using (var client = NewClient(proxy.Endpoint))
        {
            await ConnectThenDropReplies(proxy, client);
            var cancel = new CancellationTokenSource();
            var task = client.FindPathAsync(Corner(0), Corner(3), 1, Grid(), cancel.Token);
            await Task.Delay(50);
            cancel.Cancel();
            bool cancelled = false;
            try
            {
                await task;
            }
            catch (OperationCanceledException)
            {
                cancelled = true;
            }
            Check(cancelled, "the task is cancelled");
            Equal(0, client.InFlightCount, "nothing left in flight");
        }
    }

    static async Task RequestTimeout()
    {
        await RequireServer();
        using (var proxy = new FlakyProxy(_endpoint))
        using (var client = NewClient(proxy.Endpoint))
        {
            client.HeartbeatTimeout = TimeSpan.FromSeconds(30);
            await ConnectThenDropReplies(proxy, client);
            var clock = Stopwatch.StartNew();
            var error = await Throws(() => client.FindPathAsync(Corner(0), Corner(3), 1,
                Grid(o => o.Timeout = TimeSpan.FromMilliseconds(300))), "timeout");
            Check(clock.ElapsedMilliseconds >= 250 && clock.ElapsedMilliseconds < 3000, "timed out after " + clock.ElapsedMilliseconds + " ms");
            Check(error.Message.Contains("within 0.3 s"), "the message says how long: " + error.Message);
            Equal(0, client.InFlightCount, "nothing left in flight");
            Console.WriteLine("     | " + error.Message);
        }
    }

    static async Task NothingListening()
    {
        int port = FreePort();
        using (var client = NewClient("tcp://127.0.0.1:" + port))
        {
            client.RequestTimeout = TimeSpan.FromSeconds(1);
            var error = await Throws(() => client.PingAsync(), "disconnected");
            Check(error.Message.IndexOf("refused", StringComparison.OrdinalIgnoreCase) >= 0, "the message gives the cause: " + error.Message);
            Console.WriteLine("     | " + error.Message);
        }
    }

    static async Task ResendsAfterReconnect()
    {
        await RequireServer();
        using (var proxy = new FlakyProxy(_endpoint))
        using (var client = NewClient(proxy.Endpoint))
        {
            await ConnectThenDropReplies(proxy, client);
            var tasks = Enumerable.Range(0, 20).Select(i => client.FindPathAsync(Corner(i % 4), Corner((i + 1) % 4), 1, Grid())).ToList();
            await Eventually(() => proxy.BytesToServer > 0 && proxy.BytesDropped > 0, "the requests to reach the server");
            await Task.Delay(100);
            Check(tasks.All(t => !t.IsCompleted), "no reply got through yet");
            // The connection dies with 20 requests answered by the server but never delivered.
            proxy.DropReplies = false;
            proxy.KillConnections();
            var results = await Task.WhenAll(tasks);
            Check(results.All(r => r.Path.Length > 0), "every request answered after the reconnect");
            Equal(2, client.ConnectionCount, "connections");
        }
    }

    static async Task ConnectsBeforeServerIsUp()
    {
        await RequireServer();
        using (var proxy = new FlakyProxy(_endpoint))
        using (var client = NewClient(proxy.Endpoint))
        {
            var task = client.FindPathAsync(Corner(0), Corner(3), 1, Grid(o => o.Timeout = TimeSpan.FromSeconds(15)));
            await Task.Delay(700);
            Check(!task.IsCompleted && !client.IsConnected, "waiting for the server");
            proxy.Start();
            var result = await task;
            Check(result.Path.Length > 0, "answered once the server is up");
        }
    }

    static async Task SurvivesRestart()
    {
        await RequireServer();
        using (var proxy = new FlakyProxy(_endpoint))
        using (var client = NewClient(proxy.Endpoint))
        {
            var changes = new List<bool>();
            client.ConnectionChanged += (sender, e) => { lock (changes) changes.Add(e.IsConnected); };
            proxy.Start();
            await client.PingAsync();
            proxy.Stop();  // the "server" goes away: connection closed, port refusing
            await Eventually(() => !client.IsConnected, "the client to notice");
            var task = client.FindPathAsync(Corner(0), Corner(3), 1, Grid(o => o.Timeout = TimeSpan.FromSeconds(15)));
            await Task.Delay(500);
            Check(!task.IsCompleted, "no answer while the server is down");
            proxy.Start();  // "restarted" on the same port
            var result = await task;
            Check(result.Path.Length > 0, "answered after the restart");
            await Eventually(() => { lock (changes) return changes.Count >= 3; }, "ConnectionChanged events");
            lock (changes) Equal("True,False,True", string.Join(",", changes.Take(3)), "ConnectionChanged sequence");
        }
    }

    static async Task HeartbeatCatchesSilentServer()
    {
        await RequireServer();
        using (var proxy = new FlakyProxy(_endpoint))
        using (var client = NewClient(proxy.Endpoint))
        {
            client.HeartbeatInterval = TimeSpan.FromMilliseconds(100);
            client.HeartbeatTimeout = TimeSpan.FromMilliseconds(800);
            await ConnectThenDropReplies(proxy, client);
            var task = client.FindPathAsync(Corner(0), Corner(3), 1, Grid(o => o.Timeout = TimeSpan.FromSeconds(15)));
            await Eventually(() => !client.IsConnected, "the heartbeat timeout", 5000);
            proxy.DropReplies = false;
            var result = await task;
            Check(result.Path.Length > 0, "answered on the new connection");
            Check(client.ConnectionCount >= 2, "reconnected");
        }
    }

    static async Task RequestsSurviveCuts()
    {
        await RequireServer();
        using (var proxy = new FlakyProxy(_endpoint))
        using (var client = NewClient(proxy.Endpoint))
        {
            proxy.Start();
            var requests = RandomRequests(250, 4);
            var expected = await client.FindPathsAsync(requests, 1, Grid());
            var tasks = new Task<PathResult>[8 * requests.Count];
            var cutter = Task.Run(async () =>
            {
                for (int cut = 0; cut < 5; cut++)
                {
                    await Task.Delay(40);
                    proxy.KillConnections();
                }
            });
            var senders = Enumerable.Range(0, 8).Select(thread => Task.Run(() =>
            {
                for (int i = 0; i < requests.Count; i++)
                {
                    tasks[thread * requests.Count + i] = client.FindPathAsync(requests[i].Start, requests[i].Goal, 1,
                        Grid(o => o.Timeout = TimeSpan.FromSeconds(30)));
                    if (i % 50 == 0) Thread.Sleep(5);
                }
            })).ToArray();
            await Task.WhenAll(senders);
            await cutter;
            var results = await Task.WhenAll(tasks);
            for (int i = 0; i < results.Length; i++) SamePath(expected[i % requests.Count], results[i], "request " + i);
            Equal(0, client.InFlightCount, "in flight at the end");
            Check(client.ConnectionCount >= 2, "the connection was cut and re-made (" + client.ConnectionCount + " connections)");
            Console.WriteLine("     | " + results.Length + " answers over " + client.ConnectionCount + " connections");
        }
    }

    static async Task HeartbeatKeepsIdleConnection()
    {
        await RequireServer();
        using (var client = NewClient())
        {
            client.HeartbeatInterval = TimeSpan.FromMilliseconds(100);
            client.HeartbeatTimeout = TimeSpan.FromMilliseconds(600);
            await client.PingAsync();
            await Task.Delay(2000);  // idle: only our PINGs and the server's PONGs
            await client.PingAsync();
            Equal(1, client.ConnectionCount, "connections after 2 s idle");
        }
    }

    // Starts proxy, waits for client to connect through it, then has the proxy drop every reply:
    // the server "hangs", the TCP connection stays open but nothing comes back.
    static async Task ConnectThenDropReplies(FlakyProxy proxy, PathServerClient client)
    {
        proxy.Start();
        Check(await client.WaitForConnectionAsync(TimeSpan.FromSeconds(5)), "connected through the proxy");
        proxy.DropReplies = true;
    }

    static int FreePort()
    {
        var listener = new TcpListener(IPAddress.Loopback, 0);
        listener.Start();
        int port = ((IPEndPoint)listener.LocalEndpoint).Port;
        listener.Stop();
        return port;
    }

    /// <summary>
    /// A TCP proxy in front of the real server, to stage what a client meets in the field: a
    /// server that goes away and comes back on the same port (Stop/Start), connections cut
    /// (KillConnections), a server that stops answering (DropReplies).
    /// </summary>
    sealed class FlakyProxy : IDisposable
    {
        readonly string _targetHost;
        readonly int _targetPort;
        readonly List<TcpClient> _connections = new List<TcpClient>();
        TcpListener _listener;
        public readonly int Port = FreePort();
        public volatile bool DropReplies;
        long _bytesToServer;
        long _bytesDropped;

        public FlakyProxy(string target)
        {
            var match = Regex.Match(target, @"^tcp://\[?([^\]]+)\]?:(\d+)$");
            if (!match.Success) throw new ArgumentException("endpoint " + target);
            _targetHost = match.Groups[1].Value;
            _targetPort = int.Parse(match.Groups[2].Value, CultureInfo.InvariantCulture);
        }

        public string Endpoint { get { return "tcp://127.0.0.1:" + Port; } }
        public long BytesToServer { get { return Interlocked.Read(ref _bytesToServer); } }
        public long BytesDropped { get { return Interlocked.Read(ref _bytesDropped); } }

        public void Start()
        {
            var listener = new TcpListener(IPAddress.Loopback, Port);
            listener.Server.SetSocketOption(SocketOptionLevel.Socket, SocketOptionName.ReuseAddress, true);
            listener.Start();
            _listener = listener;
            new Thread(() => AcceptLoop(listener)) { IsBackground = true }.Start();
        }

        public void Stop()
        {
            var listener = _listener;
            _listener = null;
            if (listener != null) listener.Stop();
            KillConnections();
        }

        public void KillConnections()
        {
            lock (_connections)
            {
                foreach (var connection in _connections)
                {
                    try
                    {
                        connection.Client.Shutdown(SocketShutdown.Both);
                    }
                    catch (Exception)
                    {
                        // Already gone.
                    }
                    connection.Close();
                }
                _connections.Clear();
            }
        }

        void AcceptLoop(TcpListener listener)
        {
            while (true)
            {
                TcpClient client;
                try
                {
                    client = listener.AcceptTcpClient();
                }
                catch (Exception)
                {
                    return;  // stopped
                }
                var server = new TcpClient();
                try
                {
                    server.Connect(_targetHost, _targetPort);
                }
                catch (Exception)
                {
                    client.Close();
                    continue;
                }
                client.NoDelay = true;
                server.NoDelay = true;
                lock (_connections)
                {
                    _connections.Add(client);
                    _connections.Add(server);
                }
                new Thread(() => Pump(client, server, false)) { IsBackground = true }.Start();
                new Thread(() => Pump(server, client, true)) { IsBackground = true }.Start();
            }
        }

        void Pump(TcpClient from, TcpClient to, bool replies)
        {
            var buffer = new byte[65536];
            try
            {
                var input = from.GetStream();
                var output = to.GetStream();
                while (true)
                {
                    int n = input.Read(buffer, 0, buffer.Length);
                    if (n <= 0) break;
                    if (replies && DropReplies)
                    {
                        Interlocked.Add(ref _bytesDropped, n);
                        continue;
                    }
                    if (!replies) Interlocked.Add(ref _bytesToServer, n);
                    output.Write(buffer, 0, n);
                }
            }
            catch (Exception)
            {
                // Either side closed.
            }
            from.Close();
            to.Close();
        }

        public void Dispose()
        {
            Stop();
        }
    }
}
