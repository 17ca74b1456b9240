// PathServerExample.cs: add it to any GameObject and press Play. It starts the embedded server
// (the bundle in StreamingAssets/pathserver/<platform>/, else Python in the editor), asks for
// one path on the sample map "example" and draws it in the Scene view.
//
// In a build there is no Python: put the bundle for each platform you ship in
// Assets/StreamingAssets/pathserver/<platform>/ (see the package's README).

using System.IO;
using PathServer;
using UnityEngine;

public class PathServerExample : MonoBehaviour
{
    [Tooltip("A map the server serves: the bundle's sample maps include \"example\" (64x64).")]
    public string map = "example";
    public Vector2 from = new Vector2(2.5f, 2.5f);
    public Vector2 to = new Vector2(60.5f, 60.5f);
    [Tooltip("The unit's footprint in cells.")]
    public int unitSize = 1;
    [Tooltip("The Python with pathserver installed, used in the editor when there is no bundle.")]
    public string python = EmbeddedServer.DefaultPython;

    EmbeddedServer _server;
    PathServerClient _client;
    PathPoint[] _path = new PathPoint[0];
    bool _destroyed;

    async void Start()
    {
        var options = new EmbeddedServerOptions
        {
            BundleRoot = Path.Combine(Application.streamingAssetsPath, "pathserver"),
            // A player has no Python: a missing bundle should say so, not try Python.
            Mode = Application.isEditor ? EmbeddedServerMode.Auto : EmbeddedServerMode.Bundle,
            Python = python,
            Log = line => Debug.Log("pathserver: " + line),
        };
        try
        {
            EmbeddedServer server = await EmbeddedServer.StartAsync(options);
            if (_destroyed)
            {
                // Play mode ended while the server was starting.
                server.Dispose();
                return;
            }
            _server = server;
            _client = new PathServerClient(server.Endpoint, map) { Log = Debug.Log };
            PathResult result = await _client.FindPathAsync(new PathPoint(from.x, from.y), new PathPoint(to.x, to.y), unitSize);
            // Back on the main thread here: engine objects may be touched.
            _path = result.Path;
            Debug.Log(result.Status + ": " + result.Path.Length + " waypoints, length " + result.Length
                + ", server started in " + (int)server.StartupTime.TotalMilliseconds + " ms (" + server.Source + ")");
        }
        catch (PathServerException e)
        {
            Debug.LogError(e.Message);
        }
    }

    void Update()
    {
        for (int i = 1; i < _path.Length; i++)
            Debug.DrawLine(new Vector3(_path[i - 1].X, _path[i - 1].Y, 0), new Vector3(_path[i].X, _path[i].Y, 0), Color.green);
    }

    void OnDestroy()
    {
        _destroyed = true;
        if (_client != null) _client.Dispose();
        if (_server != null) _server.Dispose();
    }
}
