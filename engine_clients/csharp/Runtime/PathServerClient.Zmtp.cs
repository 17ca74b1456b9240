// PathServerClient.Zmtp.cs: part of the pathserver C# client (PathServerClient.cs lists its
// files): the connection (reader and writer threads, handshake, heartbeats, reconnects)
// and Zmtp, ZMTP 3.x framing with the NULL mechanism.

using System;
using System.Collections.Generic;
using System.Diagnostics;
using System.IO;
using System.Net;
using System.Net.Sockets;
using System.Text;
using System.Threading;
using System.Threading.Tasks;

namespace PathServer
{
    public sealed partial class PathServerClient
    {
        #region The connection

        sealed class Connection
        {
            public int Number;
            public TcpClient Tcp;
            public NetworkStream Stream;
            public long LastReceiveTicks;
            public long LastSendTicks;
            public Zmtp.FrameReader Reader;
            public volatile string CloseReason;
            public readonly object WriteLock = new object();

            public void Close(string reason = null)
            {
                if (reason != null && CloseReason == null) CloseReason = reason;
                try
                {
                    // Shutdown wakes a reader blocked in Receive on every platform; Close alone may not.
                    Tcp.Client.Shutdown(SocketShutdown.Both);
                }
                catch (Exception)
                {
                    // Already closed.
                }
                Tcp.Close();
            }
        }

        void ReaderLoop()
        {
            int failures = 0;
            while (!_disposed)
            {
                Connection connection = null;
                string reason;
                try
                {
                    connection = OpenConnection();
                    failures = 0;
                    _current = connection;
                    Interlocked.Increment(ref _connectionCount);
                    WriteLog("connected to " + Endpoint);
                    // Queued before WaitForConnectionAsync resumes: the next drain after it raises it.
                    RaiseConnectionChanged(true, null);
                    _connectedSignal.TrySetResult(true);
                    // Lazy Pirate: whatever was in flight on the old connection goes out again, in
                    // id order. The writer skips anything already written to this connection.
                    var ids = new List<long>(_pending.Keys);
                    ids.Sort();
                    foreach (var id in ids)
                    {
                        Pending pending;
                        if (_pending.TryGetValue(id, out pending)) _outbox.Enqueue(new Outgoing { Request = pending });
                    }
                    _outboxSignal.Set();
                    ReadMessages(connection);  // returns only once disposed; otherwise it throws
                    reason = "the client was disposed";
                }
                catch (Exception e)
                {
                    reason = DescribeError(e);
                }
                if (connection != null && connection.CloseReason != null) reason = connection.CloseReason;
                if (connection != null)
                {
                    connection.Close();
                    if (_current == connection)
                    {
                        _current = null;
                        if (_connectedSignal.Task.IsCompleted) _connectedSignal = NewSignal();
                        WriteLog("disconnected from " + Endpoint + ": " + reason);
                        RaiseConnectionChanged(false, reason);
                    }
                }
                if (_disposed) break;
                if (connection == null && reason != _lastConnectionError)
                    WriteLog("cannot connect to " + Endpoint + ": " + reason + " (retrying)");
                _lastConnectionError = reason;
                double baseMs = ReconnectInterval.TotalMilliseconds * Math.Pow(2, Math.Min(failures, 16));
                double delayMs = Math.Min(ReconnectIntervalMax.TotalMilliseconds, baseMs);
                lock (_jitter) delayMs *= 0.8 + 0.4 * _jitter.NextDouble();
                failures++;
                _disposedEvent.WaitOne(TimeSpan.FromMilliseconds(delayMs));
            }
        }

        static string DescribeError(Exception e)
        {
            var aggregate = e as AggregateException;
            if (aggregate != null && aggregate.InnerException != null) e = aggregate.InnerException;
            if (e is IOException && e.InnerException != null) e = e.InnerException;
            return e.Message;
        }

        Connection OpenConnection()
        {
            IPAddress[] addresses;
            IPAddress literal;
            if (IPAddress.TryParse(_host, out literal))
                addresses = new[] { literal };
            else
                addresses = Dns.GetHostAddresses(_host);
            Exception last = new SocketException((int)SocketError.HostNotFound);
            foreach (var address in addresses)
            {
                var tcp = new TcpClient(address.AddressFamily);
                try
                {
                    var connecting = tcp.ConnectAsync(address, _port);
                    if (!connecting.Wait(ConnectTimeout))
                    {
                        connecting.ContinueWith(t => { var ignored = t.Exception; }, TaskContinuationOptions.OnlyOnFaulted);
                        throw new TimeoutException("connecting to " + Endpoint + " timed out");
                    }
                    // Nagle's algorithm would hold a small request until the server ACKs the
                    // previous segment, an ACK the server delays: the first request after
                    // connecting waited for it. Set on the connected socket.
                    tcp.Client.NoDelay = true;
                    var connection = new Connection { Tcp = tcp, Stream = tcp.GetStream() };
                    Handshake(connection);
                    return connection;
                }
                catch (Exception e)
                {
                    tcp.Close();
                    last = e;
                }
            }
            throw last;
        }

        void Handshake(Connection connection)
        {
            var tcp = connection.Tcp;
            var stream = connection.Stream;
            tcp.ReceiveTimeout = (int)ConnectTimeout.TotalMilliseconds;
            tcp.SendTimeout = (int)ConnectTimeout.TotalMilliseconds;
            stream.Write(Zmtp.Greeting, 0, Zmtp.Greeting.Length);
            var greeting = new byte[64];
            ReadExactly(stream, greeting, 0, 64);
            Zmtp.CheckGreeting(greeting);
            var ready = Zmtp.ReadyCommand("DEALER");
            stream.Write(ready, 0, ready.Length);
            var reader = new Zmtp.FrameReader(stream);
            while (true)
            {
                var frame = reader.ReadFrame();
                if (!frame.IsCommand) throw new IOException("the server sent a message before its READY command");
                var command = Zmtp.ParseCommand(frame.Body);
                if (command.Name == "READY") break;
                if (command.Name == "ERROR") throw new IOException("the server refused the handshake: " + Zmtp.ErrorReason(command.Data));
            }
            connection.Number = Interlocked.Increment(ref _connectionNumbers);
            tcp.ReceiveTimeout = 0;  // the writer's heartbeat check drops a silent connection instead
            tcp.SendTimeout = (int)Math.Max(5000, HeartbeatTimeout.TotalMilliseconds);
            connection.Reader = reader;
            long now = Stopwatch.GetTimestamp();
            connection.LastReceiveTicks = now;
            connection.LastSendTicks = now;
        }

        void ReadMessages(Connection connection)
        {
            var reader = connection.Reader;
            var frames = new List<byte[]>();
            while (!_disposed)
            {
                var frame = reader.ReadFrame();
                Interlocked.Exchange(ref connection.LastReceiveTicks, Stopwatch.GetTimestamp());
                if (frame.IsCommand)
                {
                    var command = Zmtp.ParseCommand(frame.Body);
                    if (command.Name == "PING")
                    {
                        // PING carries a 2-byte TTL, then a context that PONG must echo.
                        int contextLength = Math.Max(0, command.Data.Length - 2);
                        var context = new byte[contextLength];
                        Buffer.BlockCopy(command.Data, command.Data.Length - contextLength, context, 0, contextLength);
                        _outbox.Enqueue(new Outgoing { Control = Zmtp.Command("PONG", context), ConnectionNumber = connection.Number });
                        _outboxSignal.Set();
                    }
                    else if (command.Name == "ERROR")
                    {
                        throw new IOException("the server sent ERROR: " + Zmtp.ErrorReason(command.Data));
                    }
                    continue;  // PONG and commands we do not know are fine to ignore
                }
                frames.Add(frame.Body);
                if (frame.More) continue;
                // The reply mirrors our envelope: an empty delimiter, then the msgpack body.
                var body = frames[frames.Count - 1];
                frames.Clear();
                IDictionary<string, object> reply;
                try
                {
                    reply = MsgPack.Decode(body) as IDictionary<string, object>;
                }
                catch (Exception e)
                {
                    WriteLog("could not decode a reply (" + body.Length + " bytes): " + e.Message);
                    continue;
                }
                if (reply == null)
                {
                    WriteLog("a reply that is not a msgpack map");
                    continue;
                }
                OnReply(reply);
            }
        }

        void WriterLoop()
        {
            while (!_disposed)
            {
                _outboxSignal.WaitOne(HousekeepingInterval());
                Outgoing item;
                while (!_disposed && _outbox.TryDequeue(out item))
                {
                    // Read _current per item: a connection made after this item was queued is the
                    // one it must go to (the reader re-queues only what was pending at connect time).
                    var connection = _current;
                    if (connection == null) continue;  // re-queued by the reader on the next connect
                    if (item.Request != null)
                    {
                        var pending = item.Request;
                        if (Volatile.Read(ref pending.Finished) != 0 || pending.SentOn == connection.Number) continue;
                        pending.SentOn = connection.Number;
                        Write(connection, pending.Message);
                    }
                    else if (item.ConnectionNumber == connection.Number)
                    {
                        Write(connection, item.Control);
                    }
                }
                var current = _current;
                if (current != null) Heartbeat(current);
            }
        }

        int HousekeepingInterval()
        {
            double interval = HeartbeatInterval > TimeSpan.Zero ? HeartbeatInterval.TotalMilliseconds / 4 : 250;
            return (int)Math.Max(10, Math.Min(250, interval));
        }

        void Heartbeat(Connection connection)
        {
            long now = Stopwatch.GetTimestamp();
            double silentMs = (now - Interlocked.Read(ref connection.LastReceiveTicks)) * 1000.0 / Stopwatch.Frequency;
            double idleMs = (now - Interlocked.Read(ref connection.LastSendTicks)) * 1000.0 / Stopwatch.Frequency;
            if (HeartbeatTimeout > TimeSpan.Zero && silentMs > HeartbeatTimeout.TotalMilliseconds)
            {
                // The reader sees the close, reconnects and re-sends what is in flight.
                connection.Close("nothing from the server for " + (int)silentMs + " ms (HeartbeatTimeout)");
                return;
            }
            if (HeartbeatInterval > TimeSpan.Zero && idleMs > HeartbeatInterval.TotalMilliseconds)
            {
                // TTL in deciseconds tells the server how long to wait for our next traffic.
                int ttl = (int)Math.Min(ushort.MaxValue, Math.Max(HeartbeatTimeout.TotalMilliseconds, HeartbeatInterval.TotalMilliseconds) / 100);
                Write(connection, Zmtp.Command("PING", new byte[] { (byte)(ttl >> 8), (byte)ttl }));
            }
        }

        void Write(Connection connection, byte[] data)
        {
            try
            {
                lock (connection.WriteLock) connection.Stream.Write(data, 0, data.Length);
                Interlocked.Exchange(ref connection.LastSendTicks, Stopwatch.GetTimestamp());
            }
            catch (Exception e)
            {
                // Anything written to this connection and unanswered is re-sent on the next one.
                connection.Close("write failed: " + DescribeError(e));
            }
        }

        static void ReadExactly(Stream stream, byte[] buffer, int offset, int count)
        {
            while (count > 0)
            {
                int n = stream.Read(buffer, offset, count);
                if (n <= 0) throw new EndOfStreamException("the server closed the connection");
                offset += n;
                count -= n;
            }
        }

        #endregion
    }

    #region Zmtp

    /// <summary>ZMTP 3.x framing (ZeroMQ RFC 23/37) with the NULL mechanism, as a DEALER needs it.</summary>
    internal static class Zmtp
    {
        /// <summary>Largest frame accepted from the server; a larger length means a broken stream.</summary>
        public const long MaxFrameSize = 256L * 1024 * 1024;

        /// <summary>
        /// Our 64-byte greeting: signature ff 00*8 7f, version 3.0, mechanism "NULL" padded to 20
        /// bytes, as-server 0, 31 bytes of filler.
        /// </summary>
        public static readonly byte[] Greeting = BuildGreeting();

        static byte[] BuildGreeting()
        {
            var greeting = new byte[64];
            greeting[0] = 0xff;
            greeting[9] = 0x7f;
            greeting[10] = 3;
            greeting[11] = 0;
            Encoding.ASCII.GetBytes("NULL", 0, 4, greeting, 12);
            return greeting;
        }

        /// <summary>Accepts any 3.x peer with the NULL mechanism; the padding bytes are not checked.</summary>
        public static void CheckGreeting(byte[] greeting)
        {
            if (greeting.Length < 64 || greeting[0] != 0xff || (greeting[9] & 1) != 1)
                throw new IOException("not a ZeroMQ peer (bad ZMTP signature); is the endpoint a pathserver?");
            if (greeting[10] < 3)
                throw new IOException("the peer speaks ZMTP " + greeting[10] + ".x; 3.x is needed");
            string mechanism = Encoding.ASCII.GetString(greeting, 12, 20).TrimEnd('\0');
            if (mechanism != "NULL")
                throw new IOException("the server wants the " + mechanism + " security mechanism; this client speaks NULL only");
        }

        /// <summary>READY with one property, Socket-Type.</summary>
        public static byte[] ReadyCommand(string socketType)
        {
            var data = new List<byte>();
            AppendProperty(data, "Socket-Type", Encoding.ASCII.GetBytes(socketType));
            return Command("READY", data.ToArray());
        }

        static void AppendProperty(List<byte> data, string name, byte[] value)
        {
            data.Add((byte)name.Length);
            data.AddRange(Encoding.ASCII.GetBytes(name));
            data.Add((byte)(value.Length >> 24));
            data.Add((byte)(value.Length >> 16));
            data.Add((byte)(value.Length >> 8));
            data.Add((byte)value.Length);
            data.AddRange(value);
        }

        /// <summary>A command frame: flags 0x04 (0x06 when long), size, name length, name, data.</summary>
        public static byte[] Command(string name, byte[] data)
        {
            var body = new byte[1 + name.Length + data.Length];
            body[0] = (byte)name.Length;
            Encoding.ASCII.GetBytes(name, 0, name.Length, body, 1);
            Buffer.BlockCopy(data, 0, body, 1 + name.Length, data.Length);
            var output = new MemoryStream();
            AppendFrame(output, 0x04, body, false);
            return output.ToArray();
        }

        /// <summary>
        /// A message as a DEALER sends it: an empty delimiter frame (01 00) then the body, so the
        /// ROUTER sees the same envelope a REQ socket would send; or the body alone.
        /// </summary>
        public static byte[] EncodeMessage(byte[] body, bool withDelimiter = true)
        {
            return EncodeMessage(body, body.Length, withDelimiter);
        }

        /// <summary>EncodeMessage for the first length bytes of body, into one array of the exact size.</summary>
        public static byte[] EncodeMessage(byte[] body, int length, bool withDelimiter)
        {
            bool large = length > 255;
            int header = large ? 9 : 2;
            var message = new byte[(withDelimiter ? 2 : 0) + header + length];
            int at = 0;
            if (withDelimiter)
            {
                message[at++] = 0x01;  // an empty frame, more to come
                message[at++] = 0;
            }
            if (large)
            {
                message[at++] = 0x02;
                for (int shift = 56; shift >= 0; shift -= 8) message[at++] = (byte)((long)length >> shift);
            }
            else
            {
                message[at++] = 0;
                message[at++] = (byte)length;
            }
            Buffer.BlockCopy(body, 0, message, at, length);
            return message;
        }

        static void AppendFrame(MemoryStream output, byte flags, byte[] body, bool more)
        {
            if (more) flags |= 0x01;
            if (body.Length <= 255)
            {
                output.WriteByte(flags);
                output.WriteByte((byte)body.Length);
            }
            else
            {
                output.WriteByte((byte)(flags | 0x02));
                long length = body.Length;
                for (int shift = 56; shift >= 0; shift -= 8) output.WriteByte((byte)(length >> shift));
            }
            output.Write(body, 0, body.Length);
        }

        public sealed class Frame
        {
            public bool More { get; set; }
            public bool IsCommand { get; set; }
            public byte[] Body { get; set; }
        }

        public struct ParsedCommand
        {
            public string Name { get; set; }
            public byte[] Data { get; set; }
        }

        /// <summary>An ERROR command's data: a 1-byte length, then the reason.</summary>
        public static string ErrorReason(byte[] data)
        {
            if (data.Length == 0) return "(no reason given)";
            return Encoding.UTF8.GetString(data, 1, Math.Min(data[0], data.Length - 1));
        }

        public static ParsedCommand ParseCommand(byte[] body)
        {
            if (body.Length < 1 || body[0] + 1 > body.Length) throw new IOException("malformed ZMTP command");
            var data = new byte[body.Length - 1 - body[0]];
            Buffer.BlockCopy(body, 1 + body[0], data, 0, data.Length);
            return new ParsedCommand { Name = Encoding.ASCII.GetString(body, 1, body[0]), Data = data };
        }

        /// <summary>A READY command's properties (name -> value), parsed generically.</summary>
        public static Dictionary<string, byte[]> ParseProperties(byte[] data)
        {
            var properties = new Dictionary<string, byte[]>();
            int at = 0;
            while (at < data.Length)
            {
                int nameLength = data[at++];
                if (at + nameLength + 4 > data.Length) throw new IOException("malformed ZMTP property");
                string name = Encoding.ASCII.GetString(data, at, nameLength);
                at += nameLength;
                int valueLength = (data[at] << 24) | (data[at + 1] << 16) | (data[at + 2] << 8) | data[at + 3];
                at += 4;
                if (valueLength < 0 || at + valueLength > data.Length) throw new IOException("malformed ZMTP property");
                var value = new byte[valueLength];
                Buffer.BlockCopy(data, at, value, 0, valueLength);
                at += valueLength;
                properties[name] = value;
            }
            return properties;
        }

        /// <summary>Splits bytes into frames (for tests and golden vectors); throws on a truncated frame.</summary>
        public static List<Frame> DecodeFrames(byte[] data)
        {
            var frames = new List<Frame>();
            var reader = new FrameReader(new MemoryStream(data));
            long end = data.Length;
            while (reader.Position < end) frames.Add(reader.ReadFrame());
            return frames;
        }

        /// <summary>Reads frames from a stream through its own buffer (NetworkStream reads are syscalls).</summary>
        public sealed class FrameReader
        {
            readonly Stream _stream;
            readonly byte[] _buffer = new byte[64 * 1024];
            int _start;
            int _end;
            long _consumed;

            public FrameReader(Stream stream)
            {
                _stream = stream;
            }

            public long Position { get { return _consumed; } }

            public Frame ReadFrame()
            {
                byte flags = ReadByte();
                long length;
                if ((flags & 0x02) != 0)
                {
                    length = 0;
                    for (int i = 0; i < 8; i++) length = (length << 8) | ReadByte();
                }
                else
                {
                    length = ReadByte();
                }
                if (length < 0 || length > MaxFrameSize) throw new IOException("ZMTP frame of " + length + " bytes is too large");
                var body = new byte[length];
                Read(body, 0, (int)length);
                return new Frame { More = (flags & 0x01) != 0, IsCommand = (flags & 0x04) != 0, Body = body };
            }

            byte ReadByte()
            {
                if (_start == _end) Fill();
                _consumed++;
                return _buffer[_start++];
            }

            void Read(byte[] target, int offset, int count)
            {
                while (count > 0)
                {
                    if (_start == _end)
                    {
                        if (count >= _buffer.Length)
                        {
                            // Large bodies go straight into their array.
                            int n = _stream.Read(target, offset, count);
                            if (n <= 0) throw new EndOfStreamException("the server closed the connection");
                            offset += n;
                            count -= n;
                            _consumed += n;
                            continue;
                        }
                        Fill();
                    }
                    int take = Math.Min(count, _end - _start);
                    Buffer.BlockCopy(_buffer, _start, target, offset, take);
                    _start += take;
                    offset += take;
                    count -= take;
                    _consumed += take;
                }
            }

            void Fill()
            {
                int n = _stream.Read(_buffer, 0, _buffer.Length);
                if (n <= 0) throw new EndOfStreamException("the server closed the connection");
                _start = 0;
                _end = n;
            }
        }
    }

    #endregion
}
