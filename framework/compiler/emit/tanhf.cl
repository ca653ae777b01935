/* tanh in float from oarlock_expf (expf.cl), for the same reason (silu = x * sigmoid runs
   through tanh: 20x a copy on PoCL with the driver's). Cephes' tanhf: x + x^3 P(x^2) below
   |x| = 0.625, else 1 - 2 / (exp(2|x|) + 1) with x's sign; both are computed and one is
   selected, so the loop stays branch-free. Against float64 tanh over [-20, 20]: at most 2 ulp
   (tests/opencl/test_opencl_row_exp.py); +-1 past |x| ~ 9, NaN stays NaN, -0 stays -0.
   Kernels get the lines after this comment as they are (helpers.py reads this file). */

__attribute__((always_inline)) float oarlock_tanhf(float x) {
    const float z = x * x;
    float p = -5.70498872745e-3f;
    p = p * z + 2.06390887954e-2f;
    p = p * z - 5.37397155531e-2f;
    p = p * z + 1.33314422036e-1f;
    p = p * z - 3.33332819422e-1f;
    const float small = p * z * x + x;
    const float a = x < 0.0f ? -x : x;
    const float t = 1.0f - 2.0f / (oarlock_expf(2.0f * a) + 1.0f);
    return a < 0.625f ? small : x < 0.0f ? -t : t;
}
