/* erf in float (the exact gelu), from oarlock_expf (expf.cl) too: x + x P(x^2) below |x| = 1,
   else 1 - exp(-x^2) Q(1/|x|) with x's sign, 1 past |x| = 4 (where erf rounds to 1). P and Q
   were fitted for this file (numpy, least squares of the relative error on Chebyshev nodes:
   erf(x)/x - 1 of degree 6 in x^2 on [0, 1], 1.2e-9; erfc(t) exp(t^2) of degree 8 in 1/t on
   [1, 4], 7.8e-8). Against float64 erf over [-6, 6]: at most 2 ulp
   (tests/opencl/test_opencl_row_exp.py).
   Kernels get the lines after this comment as they are (helpers.py reads this file). */

__attribute__((always_inline)) float oarlock_erff(float x) {
    const float a = x < 0.0f ? -x : x;
    const float z = x * x;
    float p = 7.847262168070301e-05f;
    p = p * z - 0.0008008193108253181f;
    p = p * z + 0.0051880995742976665f;
    p = p * z - 0.026853691786527634f;
    p = p * z + 0.1128358244895935f;
    p = p * z - 0.3761262595653534f;
    p = p * z + 0.12837916612625122f;
    const float small = p * x + x;
    const float u = 1.0f / (a > 1.0f ? a : 1.0f);
    float q = -0.010076413862407207f;
    q = q * u + 0.03165923431515694f;
    q = q * u + 0.017203914001584053f;
    q = q * u - 0.23425890505313873f;
    q = q * u + 0.4915410876274109f;
    q = q * u - 0.4692467749118805f;
    q = q * u + 0.041353754699230194f;
    q = q * u + 0.559144139289856f;
    q = q * u + 0.0002635122509673238f;
    const float big = a >= 4.0f ? 1.0f : 1.0f - oarlock_expf(-z) * q;
    return a < 1.0f ? small : x < 0.0f ? -big : big;
}
