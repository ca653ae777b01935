/* float16 / bfloat16 in OpenCL C: values in float (or double: V, which the emitter replaces by
   the type values are computed in), rounded once to nearest even when stored
   (vstore_half_rte; bfloat16 through a round-to-odd float, so a double rounds once).
   Kernels get the lines after this comment as they are (helpers.py reads this file). */

V oarlock_h2d(ushort h) { return (V)vload_half(0, (const half*)&h); }
ushort oarlock_d2h(V x) {
    if (x != x) {  /* NaN: sign and top payload bits, as numpy narrows (PoCL's store: 0x7fff) */
        uint u = as_uint((float)x), m = (u & 0x007fffffu) >> 13;
        return (ushort)(((u >> 16) & 0x8000u) | 0x7c00u | (m ? m : 1u));
    }
    ushort h;
    vstore_half_rte(x, 0, (half*)&h);
    return h;
}
V oarlock_b2d(ushort b) { return (V)as_float((uint)b << 16); }
ushort oarlock_d2b(V x) {
    float f = convert_float_rtz(x);
    uint u = as_uint(f);
    if ((V)f != x && f == f && !isinf(f)) u |= 1;
    if (f != f) return (ushort)((u >> 16) | 0x40);
    return (ushort)((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);
}
