// PathServerClient.Requests.cs: part of the pathserver C# client (PathServerClient.cs lists its
// files): the main-thread event queue; requests (ids, timeouts, replies) and reading replies.

using System;
using System.Collections.Generic;
using System.Globalization;
using System.IO;
using System.Threading;
using System.Threading.Tasks;

namespace PathServer
{
    public sealed partial class PathServerClient
    {
        #region The main-thread event queue

        void RaiseEvent(Action raise)
        {
            if (DispatchEventsOnMainThread)
            {
                QueueForMainThread(raise);
                return;
            }
            try
            {
                raise();
            }
            catch (Exception e)
            {
                WriteLog("an event handler threw: " + e);
            }
        }

        // Bounded: when full, the oldest item makes room (see EventQueueCapacity).
        void QueueForMainThread(Action action)
        {
            long dropped = 0;
            bool log = false;
            lock (_mainThreadQueue)
            {
                while (_mainThreadQueue.Count >= _eventQueueCapacity)
                {
                    _mainThreadQueue.Dequeue();
                    dropped++;
                }
                _mainThreadQueue.Enqueue(action);
                if (dropped > 0 && !_dropLogged)
                {
                    _dropLogged = true;
                    log = true;
                }
            }
            if (dropped == 0) return;
            long total = Interlocked.Add(ref _droppedEvents, dropped);
            if (log)
                WriteLog("the event queue is full (EventQueueCapacity " + _eventQueueCapacity + "): dropping the oldest events ("
                    + total + " so far); is DrainMainThreadQueue() called every frame?");
        }

        void RaiseConnectionChanged(bool connected, string reason)
        {
            RaiseEvent(() =>
            {
                var handler = ConnectionChanged;
                if (handler != null) handler(this, new ConnectionChangedEventArgs { IsConnected = connected, Reason = reason });
            });
        }

        #endregion

        #region Requests

        sealed class Pending
        {
            public long Id;
            public string Op;
            public byte[] Message;            // the ZMTP frames, ready to write
            public volatile int SentOn = -1;  // the connection number it was last written to
            public DateTime Deadline;
            public TimeSpan Timeout;
            public Timer TimeoutTimer;
            public CancellationTokenRegistration CancelRegistration;
            public Action<IDictionary<string, object>, Exception> OnDone;
            public int Finished;
        }

        sealed class Outgoing
        {
            public Pending Request;
            public byte[] Control;
            public int ConnectionNumber;
        }

        sealed class StartedPath
        {
            public long Id;
            public Task<PathResult> Task;
        }

        // The body of a path request, without its id, in the key order of docs/protocol.md.
        internal MsgPackMap PathRequestBody(PathPoint start, PathPoint goal, UnitSize unitSize, PathOptions options)
        {
            return PathRequestBody(start, goal, null, unitSize, options);
        }

        // With goals (not null) in place of goal. unit_size is left out when 1, the wire's default;
        // packed comes last, and only when asked for.
        internal MsgPackMap PathRequestBody(PathPoint start, PathPoint goal, IList<PathPoint> goals, UnitSize unitSize, PathOptions options,
            bool packed = false)
        {
            string map = MapName(options);
            var body = new MsgPackMap { { "op", "path" }, { "map", map }, { "start", PointToWire(start) } };
            if (goals == null) body.Add("goal", PointToWire(goal));
            else body.Add("goals", PointsToWire(goals, "goals"));
            AddUnitSize(body, unitSize);
            options.WriteTo(body, "path", Triples(map, options, start.Floor != 0 || goal.Floor != 0 || AnyFloor(goals)));
            AddPacked(body, packed);
            return body;
        }

        // "packed": true, unless the caller's Extra already says (a scenario sends the wire's fields as they are).
        static void AddPacked(MsgPackMap body, bool packed)
        {
            if (!packed) return;
            foreach (var pair in body)
                if (pair.Key == "packed") return;
            body.Add("packed", true);
        }

        static void AddUnitSize(MsgPackMap body, UnitSize unitSize)
        {
            if (unitSize.Width != 1 || unitSize.Height != 1) body.Add("unit_size", unitSize.ToWire());
        }

        StartedPath StartPath(PathPoint start, PathPoint goal, UnitSize unitSize, PathOptions options, object state, CancellationToken ct)
        {
            return StartPath(start, goal, null, unitSize, options, state, ct);
        }

        StartedPath StartPath(PathPoint start, PathPoint goal, IList<PathPoint> goals, UnitSize unitSize, PathOptions options, object state,
            CancellationToken ct)
        {
            options = options ?? new PathOptions();
            var body = PathRequestBody(start, goal, goals, unitSize, options, PackedAnswers);
            var space = options.Space;
            long id;
            var task = SendAsync(body, options.Timeout, ct, (replyId, reply) =>
            {
                var result = ParsePathReply(reply, replyId, space);
                result.State = state;
                RaiseEvent(() =>
                {
                    var handler = PathFound;
                    if (handler != null) handler(this, new PathFoundEventArgs { RequestId = replyId, Result = result, State = state });
                });
                return result;
            }, (failedId, error) =>
            {
                RaiseEvent(() =>
                {
                    var handler = PathFailed;
                    if (handler != null) handler(this, new PathFailedEventArgs { RequestId = failedId, Error = error, State = state });
                });
            }, out id);
            return new StartedPath { Id = id, Task = task };
        }

        Task<T> SendAsync<T>(MsgPackMap body, TimeSpan? timeout, CancellationToken ct, Func<long, IDictionary<string, object>, T> parse)
        {
            long ignored;
            return SendAsync(body, timeout, ct, parse, null, out ignored);
        }

        // Registers the request, queues it for the writer and returns a task completed by the
        // reader (reply), the timeout timer or the cancellation token, whichever comes first.
        Task<T> SendAsync<T>(MsgPackMap body, TimeSpan? timeout, CancellationToken ct,
            Func<long, IDictionary<string, object>, T> parse, Action<long, PathServerException> onFailed, out long id)
        {
            StartThreads();  // after Dispose the request fails "disconnected" below
            id = Interlocked.Increment(ref _nextId);
            body.Insert(0, new KeyValuePair<string, object>("id", id));
            var tcs = new TaskCompletionSource<T>(TaskCreationOptions.RunContinuationsAsynchronously);
            var span = timeout ?? RequestTimeout;
            var requestId = id;
            var pending = new Pending { Id = id, Op = body[1].Value as string, Message = EncodeRequest(body),
                Deadline = DateTime.UtcNow + span, Timeout = span };
            pending.OnDone = (reply, error) =>
            {
                if (error == null)
                {
                    try
                    {
                        tcs.TrySetResult(parse(requestId, reply));
                        return;
                    }
                    catch (PathServerException e)
                    {
                        error = e;
                    }
                    catch (Exception e)
                    {
                        error = new PathServerException(PathServerErrorCodes.BadReply, "could not read the reply: " + e.Message, null, false, null, requestId);
                    }
                }
                if (error is OperationCanceledException)
                {
                    tcs.TrySetCanceled(ct);
                    return;
                }
                if (onFailed != null && error is PathServerException) onFailed(requestId, (PathServerException)error);
                tcs.TrySetException(error);
            };
            _pending[id] = pending;
            pending.TimeoutTimer = new Timer(_ => Expire(pending), null, (long)Math.Max(1, span.TotalMilliseconds), Timeout.Infinite);
            if (ct.CanBeCanceled)
                pending.CancelRegistration = ct.Register(() => Finish(pending, null, new OperationCanceledException(ct)));
            if (_disposed)
                Finish(pending, null, new PathServerException(PathServerErrorCodes.Disconnected, "the client was disposed", null, false, null, id));
            Enqueue(pending);
            return tcs.Task;
        }

        // The ZMTP frames of a request. A body's bins (a map layer, next_steps' positions) may be
        // large: the encoder's buffer is sized for them up front and framed without another copy.
        static byte[] EncodeRequest(MsgPackMap body)
        {
            int binBytes = 0;
            foreach (var pair in body)
            {
                var bytes = pair.Value as byte[];
                if (bytes != null) binBytes += bytes.Length;
            }
            var encoded = new MemoryStream(binBytes + 1024);
            MsgPack.Encode(encoded, body);
            return Zmtp.EncodeMessage(encoded.GetBuffer(), (int)encoded.Length, true);
        }

        void Enqueue(Pending pending)
        {
            _outbox.Enqueue(new Outgoing { Request = pending });
            _outboxSignal.Set();
        }

        void Expire(Pending pending)
        {
            string seconds = pending.Timeout.TotalSeconds.ToString("0.0##", CultureInfo.InvariantCulture);
            PathServerException error;
            if (_current != null)
                error = new PathServerException(PathServerErrorCodes.Timeout,
                    string.Format(CultureInfo.InvariantCulture, "no reply to \"{0}\" request {1} from {2} within {3} s", pending.Op, pending.Id, Endpoint, seconds),
                    null, true, null, pending.Id);
            else
                error = new PathServerException(PathServerErrorCodes.Disconnected,
                    string.Format(CultureInfo.InvariantCulture, "no connection to {0} within {1} s for \"{2}\" request {3} (last error: {4})",
                        Endpoint, seconds, pending.Op, pending.Id, _lastConnectionError),
                    null, true, null, pending.Id);
            Finish(pending, null, error);
        }

        // Completes a request exactly once, whoever gets here first.
        void Finish(Pending pending, IDictionary<string, object> reply, Exception error)
        {
            if (Interlocked.Exchange(ref pending.Finished, 1) != 0) return;
            Pending removed;
            _pending.TryRemove(pending.Id, out removed);
            if (pending.TimeoutTimer != null) pending.TimeoutTimer.Dispose();
            pending.CancelRegistration.Dispose();
            try
            {
                pending.OnDone(reply, error);
            }
            catch (Exception e)
            {
                WriteLog("a completion handler threw: " + e);
            }
        }

        void OnReply(IDictionary<string, object> reply)
        {
            object idValue = MsgPack.Get(reply, "id");
            if (!MsgPack.IsNumber(idValue))
            {
                // The server could not read one of our requests (we only send what we encoded, so
                // this is a bug somewhere); that request will time out.
                WriteLog("reply without an id: " + MsgPack.ToDebugString(reply));
                return;
            }
            long id = MsgPack.ToLong(idValue);
            Pending pending;
            if (!_pending.TryGetValue(id, out pending)) return;  // timed out, cancelled, or a duplicate after a re-send
            if (true.Equals(MsgPack.Get(reply, "ok")))
            {
                Finish(pending, reply, null);
                return;
            }
            var error = PathServerException.FromReply(reply, id);
            if (error.Code == PathServerErrorCodes.Overloaded && RetryOverloaded)
            {
                int delay = error.RetryAfterMs ?? 50;
                if (DateTime.UtcNow.AddMilliseconds(delay) < pending.Deadline)
                {
                    Timer retry = null;
                    retry = new Timer(_ =>
                    {
                        retry.Dispose();
                        pending.SentOn = -1;
                        if (Volatile.Read(ref pending.Finished) == 0) Enqueue(pending);
                    }, null, delay, Timeout.Infinite);
                    return;
                }
            }
            Finish(pending, null, error);
        }

        void WriteLog(string message)
        {
            var log = Log;
            if (log == null) return;
            try
            {
                log("pathserver client: " + message);
            }
            catch (Exception)
            {
                // A broken logger must not take the connection down.
            }
        }

        string MapName(PathOptions options)
        {
            return options.Map ?? DefaultMap;
        }

        // Whole numbers go out as ints (exact, and what grid coordinates are); others as float64.
        static object CoordinateToWire(float value)
        {
            if (value == Math.Floor(value) && Math.Abs(value) < 1e15) return (long)value;
            return (double)value;
        }

        // [x, y] on floor 0, [x, y, floor] on another.
        internal static object[] PointToWire(PathPoint point)
        {
            if (point.Floor == 0) return new[] { CoordinateToWire(point.X), CoordinateToWire(point.Y) };
            return new[] { CoordinateToWire(point.X), CoordinateToWire(point.Y), (long)point.Floor };
        }

        // [x, y] (floor 0) or [x, y, floor].
        internal static PathPoint PointFromWire(object value, string field)
        {
            var items = value as object[];
            if (items == null || items.Length < 2 || items.Length > 3 || !Array.TrueForAll(items, MsgPack.IsNumber))
                throw new PathServerException(PathServerErrorCodes.BadReply, field + " is not an [x, y] pair or an [x, y, floor] triple");
            int floor = items.Length == 3 ? (int)MsgPack.ToLong(items[2]) : 0;
            return new PathPoint((float)MsgPack.ToDouble(items[0]), (float)MsgPack.ToDouble(items[1]), floor);
        }

        internal static PathResult ParsePathReply(IDictionary<string, object> reply, long id)
        {
            return ParsePathReply(reply, id, null);
        }

        // space: the request's, for a packed path (a bin of int32 or float32 pairs); null refuses one.
        internal static PathResult ParsePathReply(IDictionary<string, object> reply, long id, CoordinateSpace? space)
        {
            var result = new PathResult { Id = id, Raw = reply };
            result.StatusText = MsgPack.Get(reply, "status") as string;
            switch (result.StatusText)
            {
                case "found": result.Status = PathStatus.Found; break;
                case "partial": result.Status = PathStatus.Partial; break;
                case "no_path": result.Status = PathStatus.NoPath; break;
                case null: throw new PathServerException(PathServerErrorCodes.BadReply, "path reply without a \"status\"", null, false, null, id);
                default: result.Status = PathStatus.Unknown; break;
            }
            var path = MsgPack.Get(reply, "path") as object[];
            if (path != null)
            {
                result.Path = new PathPoint[path.Length];
                for (int i = 0; i < path.Length; i++) result.Path[i] = PointFromWire(path[i], "path[" + i + "]");
            }
            var packedPath = MsgPack.Get(reply, "path") as byte[];
            if (packedPath != null)
            {
                if (!space.HasValue)
                    throw new PathServerException(PathServerErrorCodes.BadReply, "a packed path needs the request's space", null, false, null, id);
                // A map of several floors gives every point as a triple, start and goal too:
                // they say how the bin's points are laid out, which its length alone may not.
                var start = MsgPack.Get(reply, "start") as object[];
                bool triples = start != null ? start.Length == 3 : packedPath.Length % 8 != 0;
                result.Path = PointsFromBin(packedPath, space.Value, triples, "path", id);
            }
            object value;
            if (MsgPack.IsNumber(value = MsgPack.Get(reply, "cost"))) result.Cost = MsgPack.ToDouble(value);
            if (MsgPack.IsNumber(value = MsgPack.Get(reply, "length"))) result.Length = MsgPack.ToDouble(value);
            if (MsgPack.IsNumber(value = MsgPack.Get(reply, "expanded"))) result.Expanded = MsgPack.ToLong(value);
            result.StartSnapped = true.Equals(MsgPack.Get(reply, "start_snapped"));
            result.GoalSnapped = true.Equals(MsgPack.Get(reply, "goal_snapped"));
            if (MsgPack.IsNumber(value = MsgPack.Get(reply, "gen"))) result.Gen = MsgPack.ToLong(value);
            if ((value = MsgPack.Get(reply, "start")) != null) result.Start = PointFromWire(value, "start");
            if ((value = MsgPack.Get(reply, "goal")) != null) result.Goal = PointFromWire(value, "goal");
            if (MsgPack.IsNumber(value = MsgPack.Get(reply, "goal_index"))) result.GoalIndex = (int)MsgPack.ToLong(value);
            result.Links = LinkStepsFromWire(MsgPack.Get(reply, "links"), id);
            return result;
        }

        static MapInfo ParseMapInfo(IDictionary<string, object> entry)
        {
            if (entry == null) throw new PathServerException(PathServerErrorCodes.BadReply, "a \"maps\" entry is not a map");
            var info = new MapInfo { Raw = entry, Name = MsgPack.Get(entry, "name") as string };
            object value;
            if (MsgPack.IsNumber(value = MsgPack.Get(entry, "width"))) info.Width = (int)MsgPack.ToLong(value);
            if (MsgPack.IsNumber(value = MsgPack.Get(entry, "height"))) info.Height = (int)MsgPack.ToLong(value);
            info.Floors = FloorsFromWire(entry);
            double width, height;
            HexLayout? layout;
            info.Shape = ShapeFromWire(entry, out layout);
            info.Layout = layout;
            CellSizeFromWire(entry, out width, out height);
            info.CellSize = width;
            info.CellWidth = width;
            info.CellHeight = height;
            if ((value = MsgPack.Get(entry, "origin")) is object[]) info.Origin = PointFromWire(value, "origin");
            if (MsgPack.IsNumber(value = MsgPack.Get(entry, "gen"))) info.Gen = MsgPack.ToLong(value);
            value = MsgPack.Get(entry, "last_error");
            info.LastError = value == null ? null : (value as string ?? MsgPack.ToDebugString(value));
            return info;
        }

        // A map's "shape" and "layout": Square (and no layout) unless they say hex.
        static MapShape ShapeFromWire(IDictionary<string, object> map, out HexLayout? layout)
        {
            layout = null;
            HexLayout parsed;
            if (PathServerHexes.TryParse(MsgPack.Get(map, "layout") as string, out parsed)) layout = parsed;
            return Equals(MsgPack.Get(map, "shape"), "hex") ? MapShape.Hex : MapShape.Square;
        }

        // A map's "cell_size": a number s (s x s), or a hex map's tile size [w, h]; 1 when absent.
        static void CellSizeFromWire(IDictionary<string, object> map, out double width, out double height)
        {
            object value = MsgPack.Get(map, "cell_size");
            var pair = value as object[];
            width = height = MsgPack.IsNumber(value) ? MsgPack.ToDouble(value) : 1.0;
            if (pair != null && pair.Length == 2 && MsgPack.IsNumber(pair[0]) && MsgPack.IsNumber(pair[1]))
            {
                width = MsgPack.ToDouble(pair[0]);
                height = MsgPack.ToDouble(pair[1]);
            }
        }

        internal static long GenOf(IDictionary<string, object> reply, long id)
        {
            object gen = MsgPack.Get(reply, "gen");
            if (!MsgPack.IsNumber(gen))
                throw new PathServerException(PathServerErrorCodes.BadReply, "reply without a \"gen\"", null, false, null, id);
            return MsgPack.ToLong(gen);
        }

        // Little-endian float32, whatever this machine's byte order.
        internal static byte[] Float32Bytes(float[] values)
        {
            var bytes = new byte[values.Length * 4];
            Buffer.BlockCopy(values, 0, bytes, 0, bytes.Length);
            if (!BitConverter.IsLittleEndian)
                for (int i = 0; i < bytes.Length; i += 4) Array.Reverse(bytes, i, 4);
            return bytes;
        }

        internal static float[] Float32Values(byte[] bytes)
        {
            var copy = (byte[])bytes.Clone();
            if (!BitConverter.IsLittleEndian)
                for (int i = 0; i + 4 <= copy.Length; i += 4) Array.Reverse(copy, i, 4);
            var values = new float[copy.Length / 4];
            Buffer.BlockCopy(copy, 0, values, 0, values.Length * 4);
            return values;
        }

        internal static MapData ParseMapData(IDictionary<string, object> reply, long id)
        {
            // A get_map reply gives a map's size, floors, shape, cell size, origin and gen under
            // the keys a "maps" entry does: ParseMapInfo reads them.
            var info = ParseMapInfo(reply);
            var map = new MapData
            {
                Raw = reply, Name = MsgPack.Get(reply, "map") as string, Gen = info.Gen, Width = info.Width, Height = info.Height,
                Floors = info.Floors, Shape = info.Shape, Layout = info.Layout, CellSize = info.CellSize,
                CellWidth = info.CellWidth, CellHeight = info.CellHeight, Origin = info.Origin,
            };
            map.Region = new GridRect(0, 0, map.Width, map.Height);
            var region = MsgPack.Get(reply, "region") as object[];
            if (region != null && region.Length == 4 && Array.TrueForAll(region, MsgPack.IsNumber))
                map.Region = new GridRect((int)MsgPack.ToLong(region[0]), (int)MsgPack.ToLong(region[1]),
                    (int)MsgPack.ToLong(region[2]), (int)MsgPack.ToLong(region[3]));
            map.Links = LinksFromWire(MsgPack.Get(reply, "links"), "links", id);
            int count = map.Region.Width * map.Region.Height * map.Floors;
            map.Cells = MsgPack.Get(reply, "cells") as byte[];
            if (map.Cells == null || map.Cells.Length != count)
                throw new PathServerException(PathServerErrorCodes.BadReply, "get_map reply: \"cells\" is not " + count + " bytes of bin", null, false, null, id);
            map.Costs = Float32Field(reply, "costs", count, id);
            map.Heights = Float32Field(reply, "heights", count, id);
            map.Tags = MsgPack.Get(reply, "tags") as byte[];
            if (MsgPack.Get(reply, "tags") != null && (map.Tags == null || map.Tags.Length != count))
                throw new PathServerException(PathServerErrorCodes.BadReply, "get_map reply: \"tags\" is not " + count + " bytes of bin", null, false, null, id);
            var tagNames = MsgPack.Get(reply, "tag_names") as IDictionary<string, object>;
            if (tagNames != null)
            {
                map.TagNames = new Dictionary<string, int>();
                foreach (var pair in tagNames) map.TagNames[pair.Key] = (int)MsgPack.ToLong(pair.Value);
            }
            var classes = MsgPack.Get(reply, "classes") as IDictionary<string, object>;
            if (classes != null)
            {
                map.Classes = new Dictionary<string, TraversalRules>();
                foreach (var pair in classes) map.Classes[pair.Key] = TraversalRules.FromWire(pair.Value, "classes." + pair.Key, id);
            }
            return map;
        }

        static float[] Float32Field(IDictionary<string, object> reply, string key, int count, long id)
        {
            object value = MsgPack.Get(reply, key);
            if (value == null) return null;
            var bytes = value as byte[];
            if (bytes == null || bytes.Length != count * 4)
                throw new PathServerException(PathServerErrorCodes.BadReply, "get_map reply: \"" + key + "\" is not " + count + " float32 of bin", null, false, null, id);
            return Float32Values(bytes);
        }

        static void ParseEndpoint(string endpoint, out string host, out int port)
        {
            const string scheme = "tcp://";
            if (endpoint == null || !endpoint.StartsWith(scheme, StringComparison.Ordinal))
                throw new ArgumentException("Endpoint must look like tcp://HOST:PORT, got \"" + endpoint + "\".", "endpoint");
            string rest = endpoint.Substring(scheme.Length);
            int colon = rest.LastIndexOf(':');
            if (colon <= 0 || !int.TryParse(rest.Substring(colon + 1), NumberStyles.None, CultureInfo.InvariantCulture, out port) || port <= 0 || port > 65535)
                throw new ArgumentException("Endpoint must look like tcp://HOST:PORT, got \"" + endpoint + "\".", "endpoint");
            host = rest.Substring(0, colon).Trim('[', ']');
        }

        static TaskCompletionSource<bool> NewSignal()
        {
            return new TaskCompletionSource<bool>(TaskCreationOptions.RunContinuationsAsynchronously);
        }

        #endregion
    }
}
