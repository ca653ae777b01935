/* C's fixed-width integer names in OpenCL C (the helpers are written in C).
   Kernels get the lines after this comment as they are (helpers.py reads this file). */
typedef char int8_t; typedef short int16_t; typedef int int32_t; typedef long int64_t;
typedef uchar uint8_t; typedef ushort uint16_t; typedef uint uint32_t; typedef ulong uint64_t;
#define INT64_MIN (-9223372036854775807L - 1)
