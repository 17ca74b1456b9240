// Tests.Package.cs: the C# client's tests (Tests.cs runs them) of the Unity package's
// layout and of EmbeddedServer.

using System;
using System.Collections.Generic;
using System.Diagnostics;
using System.Globalization;
using System.IO;
using System.Linq;
using System.Net;
using System.Net.Sockets;
using System.Text.RegularExpressions;
using System.Threading;
using System.Threading.Tasks;
using PathServer;

static partial class Tests
{
    // ---------------------------------------------------------------- the Unity package

    // Unity imports every file and folder of a package except hidden ones (".name") and those
    // ending in "~" (Samples~, Tests~), and ignores an asset without a .meta in an immutable
    // (git or registry) package, with a warning: each needs a committed .meta with a fixed GUID.
    static async Task PackageLayout()
    {
        await Task.Yield();
        string root = PackageFile();
        var manifest = (Dictionary<string, object>)Json.Parse(File.ReadAllText(Path.Combine(root, "package.json")));
        string name = JsonGet(manifest, "name") as string;
        Check(name != null && Regex.IsMatch(name, @"^com(\.[a-z0-9][a-z0-9_-]*){2,}$"), "package.json name is a lower-case reverse domain: " + Show(name));
        string version = JsonGet(manifest, "version") as string;
        var pyproject = Regex.Match(File.ReadAllText(Path.Combine(RepositoryDir(), "pyproject.toml")), "^version = \"([^\"]+)\"", RegexOptions.Multiline);
        Check(pyproject.Success, "pyproject.toml has a version");
        Equal(pyproject.Groups[1].Value, version, "package.json version (the server's, pyproject.toml)");
        Check(Regex.IsMatch((JsonGet(manifest, "unity") as string) ?? "", @"^\d{4}\.\d+$"), "package.json unity is YEAR.MINOR");
        Check(!string.IsNullOrEmpty(JsonGet(manifest, "displayName") as string) && !string.IsNullOrEmpty(JsonGet(manifest, "description") as string),
            "package.json has a displayName and a description");
        var samples = (JsonGet(manifest, "samples") as List<object>) ?? new List<object>();
        Check(samples.Count > 0, "package.json lists a sample");
        foreach (Dictionary<string, object> sample in samples)
        {
            string path = (string)JsonGet(sample, "path");
            Check(path.StartsWith("Samples~/") && Directory.Exists(Path.Combine(root, path)), "sample folder " + path + " exists under Samples~/");
            Check(Directory.GetFiles(Path.Combine(root, path), "*.cs").Length > 0, "sample " + path + " has a script");
        }

        var assembly = (Dictionary<string, object>)Json.Parse(File.ReadAllText(Path.Combine(Path.Combine(root, "Runtime"), "PathServer.Client.asmdef")));
        Equal("PathServer.Client", (string)assembly["name"], "asmdef name");
        Equal(true, JsonGet(assembly, "noEngineReferences"), "the asmdef references no engine assembly");
        Equal(0, ((List<object>)assembly["references"]).Count, "asmdef references");
        string friends = File.ReadAllText(Path.Combine(Path.Combine(root, "Runtime"), "AssemblyInfo.cs"));
        Check(friends.Contains("InternalsVisibleTo(\"" + typeof(Tests).Assembly.GetName().Name + "\")"),
            "Runtime/AssemblyInfo.cs names this program's assembly, " + typeof(Tests).Assembly.GetName().Name);

        var guids = new Dictionary<string, string>();
        int assets = 0;
        foreach (string asset in ImportedAssets(root))
        {
            assets++;
            string relative = asset.Substring(root.Length + 1);
            string metaFile = asset + ".meta";
            Check(File.Exists(metaFile), relative + " has no .meta (Unity ignores it in a git package)");
            string meta = File.ReadAllText(metaFile);
            var guid = Regex.Match(meta, "^guid: ([0-9a-f]{32})$", RegexOptions.Multiline);
            Check(meta.StartsWith("fileFormatVersion: 2\n") && guid.Success, relative + ".meta: fileFormatVersion 2 and a guid of 32 hex digits");
            string other;
            Check(!guids.TryGetValue(guid.Groups[1].Value, out other), relative + ".meta has the GUID of " + other + ".meta");
            guids[guid.Groups[1].Value] = relative;
            string importer = Directory.Exists(asset) ? "DefaultImporter" : relative.EndsWith(".cs") ? "MonoImporter"
                : relative.EndsWith(".asmdef") ? "AssemblyDefinitionImporter" : Path.GetFileName(relative) == "package.json" ? "PackageManifestImporter"
                : relative.EndsWith(".md") ? "TextScriptImporter" : "DefaultImporter";
            Check(Regex.IsMatch(meta, "^" + importer + ":$", RegexOptions.Multiline), relative + ".meta has a " + importer);
            Equal(Directory.Exists(asset), meta.Contains("\nfolderAsset: yes\n"), relative + ".meta folderAsset");
        }
        foreach (string metaFile in Directory.GetFiles(root, "*.meta", SearchOption.AllDirectories))
        {
            string asset = metaFile.Substring(0, metaFile.Length - ".meta".Length);
            Check(File.Exists(asset) || Directory.Exists(asset), metaFile.Substring(root.Length + 1) + " belongs to nothing");
        }
        Console.WriteLine("     | " + assets + " files and folders, each with its .meta");
    }

    static IEnumerable<string> ImportedAssets(string dir)
    {
        foreach (string entry in Directory.GetFileSystemEntries(dir).OrderBy(e => e, StringComparer.Ordinal))
        {
            string name = Path.GetFileName(entry);
            if (name.StartsWith(".") || name.EndsWith("~") || name.EndsWith(".meta")) continue;
            yield return entry;
            if (Directory.Exists(entry))
                foreach (string inner in ImportedAssets(entry)) yield return inner;
        }
    }

    // ---------------------------------------------------------------- EmbeddedServer

    static async Task EmbeddedNames()
    {
        await Task.Yield();
        Equal("linux-x86_64", EmbeddedServer.PlatformFolderName("linux", System.Runtime.InteropServices.Architecture.X64), "Linux on x86-64");
        Equal("windows-x86_64", EmbeddedServer.PlatformFolderName("windows", System.Runtime.InteropServices.Architecture.X64), "Windows on x86-64");
        Equal("macos-arm64", EmbeddedServer.PlatformFolderName("macos", System.Runtime.InteropServices.Architecture.Arm64), "macOS on Apple silicon");
        Equal("macos-x86_64", EmbeddedServer.PlatformFolderName("macos", System.Runtime.InteropServices.Architecture.X64), "macOS on Intel");
        Equal("windows-arm64", EmbeddedServer.PlatformFolderName("windows", System.Runtime.InteropServices.Architecture.Arm64), "Windows on ARM");
        Equal(null, EmbeddedServer.PlatformFolderName("linux", System.Runtime.InteropServices.Architecture.X86), "no bundle for 32-bit");
        Equal(null, EmbeddedServer.PlatformFolderName(null, System.Runtime.InteropServices.Architecture.X64), "no bundle for another system");
        if (System.Runtime.InteropServices.RuntimeInformation.IsOSPlatform(System.Runtime.InteropServices.OSPlatform.Linux)
            && System.Runtime.InteropServices.RuntimeInformation.OSArchitecture == System.Runtime.InteropServices.Architecture.X64)
            Equal("linux-x86_64", EmbeddedServer.PlatformFolder, "this machine's platform folder");
        Equal(Path.Combine(Path.Combine("root", "windows-x86_64"), "pathserver-server.exe"), EmbeddedServer.BundleExecutable("root", "windows-x86_64"), "the Windows bundle");
        Equal(Path.Combine(Path.Combine("root", "macos-arm64"), "pathserver-server"), EmbeddedServer.BundleExecutable("root", "macos-arm64"), "the macOS bundle");
        Equal(Path.Combine(Path.Combine("root", EmbeddedServer.PlatformFolder), EmbeddedServer.ExecutableName + (EmbeddedServer.PlatformFolder.StartsWith("windows") ? ".exe" : "")),
            EmbeddedServer.BundleExecutable("root"), "this machine's bundle");
        // CommandLineToArgvW's rules: backslashes are literal unless they precede a quote.
        var quoted = new[]
        {
            new[] { "serve", "serve" }, new[] { "", "\"\"" }, new[] { "a b", "\"a b\"" }, new[] { "say \"hi\"", "\"say \\\"hi\\\"\"" },
            new[] { @"C:\Program Files\Game\", "\"C:\\Program Files\\Game\\\\\"" }, new[] { @"C:\maps", "\"C:\\maps\"" },
            new[] { "o'brien", "\"o'brien\"" }, new[] { "tcp://127.0.0.1:*", "tcp://127.0.0.1:*" },
        };
        foreach (var pair in quoted) Equal(pair[1], EmbeddedServer.QuoteArgument(pair[0]), "argument " + pair[0]);
    }

    static EmbeddedServerOptions EmbeddedOptions(string bundleRoot)
    {
        var options = new EmbeddedServerOptions
        {
            BundleRoot = bundleRoot,
            Python = _python,
            MapsDir = Path.Combine(RepositoryDir(), "maps"),
            // Python finds this checkout's pathserver: -m looks in the working folder.
            WorkingDirectory = RepositoryDir(),
            Log = line => _log.Enqueue(string.Format(CultureInfo.InvariantCulture, "{0,7:0.000} s  server: {1}", _clock.Elapsed.TotalSeconds, line)),
        };
        options.Environment["PYTHONPATH"] = RepositoryDir();
        // Two cores shared with the main server and the tests.
        options.ExtraArguments.Add("--threads");
        options.ExtraArguments.Add("1");
        return options;
    }

    /// <summary>A new empty folder whose name has a space and a quote (arguments must survive them).</summary>
    static string NewFolder(string hint)
    {
        string dir = Path.Combine(Path.GetTempPath(), "pathserver-csharp " + hint + " 'x' " + Guid.NewGuid().ToString("N").Substring(0, 8));
        Directory.CreateDirectory(dir);
        return dir;
    }

    static void RemoveFolder(string dir)
    {
        try { Directory.Delete(dir, true); }
        catch (IOException) { }
        catch (UnauthorizedAccessException) { }
    }

    /// <summary>A stand-in bundle: a shell script at BundleRoot/PLATFORM/pathserver-server with <paramref name="body"/>.</summary>
    static string FakeBundle(string root, string body, bool executable = true)
    {
        string file = EmbeddedServer.BundleExecutable(root);
        Directory.CreateDirectory(Path.GetDirectoryName(file));
        File.WriteAllText(file, "#!/bin/sh\n" + body + "\n");
        if (executable)
        {
            using (var chmod = Process.Start(new ProcessStartInfo("chmod", "+x " + EmbeddedServer.QuoteArgument(file)) { UseShellExecute = false }))
            {
                Check(chmod.WaitForExit(10000) && chmod.ExitCode == 0, "chmod +x " + file);
            }
        }
        return file;
    }

    static bool ProcessAlive(int pid)
    {
        try
        {
            using (var process = Process.GetProcessById(pid)) return !process.HasExited;
        }
        catch (ArgumentException) { return false; }
        catch (InvalidOperationException) { return false; }
    }

    /// <summary>The path on the sample map "example" through an embedded server, compared with the main server's answer.</summary>
    static async Task EmbeddedAnswers(EmbeddedServer server)
    {
        Check(Regex.IsMatch(server.Endpoint, @"^tcp://127\.0\.0\.1:\d+$"), "Endpoint names a loopback port: " + server.Endpoint);
        Check(server.Endpoint != _endpoint, "a port of its own, not the main server's");
        PathResult embedded;
        using (var client = NewClient(server.Endpoint))
            embedded = await client.FindPathAsync(new PathPoint(2.5f, 2.5f), new PathPoint(60.5f, 60.5f), 1, new PathOptions { Map = "example" });
        Equal(PathStatus.Found, embedded.Status, "status on example");
        if (_serverUp)
        {
            using (var client = NewClient())
                SamePath(await client.FindPathAsync(new PathPoint(2.5f, 2.5f), new PathPoint(60.5f, 60.5f), 1, new PathOptions { Map = "example" }),
                    embedded, "the main server's answer");
        }
        Console.WriteLine(string.Format(CultureInfo.InvariantCulture, "     | {0} ready in {1:0} ms on {2}, path of {3} waypoints",
            server.Source, server.StartupTime.TotalMilliseconds, server.Endpoint, embedded.Path.Length));
    }

    static void StoppedByDispose(EmbeddedServer server)
    {
        int port = new Uri(server.Endpoint).Port;
        int pid = server.ProcessId;
        server.Dispose();
        Check(server.HasExited && !ProcessAlive(pid), "the process is gone after Dispose");
        server.Dispose();
        using (var probe = new TcpClient())
        {
            bool refused = false;
            try { probe.Connect(IPAddress.Loopback, port); }
            catch (SocketException) { refused = true; }
            Check(refused, "nothing listens on port " + port + " after Dispose");
        }
    }

    static async Task EmbeddedFallsBackToPython()
    {
        string root = NewFolder("empty root");
        try
        {
            EmbeddedServer server = await EmbeddedServer.StartAsync(EmbeddedOptions(root));
            try
            {
                Equal(EmbeddedServerSource.Python, server.Source, "what runs without a bundle");
                Check(server.CommandLine.Contains(" -m pathserver serve --bind tcp://127.0.0.1:* --maps "), "the command: " + server.CommandLine);
                await EmbeddedAnswers(server);
            }
            finally
            {
                StoppedByDispose(server);
            }
        }
        finally
        {
            RemoveFolder(root);
        }
    }

    static async Task EmbeddedPrefersTheBundle()
    {
        string root = NewFolder("bundles");
        try
        {
            string arguments = Path.Combine(root, "arguments.txt");
            FakeBundle(root, "printf '%s\\n' \"$@\" > " + EmbeddedServer.QuoteArgument(arguments) + "\nexec "
                + EmbeddedServer.QuoteArgument(_python.Contains("/") ? Path.GetFullPath(_python) : _python) + " -m pathserver \"$@\"");
            string maps = Path.Combine(root, "maps for the \"game\"");
            Directory.CreateDirectory(maps);
            File.Copy(Path.Combine(Path.Combine(RepositoryDir(), "maps"), "example.map"), Path.Combine(maps, "example.map"));
            var options = EmbeddedOptions(root);
            options.MapsDir = maps;
            options.Python = "/nonexistent/python3";   // not used: the bundle is there
            EmbeddedServer server = await EmbeddedServer.StartAsync(options);
            try
            {
                Equal(EmbeddedServerSource.Bundle, server.Source, "what runs with a bundle");
                Equal(string.Join("|", new[] { "serve", "--bind", "tcp://127.0.0.1:*", "--maps", maps, "--threads", "1" }),
                    string.Join("|", File.ReadAllLines(arguments)), "the arguments the bundle got");
                await EmbeddedAnswers(server);
            }
            finally
            {
                StoppedByDispose(server);
            }
        }
        finally
        {
            RemoveFolder(root);
        }
    }

    static async Task<string> EmbeddedFailure(EmbeddedServerOptions options, string expected, int withinMs)
    {
        var clock = Stopwatch.StartNew();
        var e = await Throws(() => EmbeddedServer.StartAsync(options), PathServerErrorCodes.EmbeddedServerFailed);
        Check(e.Message.Contains(expected), "the message says \"" + expected + "\": " + e.Message);
        Check(clock.ElapsedMilliseconds < withinMs, "failed within " + withinMs + " ms, took " + clock.ElapsedMilliseconds);
        return e.Message;
    }

    static async Task EmbeddedFailures()
    {
        string root = NewFolder("failures");
        try
        {
            var options = EmbeddedOptions(root);
            options.Mode = EmbeddedServerMode.Bundle;
            await EmbeddedFailure(options, "no bundle for " + EmbeddedServer.PlatformFolder + ": " + EmbeddedServer.BundleExecutable(root) + " does not exist", 1000);

            options = EmbeddedOptions(root);
            options.Mode = EmbeddedServerMode.Python;
            options.Python = "/nonexistent/python3";
            await EmbeddedFailure(options, "could not be run", 5000);

            FakeBundle(root, "echo 'pathserver: loading maps'\necho 'boom: no such map folder' >&2\nexit 3");
            string message = await EmbeddedFailure(EmbeddedOptions(root), "exited with code 3 before it was ready", 5000);
            Check(message.Contains("boom: no such map folder") && message.Contains("pathserver: loading maps"), "the message quotes its output: " + message);
            options = EmbeddedOptions(root);
            options.Mode = EmbeddedServerMode.Python;   // the bundle there is passed over
            options.Python = "/nonexistent/python3";
            await EmbeddedFailure(options, "(/nonexistent/python3 -m pathserver serve --bind", 5000);

            string pidFile = Path.Combine(root, "pid");
            FakeBundle(root, "echo $$ > " + EmbeddedServer.QuoteArgument(pidFile) + "\necho 'pathserver: compiling'\nexec sleep 30");
            options = EmbeddedOptions(root);
            options.StartTimeout = TimeSpan.FromSeconds(1);
            message = await EmbeddedFailure(options, "printed no ready line within 1 s; stopped it", 5000);
            Check(message.Contains("pathserver: compiling"), "the message quotes its output: " + message);
            Check(!ProcessAlive(int.Parse(File.ReadAllText(pidFile).Trim())), "the silent server was stopped");

            File.Delete(pidFile);
            using (var cancel = new CancellationTokenSource(300))
            {
                var clock = Stopwatch.StartNew();
                bool cancelled = false;
                try { await EmbeddedServer.StartAsync(EmbeddedOptions(root), cancel.Token); }
                catch (OperationCanceledException) { cancelled = true; }
                Check(cancelled && clock.ElapsedMilliseconds < 5000, "cancelling gives OperationCanceledException at once");
                await Eventually(() => File.Exists(pidFile) && File.ReadAllText(pidFile).Trim().Length > 0, "the pid file");
                Check(!ProcessAlive(int.Parse(File.ReadAllText(pidFile).Trim())), "the cancelled server was stopped");
            }

            FakeBundle(root, "echo 'pathserver ready on somewhere'\nexec sleep 30");
            await EmbeddedFailure(EmbeddedOptions(root), "printed a ready line without a tcp://HOST:PORT endpoint", 5000);

            // Ready, then gone: the start succeeds, and Log says when it exits.
            FakeBundle(root, "echo 'pathserver ready on tcp://127.0.0.1:9 (0 maps)'\nsleep 1\nexit 4");
            var lines = new System.Collections.Concurrent.ConcurrentQueue<string>();
            options = EmbeddedOptions(root);
            options.Log = lines.Enqueue;
            using (var server = await EmbeddedServer.StartAsync(options))
            {
                Equal("tcp://127.0.0.1:9", server.Endpoint, "the endpoint of the ready line");
                await Eventually(() => server.HasExited && lines.Any(line => line.Contains("exited with code 4")), "a log line saying it exited");
            }

            File.Delete(EmbeddedServer.BundleExecutable(root));
            FakeBundle(root, "exit 0", executable: false);
            await EmbeddedFailure(EmbeddedOptions(root), "`chmod +x` it", 5000);
        }
        finally
        {
            RemoveFolder(root);
        }
    }

    // A bundle from `pathserver bundle OUT_DIR`: OUT_DIR is taken as the platform folder
    // (Platform = its name, BundleRoot = its parent), so that nothing is copied or linked.
    static async Task EmbeddedRealBundle()
    {
        string folder = Path.GetFullPath(_bundle).TrimEnd(Path.DirectorySeparatorChar);
        var options = new EmbeddedServerOptions
        {
            BundleRoot = Path.GetDirectoryName(folder),
            Platform = Path.GetFileName(folder),
            Mode = EmbeddedServerMode.Bundle,
            Log = line => _log.Enqueue(string.Format(CultureInfo.InvariantCulture, "{0,7:0.000} s  bundle: {1}", _clock.Elapsed.TotalSeconds, line)),
        };
        options.ExtraArguments.Add("--threads");
        options.ExtraArguments.Add("1");
        EmbeddedServer server = await EmbeddedServer.StartAsync(options);
        try
        {
            Equal(EmbeddedServerSource.Bundle, server.Source, "what runs");
            await EmbeddedAnswers(server);
        }
        finally
        {
            StoppedByDispose(server);
        }
    }
}
