/* bcryptprimitives.dll for Wine 8.0, which lacks it: the Go runtime (1.24 and later) asks it
   for ProcessPrng at start and stops when it is not there. This one fills the buffer from
   RtlGenRandom (advapi32's SystemFunction036), which Wine has. Built with MinGW into the Wine
   prefix's system32 by the tests that run aa-grade.exe under Wine (windows_wine_test.go). */
#include <windows.h>

BOOLEAN WINAPI SystemFunction036(PVOID buffer, ULONG length);

__declspec(dllexport) BOOL WINAPI ProcessPrng(PBYTE data, SIZE_T length)
{
    while (length > 0) {
        ULONG chunk = length > 0x40000000 ? 0x40000000 : (ULONG)length;
        if (!SystemFunction036(data, chunk))
            return FALSE;
        data += chunk;
        length -= chunk;
    }
    return TRUE;
}
