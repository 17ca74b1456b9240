// EmbeddedServer.cs: runs pathserver as a child process of the game and says where it listens.
//
// The companion of the client, PathServerClient*.cs (which does not need it): base class
// library only, no engine assembly, so the same file serves Unity, Godot .NET and console
// programs. It starts the server the way the Godot addon does:
//
//   1. a bundle built by `pathserver bundle OUT_DIR` on the platform it is for, its folder
//      copied to BundleRoot/<platform>/ so that the executable is
//      BundleRoot/<platform>/pathserver-server (pathserver-server.exe on Windows), where
//      <platform> is PlatformFolder, <os>-<cpu> as in the Godot addon: linux-x86_64,
//      windows-x86_64, macos-arm64, macos-x86_64, linux-arm64, windows-arm64;
//   2. else, in Mode Auto, `PYTHON -m pathserver` (the editor, a developer's machine);
//
// either with `serve --bind tcp://127.0.0.1:PORT [--maps DIR] [ExtraArguments...]`, PORT `*`
// (the server binds a free port) unless Port is set. It waits for the server's ready line,
// "pathserver ready on tcp://127.0.0.1:PORT (N maps)", at most StartTimeout; Endpoint is the
// endpoint that line names. Dispose() stops the process (so do the game's exit and, in the
// Unity editor, a domain reload).
//
//     using (var server = await EmbeddedServer.StartAsync(new EmbeddedServerOptions {
//                BundleRoot = Path.Combine(Application.streamingAssetsPath, "pathserver") }))
//     using (var client = new PathServerClient(server.Endpoint, "example")) { ... }
//
// A failure is a PathServerException with Code "embedded_server_failed" whose message names
// the command, what happened (no bundle where Mode Bundle requires one, could not be run,
// exited with code N before it was ready, no ready line within StartTimeout) and the server's
// last output lines. Every wait has a limit: nothing here can hang the game.

using System;
using System.Collections.Generic;
using System.ComponentModel;
using System.Diagnostics;
using System.Globalization;
using System.IO;
using System.Runtime.InteropServices;
using System.Text;
using System.Threading;
using System.Threading.Tasks;

namespace PathServer
{
    /// <summary>Which server EmbeddedServer starts.</summary>
    public enum EmbeddedServerMode
    {
        /// <summary>The bundle for this platform when BundleRoot has one, else Python.</summary>
        Auto,
        /// <summary>Only the bundle: a missing one is an error (a shipped game has no Python).</summary>
        Bundle,
        /// <summary>Only `PYTHON -m pathserver`, even when a bundle is there.</summary>
        Python,
    }

    /// <summary>What an EmbeddedServer runs.</summary>
    public enum EmbeddedServerSource
    {
        Bundle,
        Python,
    }

    /// <summary>How EmbeddedServer.StartAsync starts the server. Every member has a usable default.</summary>
    public sealed class EmbeddedServerOptions
    {
        /// <summary>
        /// The folder holding one bundle folder per platform: the executable is
        /// BundleRoot/&lt;EmbeddedServer.PlatformFolder&gt;/pathserver-server[.exe]. Unity:
        /// Path.Combine(Application.streamingAssetsPath, "pathserver"). Null: no bundle.
        /// </summary>
        public string BundleRoot { get; set; }
        public EmbeddedServerMode Mode { get; set; } = EmbeddedServerMode.Auto;
        /// <summary>The platform folder to look for under BundleRoot; null: this machine's (EmbeddedServer.PlatformFolder).</summary>
        public string Platform { get; set; }
        /// <summary>The Python that has pathserver installed, a command on PATH or a file: "python3" ("python" on Windows) unless set.</summary>
        public string Python { get; set; } = EmbeddedServer.DefaultPython;
        /// <summary>The folder of maps to serve (--maps); null: the server's own sample maps.</summary>
        public string MapsDir { get; set; }
        /// <summary>The loopback port to bind; 0 (the default): a free port the server picks and names in its ready line.</summary>
        public int Port { get; set; }
        /// <summary>More `serve` options, one string each, e.g. "--threads", "2".</summary>
        public IList<string> ExtraArguments { get; } = new List<string>();
        /// <summary>The process's working folder; null: the game's (Python finds a pathserver checkout there with `-m`).</summary>
        public string WorkingDirectory { get; set; }
        /// <summary>Environment variables set for the server on top of the game's (e.g. PYTHONPATH).</summary>
        public IDictionary<string, string> Environment { get; } = new Dictionary<string, string>();
        /// <summary>
        /// How long to wait for the ready line (default 300 s, as the Godot addon: a first
        /// `python -m pathserver` compiles its kernels; a bundle carries them compiled).
        /// </summary>
        public TimeSpan StartTimeout { get; set; } = TimeSpan.FromSeconds(300);
        /// <summary>Receives each line the server prints (stdout and stderr) and what this helper decides; called from background threads.</summary>
        public Action<string> Log { get; set; }
    }

    /// <summary>
    /// A pathserver process this game started: StartAsync returns once it listens on Endpoint;
    /// Dispose() stops it. Thread-safe.
    /// </summary>
    public sealed class EmbeddedServer : IDisposable
    {
        /// <summary>The bundle's executable without the ".exe" Windows adds (pathserver bundle names it so).</summary>
        public const string ExecutableName = "pathserver-server";
        /// <summary>What the server's one ready line starts with; the endpoint follows.</summary>
        public const string ReadyLinePrefix = "pathserver ready on ";
        /// <summary>How many of the server's last output lines RecentOutput() and failure messages keep.</summary>
        public const int OutputLinesKept = 20;

        // The operating-system half of the platform folders; the Godot addon uses the same names.
        const string Windows = "windows";
        const string MacOs = "macos";
        const string Linux = "linux";
        // Dispose() waits this long for the killed process to go; a failure this long for the
        // output the server printed before it exited.
        static readonly TimeSpan StopTimeout = TimeSpan.FromSeconds(5);
        static readonly TimeSpan OutputDrainTimeout = TimeSpan.FromSeconds(1);

        /// <summary>
        /// This machine's platform folder under BundleRoot: "linux-x86_64", "windows-x86_64",
        /// "macos-arm64", "macos-x86_64", ...; null where no bundle can run (see PlatformFolderName).
        /// </summary>
        public static string PlatformFolder { get; } = PlatformFolderName(CurrentOs(), RuntimeInformation.OSArchitecture);

        /// <summary>The Python command EmbeddedServerOptions.Python starts with.</summary>
        public static string DefaultPython
        {
            get { return RuntimeInformation.IsOSPlatform(OSPlatform.Windows) ? "python" : "python3"; }
        }

        /// <summary>
        /// Where the bundle for <paramref name="platform"/> (default: this machine's) would be
        /// under <paramref name="bundleRoot"/>; null when <paramref name="platform"/> is null and
        /// no bundle can run on this machine.
        /// </summary>
        public static string BundleExecutable(string bundleRoot, string platform = null)
        {
            if (bundleRoot == null) throw new ArgumentNullException("bundleRoot");
            platform = platform ?? PlatformFolder;
            if (platform == null) return null;
            string file = ExecutableName + (platform.StartsWith(Windows + "-", StringComparison.Ordinal) ? ".exe" : "");
            return Path.Combine(Path.Combine(bundleRoot, platform), file);
        }

        /// <summary>
        /// The platform folder of an operating system ("linux", "windows", "macos") and a CPU,
        /// "OS-x86_64" or "OS-arm64" (Godot's architecture names, as the Godot addon's folders);
        /// null for any other pair: no bundle is built for it (32-bit, other systems).
        /// </summary>
        internal static string PlatformFolderName(string os, Architecture architecture)
        {
            if (os != Linux && os != Windows && os != MacOs) return null;
            if (architecture == Architecture.X64) return os + "-x86_64";
            if (architecture == Architecture.Arm64) return os + "-arm64";
            return null;
        }

        static string CurrentOs()
        {
            if (RuntimeInformation.IsOSPlatform(OSPlatform.Windows)) return Windows;
            if (RuntimeInformation.IsOSPlatform(OSPlatform.OSX)) return MacOs;
            if (RuntimeInformation.IsOSPlatform(OSPlatform.Linux)) return Linux;
            return null;
        }

        /// <summary>The endpoint the server's ready line named, e.g. "tcp://127.0.0.1:40123": give it to PathServerClient.</summary>
        public string Endpoint { get; private set; }
        public EmbeddedServerSource Source { get; }
        /// <summary>The command as started (program and arguments), for messages.</summary>
        public string CommandLine { get; }
        public int ProcessId { get; private set; }
        /// <summary>From starting the process to its ready line.</summary>
        public TimeSpan StartupTime { get; private set; }

        /// <summary>Whether the process has ended (stopped by Dispose or on its own).</summary>
        public bool HasExited
        {
            get
            {
                try { return _process.HasExited; }
                catch (InvalidOperationException) { return true; }
            }
        }

        readonly Process _process;
        readonly Action<string> _log;
        readonly Queue<string> _output = new Queue<string>();
        readonly TaskCompletionSource<string> _ready =
            new TaskCompletionSource<string>(TaskCreationOptions.RunContinuationsAsynchronously);
        readonly ManualResetEvent _stdoutClosed = new ManualResetEvent(false);
        readonly ManualResetEvent _stderrClosed = new ManualResetEvent(false);
        readonly Stopwatch _clock = new Stopwatch();
        int _disposed;

        /// <summary>
        /// Starts the server (the file's overview says which command) and completes once it is ready,
        /// Endpoint set. Throws PathServerException "embedded_server_failed" when it cannot run, exits
        /// or is not ready within StartTimeout; OperationCanceledException when cancelled first.
        /// </summary>
        public static async Task<EmbeddedServer> StartAsync(EmbeddedServerOptions options,
            CancellationToken cancellationToken = default(CancellationToken))
        {
            if (options == null) throw new ArgumentNullException("options");
            if (options.Port < 0 || options.Port > 65535)
                throw new ArgumentOutOfRangeException("options", options.Port, "Port must be 0 (a free port) or 1..65535.");
            if (options.StartTimeout <= TimeSpan.Zero || options.StartTimeout.TotalMilliseconds > int.MaxValue)
                throw new ArgumentOutOfRangeException("options", options.StartTimeout, "StartTimeout must be positive and under 24 days.");
            cancellationToken.ThrowIfCancellationRequested();
            var server = new EmbeddedServer(options);
            try
            {
                await server.WaitUntilReady(options.StartTimeout, cancellationToken).ConfigureAwait(false);
            }
            catch
            {
                server.Dispose();
                throw;
            }
            return server;
        }

        /// <summary>StartAsync, blocking the calling thread until the server is ready or has failed (at most StartTimeout).</summary>
        public static EmbeddedServer Start(EmbeddedServerOptions options)
        {
            return StartAsync(options).GetAwaiter().GetResult();
        }

        EmbeddedServer(EmbeddedServerOptions options)
        {
            _log = options.Log;
            string platform = options.Platform ?? PlatformFolder;
            string bundle = options.BundleRoot == null ? null : BundleExecutable(options.BundleRoot, platform);
            bool useBundle = options.Mode != EmbeddedServerMode.Python && bundle != null && File.Exists(bundle);
            if (options.Mode == EmbeddedServerMode.Bundle && !useBundle)
            {
                throw new PathServerException(PathServerErrorCodes.EmbeddedServerFailed, options.BundleRoot == null
                    ? "Mode is Bundle but BundleRoot is not set: set it to the folder holding the <platform>/ bundle folders."
                    : platform == null
                    ? "no bundle can run here (" + RuntimeInformation.OSDescription + ", " + RuntimeInformation.OSArchitecture
                      + "): bundles are built for x86_64 and arm64 Linux, Windows and macOS."
                    : "no bundle for " + platform + ": " + bundle + " does not exist. Build one on " + platform
                      + " with `pathserver bundle OUT_DIR` and copy OUT_DIR's contents into " + Path.GetDirectoryName(bundle) + ".");
            }
            if (!useBundle && string.IsNullOrEmpty(options.Python))
                throw new PathServerException(PathServerErrorCodes.EmbeddedServerFailed,
                    "no bundle" + (bundle == null ? "" : " at " + bundle) + " and EmbeddedServerOptions.Python is empty.");

            var arguments = new List<string>();
            string program;
            if (useBundle)
            {
                // Absolute: a relative program would be looked up differently on each platform.
                program = Path.GetFullPath(bundle);
                Source = EmbeddedServerSource.Bundle;
            }
            else
            {
                program = options.Python;
                Source = EmbeddedServerSource.Python;
                arguments.Add("-m");
                arguments.Add("pathserver");
                if (bundle != null) Say("no bundle at " + bundle + ": running " + program + " -m pathserver");
            }
            arguments.Add("serve");
            arguments.Add("--bind");
            arguments.Add("tcp://127.0.0.1:" + (options.Port > 0 ? options.Port.ToString(CultureInfo.InvariantCulture) : "*"));
            if (options.MapsDir != null)
            {
                arguments.Add("--maps");
                arguments.Add(Path.GetFullPath(options.MapsDir));
            }
            arguments.AddRange(options.ExtraArguments);
            string argumentText = JoinArguments(arguments);
            CommandLine = QuoteArgument(program) + " " + argumentText;

            var info = new ProcessStartInfo(program, argumentText)
            {
                UseShellExecute = false,
                CreateNoWindow = true,   // no console window over the game on Windows
                RedirectStandardOutput = true,
                RedirectStandardError = true,
                StandardOutputEncoding = Encoding.UTF8,
                StandardErrorEncoding = Encoding.UTF8,
                WorkingDirectory = options.WorkingDirectory ?? "",
            };
            // Progress lines as they are printed, not when a buffer fills.
            info.Environment["PYTHONUNBUFFERED"] = "1";
            foreach (var pair in options.Environment) info.Environment[pair.Key] = pair.Value;

            _process = new Process { StartInfo = info, EnableRaisingEvents = true };
            _process.OutputDataReceived += (sender, e) => OnLine(e.Data, true);
            _process.ErrorDataReceived += (sender, e) => OnLine(e.Data, false);
            _process.Exited += (sender, e) => OnExited();
            Say("starting " + CommandLine);
            _clock.Start();
            try
            {
                if (!_process.Start()) throw new InvalidOperationException("Process.Start returned false");
            }
            catch (Exception e)
            {
                Interlocked.Exchange(ref _disposed, 1);
                _process.Dispose();
                throw Failure("could not be run: " + e.Message
                    + (useBundle ? " (is the file executable? `chmod +x` it after copying)" : ""));
            }
            ProcessId = _process.Id;
            Track(this);
            _process.BeginOutputReadLine();
            _process.BeginErrorReadLine();
        }

        async Task WaitUntilReady(TimeSpan timeout, CancellationToken cancellationToken)
        {
            using (var stop = CancellationTokenSource.CreateLinkedTokenSource(cancellationToken))
            {
                Task first = await Task.WhenAny(_ready.Task, Task.Delay(timeout, stop.Token)).ConfigureAwait(false);
                stop.Cancel();
                if (first != _ready.Task)
                {
                    cancellationToken.ThrowIfCancellationRequested();
                    throw Failure(string.Format(CultureInfo.InvariantCulture, "printed no ready line within {0} s; stopped it", timeout.TotalSeconds));
                }
            }
            Endpoint = await _ready.Task.ConfigureAwait(false);
            StartupTime = _clock.Elapsed;
            Say("ready on " + Endpoint + " after " + (long)StartupTime.TotalMilliseconds + " ms");
        }

        /// <summary>The server's last output lines (stdout and stderr as they came), at most OutputLinesKept.</summary>
        public string[] RecentOutput()
        {
            lock (_output) return _output.ToArray();
        }

        /// <summary>Stops the server (kills the process and waits for it, at most 5 s). Safe to call twice.</summary>
        public void Dispose()
        {
            if (Interlocked.Exchange(ref _disposed, 1) != 0) return;
            Untrack(this);
            // Canceled, not failed: nothing may be waiting, and a failed task nobody observes is reported.
            _ready.TrySetCanceled();
            try
            {
                if (!_process.HasExited)
                {
                    _process.Kill();
                    if (!_process.WaitForExit((int)StopTimeout.TotalMilliseconds))
                        Say("process " + ProcessId + " did not stop within " + StopTimeout.TotalSeconds + " s");
                }
            }
            catch (InvalidOperationException) { }   // it had already exited
            catch (Win32Exception e) { Say("could not stop process " + ProcessId + ": " + e.Message); }
            _process.Dispose();
        }

        void OnLine(string line, bool fromStdout)
        {
            if (line == null)
            {
                (fromStdout ? _stdoutClosed : _stderrClosed).Set();
                return;
            }
            lock (_output)
            {
                _output.Enqueue(line);
                if (_output.Count > OutputLinesKept) _output.Dequeue();
            }
            Say(line);
            if (!fromStdout || _ready.Task.IsCompleted || !line.StartsWith(ReadyLinePrefix, StringComparison.Ordinal)) return;
            string endpoint = line.Substring(ReadyLinePrefix.Length).Split(' ')[0];
            Uri parsed;
            if (endpoint.StartsWith("tcp://", StringComparison.Ordinal) && Uri.TryCreate(endpoint, UriKind.Absolute, out parsed) && parsed.Port > 0)
                _ready.TrySetResult(endpoint);
            else
                _ready.TrySetException(Failure("printed a ready line without a tcp://HOST:PORT endpoint"));
        }

        void OnExited()
        {
            // The pipes may still hold its last lines: wait for them a moment so the failure quotes them.
            _stdoutClosed.WaitOne(OutputDrainTimeout);
            _stderrClosed.WaitOne(OutputDrainTimeout);
            if (Volatile.Read(ref _disposed) != 0) return;
            string code;
            try { code = _process.ExitCode.ToString(); }
            catch (InvalidOperationException) { code = "unknown"; }
            if (!_ready.TrySetException(Failure("exited with code " + code + " before it was ready")))
                Say("the server exited with code " + code + " (the client will report \"disconnected\")");
        }

        PathServerException Failure(string how)
        {
            var message = new StringBuilder("the embedded server (" + CommandLine + ") " + how + ".");
            string[] lines = RecentOutput();
            if (lines.Length == 0) message.Append(" It printed nothing.");
            else message.Append(" Its last lines:\n  ").Append(string.Join("\n  ", lines));
            message.Append(Source == EmbeddedServerSource.Bundle
                ? "\nThe bundle must be built by `pathserver bundle OUT_DIR` on the platform it runs on."
                : "\nCheck EmbeddedServerOptions.Python (a Python with pathserver installed)"
                  + (PlatformFolder == null ? "." : ", or put a bundle in BundleRoot/" + PlatformFolder + "/."));
            return new PathServerException(PathServerErrorCodes.EmbeddedServerFailed, message.ToString());
        }

        void Say(string text)
        {
            var log = _log;
            if (log == null) return;
            try { log(text); }
            catch (Exception) { }   // a throwing logger must not stop the output reader
        }

        // Windows' rules (CommandLineToArgvW), which .NET applies on every platform; Mono on Unix
        // splits like a POSIX shell, which agrees on everything this produces except a run of
        // backslashes inside an argument that also needs quotes (not a path on Unix).
        internal static string JoinArguments(IEnumerable<string> arguments)
        {
            var text = new StringBuilder();
            foreach (string argument in arguments)
            {
                if (text.Length > 0) text.Append(' ');
                text.Append(QuoteArgument(argument));
            }
            return text.ToString();
        }

        // A POSIX shell also reads ' and \ outside quotes; inside double quotes both rules keep them.
        static readonly char[] NeedQuotes = { ' ', '\t', '\n', '"', '\'', '\\' };

        internal static string QuoteArgument(string argument)
        {
            if (argument.Length > 0 && argument.IndexOfAny(NeedQuotes) < 0) return argument;
            var quoted = new StringBuilder("\"");
            int backslashes = 0;
            foreach (char c in argument)
            {
                if (c == '\\')
                {
                    backslashes++;
                    continue;
                }
                // Backslashes are literal except before a quote: double them there, then escape the quote.
                quoted.Append('\\', c == '"' ? backslashes * 2 + 1 : backslashes);
                backslashes = 0;
                quoted.Append(c);
            }
            quoted.Append('\\', backslashes * 2).Append('"');
            return quoted.ToString();
        }

        #region Stopping what the game forgot

        // Servers not yet disposed, stopped when the game exits or (Unity editor) its scripts
        // reload, so that no server outlives the game that started it. A crash of the game
        // still leaves its server running.
        static readonly HashSet<EmbeddedServer> Running = new HashSet<EmbeddedServer>();
        static bool _exitHooked;

        static void Track(EmbeddedServer server)
        {
            lock (Running)
            {
                Running.Add(server);
                if (_exitHooked) return;
                _exitHooked = true;
                AppDomain.CurrentDomain.ProcessExit += (sender, e) => StopAll();
                AppDomain.CurrentDomain.DomainUnload += (sender, e) => StopAll();
            }
        }

        static void Untrack(EmbeddedServer server)
        {
            lock (Running) Running.Remove(server);
        }

        static void StopAll()
        {
            EmbeddedServer[] servers;
            lock (Running)
            {
                servers = new EmbeddedServer[Running.Count];
                Running.CopyTo(servers);
            }
            foreach (var server in servers) server.Dispose();
        }

        #endregion
    }
}
