// The Unity package's assembly (PathServer.Client.asmdef): its test program reads the internal
// Zmtp and MsgPack. Not needed when PathServerClient.cs is dropped into a project on its own.

using System.Runtime.CompilerServices;

[assembly: InternalsVisibleTo("PathServer.Client.Tests")]
