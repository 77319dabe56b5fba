/*
 * bcryptprimitives.dll stand-in for running Go programs under wine 8.0 in CI
 * (.ci/windows.sh). NOT shipped: a real Windows (8 and later) has this DLL.
 *
 * Go 1.24 and newer read random bytes with ProcessPrng from
 * bcryptprimitives.dll at start-up; wine 8.0 (Debian 12) has no such export,
 * so every Go 1.24+ .exe dies before main. This DLL exports ProcessPrng and
 * forwards it to RtlGenRandom (advapi32's SystemFunction036), which wine has.
 * .ci/windows.sh builds it with
 *   x86_64-w64-mingw32-gcc -shared -O2 -o bcryptprimitives.dll processprng.c -ladvapi32
 * and copies it into the wine prefix's system32.
 */
#include <windows.h>

BOOLEAN WINAPI SystemFunction036(PVOID buf, ULONG len); /* RtlGenRandom */

__declspec(dllexport) BOOL WINAPI ProcessPrng(PBYTE data, SIZE_T len)
{
    /* RtlGenRandom takes a ULONG length: feed large requests in pieces. */
    while (len > 0) {
        ULONG n = len > 0x40000000 ? 0x40000000 : (ULONG)len;
        if (!SystemFunction036(data, n))
            return FALSE;
        data += n;
        len -= n;
    }
    return TRUE;
}
