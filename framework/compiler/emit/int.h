/* Integer pow (wraps; a negative exponent gives 0 but for bases 1 and -1), and numpy's
   floor_divide / remainder (sign of the divisor; 0 for a zero divisor; INT_MIN // -1 wraps);
   C, and OpenCL C and CUDA C with other qualifiers.
   Kernels get the lines after this comment as they are (helpers.py reads this file). */

static inline uint64_t oarlock_ipow(uint64_t b, int64_t e) {
    if (e < 0) return b == 1 ? 1 : b == (uint64_t)-1 ? ((e & 1) ? b : 1) : 0;
    uint64_t r = 1;
    while (e) { if (e & 1) r *= b; b *= b; e >>= 1; }
    return r;
}
static inline int64_t oarlock_floordiv(int64_t a, int64_t b) {
    if (b == 0) return 0;
    if (b == -1) return (int64_t)(0 - (uint64_t)a);
    int64_t q = a / b;
    return (a % b != 0 && ((a < 0) != (b < 0))) ? q - 1 : q;
}
static inline int64_t oarlock_mod(int64_t a, int64_t b) {
    if (b == 0 || b == -1) return 0;
    int64_t m = a % b;
    return (m != 0 && ((m < 0) != (b < 0))) ? m + b : m;
}
