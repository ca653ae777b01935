/* float16 / bfloat16 in C (and CUDA C): values are exact in double (and float); a store rounds
   once to nearest even (quantum 2**(e - bits) at the value's binade, clamped at the subnormal
   one). C computes them in float (b2f/f2b for bfloat16), CUDA C in double.
   Kernels get the lines after this comment as they are (helpers.py reads this file). */

static inline double oarlock_h2d(uint16_t h) {
    int e = (h >> 10) & 31; double m = h & 1023;
    double v = e == 0 ? ldexp(m, -24) : e == 31 ? (m != 0 ? NAN : INFINITY) : ldexp(m + 1024, e - 25);
    return (h & 0x8000) ? -v : v;
}
static inline uint16_t oarlock_d2h(double x) {
    uint16_t s = signbit(x) ? 0x8000 : 0; double a = fabs(x); int e;
    if (a != a) return s | 0x7e00;
    if (isinf(a)) return s | 0x7c00;
    frexp(a, &e); if (e < -13) e = -13;
    double q = ldexp(1.0, e - 11), r = nearbyint(a / q) * q;
    if (r > 65504.0) return s | 0x7c00;
    if (r < 0x1p-14) return s | (uint16_t)(r * 0x1p24);
    double f = frexp(r, &e);
    return s | (uint16_t)((e + 14) << 10) | (uint16_t)((f * 2.0 - 1.0) * 1024.0);
}
static inline double oarlock_b2d(uint16_t b) {
    union { uint32_t u; float f; } v; v.u = (uint32_t)b << 16; return v.f;
}
static inline float oarlock_b2f(uint16_t b) {
    union { uint32_t u; float f; } v; v.u = (uint32_t)b << 16; return v.f;
}
static inline uint16_t oarlock_f2b(float x) {
    /* float -> bfloat16 to nearest even on the bits (subnormals alike); NaN: 0x7fc0, its sign */
    union { float f; uint32_t u; } v; v.f = x;
    uint16_t r = (uint16_t)((v.u + 0x7fffu + ((v.u >> 16) & 1u)) >> 16);
    return (v.u & 0x7fffffffu) > 0x7f800000u ? (uint16_t)(((v.u >> 16) & 0x8000u) | 0x7fc0u) : r;
}
static inline uint16_t oarlock_d2b(double x) {
    /* round to nearest even on the bits (8 significant bits: drop 45 of double's 53), so
       the loop vectorises; below 2**-126 (bf16's subnormals, quantum 2**-133) adding 2**-81
       rounds at that quantum. NaN: 0x7fc0 with the sign; past 0x1.fep127: infinity */
    union { double d; uint64_t u; } v, r, t; v.d = x;
    uint64_t s = v.u & 0x8000000000000000ull, a = v.u ^ s;
    r.u = (a + 0xFFFFFFFFFFFull + ((a >> 45) & 1)) & ~0x1FFFFFFFFFFFull;
    t.u = a;
    double q = t.d < 0x1p-126 ? (t.d + 0x1p-81) - 0x1p-81 : r.d;
    union { float f; uint32_t u; } f; f.f = (float)q;
    uint16_t sign = (uint16_t)(s >> 48);
    return a > 0x7ff0000000000000ull ? (uint16_t)(sign | 0x7fc0) : (uint16_t)(sign | (f.u >> 16));
}
