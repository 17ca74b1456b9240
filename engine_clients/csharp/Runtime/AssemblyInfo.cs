// The Unity package's assembly (PathServer.Client.asmdef): its test program reads the internal
// Zmtp and MsgPack. Not needed when the PathServerClient*.cs files are dropped into a project
// on their own.

using System.Runtime.CompilerServices;

[assembly: InternalsVisibleTo("PathServer.Client.Tests")]
