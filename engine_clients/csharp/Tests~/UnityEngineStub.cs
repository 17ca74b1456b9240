// UnityEngineStub.cs: the few UnityEngine members the package's sample uses, with their Unity
// signatures and no behaviour, so that CI (which has no Unity) compiles the sample against the
// package's assembly. It checks the sample's use of this package, not of Unity's API.

namespace UnityEngine
{
    public class Object { }
    public class Component : Object { }
    public class Behaviour : Component { }
    public class MonoBehaviour : Behaviour { }

    public struct Vector2
    {
        public float x;
        public float y;
        public Vector2(float x, float y) { this.x = x; this.y = y; }
    }

    public struct Vector3
    {
        public float x;
        public float y;
        public float z;
        public Vector3(float x, float y, float z) { this.x = x; this.y = y; this.z = z; }
    }

    public struct Color
    {
        public static Color green { get { return new Color(); } }
    }

    public static class Debug
    {
        public static void Log(object message) { }
        public static void LogError(object message) { }
        public static void DrawLine(Vector3 start, Vector3 end, Color color) { }
    }

    public static class Application
    {
        public static string streamingAssetsPath { get { return ""; } }
        public static bool isEditor { get { return true; } }
    }

    [System.AttributeUsage(System.AttributeTargets.Field)]
    public class TooltipAttribute : System.Attribute
    {
        public TooltipAttribute(string tooltip) { }
    }
}
