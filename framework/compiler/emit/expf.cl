/* exp in float for a loop the driver vectorises: PoCL's scalar exp is a call its loop
   vectoriser cannot widen (softmax ran 15x a copy), this is plain arithmetic it can.
   Cody-Waite reduction x = k ln2 + r, |r| <= ln2/2, Cephes' degree-7 polynomial, 2^k put into
   the exponent bits (and one multiply by 2^-30..1 for subnormal results, so reassociation
   cannot overflow an intermediate). Against float64 exp over [-110, 95]: at most 1.0 ulp
   (rel. 8.3e-8); exp(-inf) = 0, exp(+inf) = inf, NaN stays NaN, inf from the first float past
   ln(FLT_MAX), subnormal results down to 0 (tests/opencl/test_opencl_row_exp.py).
   Kernels get the lines after this comment as they are (helpers.py reads this file). */

__attribute__((always_inline)) float oarlock_expf(float x) {
    float c = x < -104.0f ? -104.0f : x;
    c = c > 89.0f ? 89.0f : c;
    const float t = c * 1.44269504088896341f;
    const int k = (int)(t + (t < 0.0f ? -0.5f : 0.5f));
    const float n = (float)k;
    float r = c - n * 0.693359375f;
    r = r + n * 2.12194440e-4f;
    float p = 1.9875691500e-4f;
    p = p * r + 1.3981999507e-3f;
    p = p * r + 8.3334519073e-3f;
    p = p * r + 4.1665795894e-2f;
    p = p * r + 1.6666665459e-1f;
    p = p * r + 5.0000001201e-1f;
    p = (p * r) * r + r + 1.0f;
    const int ka = k < -120 ? -120 : k;
    p = as_float(as_int(p) + (ka << 23)) * as_float((k - ka + 127) << 23);
    return x != x ? x : x >= 88.72283935546875f ? ((float)INFINITY) : p;
}
