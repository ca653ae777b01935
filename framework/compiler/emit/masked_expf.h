/* exp in float for C where its argument is computed from a constant at or below -104 (a
   masked fill: a causal mask's softmax is exp(where(mask, x, -inf) - max)): glibc's vector
   expf (libmvec) runs every lane below about -87.3 on a scalar path, and such rows ran 8x
   slower than unmasked ones (4.6 ns an element). A lane below -104 (where exp rounds to +0),
   -inf included, gets argument 0 and result +0 through a bit mask (not a select: gcc turns
   expf(c ? a : b) into two vector calls); every other lane is glibc's expf unchanged. The
   mask costs about 13% on rows that never need it, hence only there
   (tests/test_compiler_row_loops.py).
   Kernels get the lines after this comment as they are (helpers.py reads this file). */

static inline float oarlock_bits_f(int32_t i) { float f; __builtin_memcpy(&f, &i, 4); return f; }
static inline int32_t oarlock_f_bits(float f) { int32_t i; __builtin_memcpy(&i, &f, 4); return i; }
static inline __attribute__((always_inline)) float oarlock_expf(float x) {
    const int32_t keep = ~(-(int32_t)(x < -104.0f));
    return oarlock_bits_f(oarlock_f_bits(expf(oarlock_bits_f(oarlock_f_bits(x) & keep))) & keep);
}
