/* Philox-4x32-10 (adapter_api.primitives: philox_uniform), element i of the stream; C, and
   OpenCL C and CUDA C with other qualifiers.
   Kernels get the lines after this comment as they are (helpers.py reads this file). */

static inline uint32_t oarlock_philox(uint64_t i, uint64_t seed, uint64_t offset) {
    uint64_t n = offset + i / 4;
    uint32_t c0 = (uint32_t)n, c1 = (uint32_t)(n >> 32), c2 = 0, c3 = 0;
    uint32_t k0 = (uint32_t)seed, k1 = (uint32_t)(seed >> 32);
    for (int round = 0; round < 10; ++round) {
        uint64_t p0 = (uint64_t)0xD2511F53u * c0, p1 = (uint64_t)0xCD9E8D57u * c2;
        uint32_t n0 = (uint32_t)(p1 >> 32) ^ c1 ^ k0, n2 = (uint32_t)(p0 >> 32) ^ c3 ^ k1;
        c0 = n0; c1 = (uint32_t)p1; c2 = n2; c3 = (uint32_t)p0;
        k0 += 0x9E3779B9u; k1 += 0xBB67AE85u;
    }
    switch (i % 4) { case 0: return c0; case 1: return c1; case 2: return c2; default: return c3; }
}
