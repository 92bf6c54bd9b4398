// ThreadClock: the calling thread's own CPU time, for scenarios whose truth is
// the CPU a thread spent (CLOCK_THREAD_CPUTIME_ID through libc's clock_gettime).
using System.Runtime.InteropServices;

namespace Scenarios;

internal static class ThreadClock
{
    [StructLayout(LayoutKind.Sequential)]
    private struct Timespec { public long Sec, Nsec; }

    [DllImport("libc", EntryPoint = "clock_gettime")]
    private static extern int ClockGettime(int clock, out Timespec ts);

    public static long CpuNs()
    {
        ClockGettime(3 /* CLOCK_THREAD_CPUTIME_ID */, out var ts);
        return ts.Sec * 1_000_000_000L + ts.Nsec;
    }
}
