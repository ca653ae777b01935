/* scatter_add for the CPU plugin (plugins/cpu/index.py builds it): y[o, idx[i], :] += src[o, i, :]
 * for i in order, y already a copy of x (an embedding's gradient: 1024 token ids into a 46 x 64
 * table took 0.32-0.40 ms in the tiny Llama step as numpy's sort and reduceat).
 *
 * Each element of y receives its additions in the order of i, as numpy's add.at adds them, so
 * the result has add.at's bits. The team's threads take contiguous shares of a row's columns
 * (every addition to one element stays on one thread, in order).
 *
 * Compiled once per element type: float, or double with -DT_DOUBLE. Returns -1, or the first
 * position i whose index is outside [0, size) (then nothing has been added).
 */
#include <stdint.h>

#ifdef T_DOUBLE
#define T double
#else
#define T float
#endif

int64_t scatter_add_rows(void* y_, const void* src_, const int64_t* idx, int64_t outer, int64_t n, int64_t size,
                         int64_t row, int nt) {
    T* restrict y = y_;
    const T* restrict src = src_;
    for (int64_t i = 0; i < n; ++i)
        if (idx[i] < 0 || idx[i] >= size) return i;
    if (nt < 1) nt = 1;
#pragma omp parallel for schedule(static) num_threads(nt) if (nt > 1)
    for (int t = 0; t < nt; ++t) {
        const int64_t lo = row * t / nt, hi = row * (t + 1) / nt;
        for (int64_t o = 0; o < outer; ++o) {
            T* yo = y + o * size * row;
            const T* so = src + o * n * row;
            for (int64_t i = 0; i < n; ++i) {
                T* restrict d = yo + idx[i] * row;
                const T* restrict s = so + i * row;
                for (int64_t j = lo; j < hi; ++j) d[j] += s[j];
            }
        }
    }
    return -1;
}
