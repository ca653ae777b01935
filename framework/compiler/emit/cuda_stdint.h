/* C's fixed-width integer names in CUDA C (NVRTC has no <stdint.h>; the helpers are written
   in C), and INFINITY / NAN. NOTE: long is 64 bits on the device as on the (LP64) host; these
   match glibc's.
   Kernels get the lines after this comment as they are (helpers.py reads this file). */
typedef signed char int8_t; typedef short int16_t; typedef int int32_t; typedef long int64_t;
typedef unsigned char uint8_t; typedef unsigned short uint16_t; typedef unsigned int uint32_t;
typedef unsigned long uint64_t;
#ifndef INT64_MIN
#define INT64_MIN (-9223372036854775807L - 1)
#endif
#ifndef INFINITY
#define INFINITY __int_as_float(0x7f800000)
#endif
#ifndef NAN
#define NAN __int_as_float(0x7fc00000)
#endif
