/* float16 / bfloat16 in C (and CUDA C): values are exact in double; a store rounds once to
   nearest even (quantum 2**(e - bits) at the value's binade, clamped at the subnormal one).
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
static inline uint16_t oarlock_d2b(double x) {
    uint16_t s = signbit(x) ? 0x8000 : 0; double a = fabs(x); int e;
    if (a != a) return s | 0x7fc0;
    frexp(a, &e); if (e < -125) e = -125;
    if (isinf(a)) return s | 0x7f80;
    double q = ldexp(1.0, e - 8), r = nearbyint(a / q) * q;
    if (r > 0x1.fep127) return s | 0x7f80;
    union { uint32_t u; float f; } v; v.f = (float)r; return s | (uint16_t)(v.u >> 16);
}
