/* Collectives of nativedev: POSIX shared memory between the ranks of one machine.
 *
 * Device memory is host memory, so the ranks can exchange it directly: rank 0 names a shared
 * memory segment in the unique id, every rank maps it, and each collective moves its data
 * through one slot per rank (in chunks of SLOT bytes), with a barrier after the writes and one
 * after the reads. Point-to-point calls use one mailbox per (sender, receiver) pair. Nothing
 * here needs a network or an MPI library; ranks on different machines would (that is what the
 * host-staged default is for).
 *
 * A barrier is one counter per rank: rank r has entered `epoch[r]` barriers, and waits until
 * every rank has entered as many, so a rank that never comes is named in the timeout.
 */
#define _GNU_SOURCE
#include "nativedev.h"

#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

enum { SLOT = 1 << 18, MAILBOX = 1 << 16, LINE = 64, MAGIC = 0x4f4e4456 /* "ONDV" */ };

typedef struct { _Atomic uint32_t ready; _Atomic int32_t attached; char pad[LINE - 8]; } header;
typedef struct { _Atomic uint64_t epoch; char pad[LINE - 8]; } rank_line;
typedef struct { _Atomic uint64_t sent, taken; char pad[LINE - 16]; } mailbox_line;

typedef struct {
    char name[OARLOCK_UNIQUE_ID_BYTES];
    int rank, size;
    double timeout;
    uint64_t epoch; /* barriers this rank has entered */
    size_t bytes;
    header *head;
    rank_line *ranks;
    mailbox_line *boxes; /* [sender * size + receiver] */
    char *slots, *box_data;
} comm;

static size_t segment_bytes(int size) {
    return sizeof(header) + size * sizeof(rank_line) + (size_t)size * size * sizeof(mailbox_line) +
           (size_t)size * SLOT + (size_t)size * size * MAILBOX;
}
static char *slot(comm *c, int r) { return c->slots + (size_t)r * SLOT; }

/* -- waiting with a deadline ------------------------------------------------------------------ */
static double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}
typedef struct { double start; long spins; } waiter;

/* Yield, then sleep a little; 1 once the communicator's timeout has passed. */
static int give_up(const comm *c, waiter *w) {
    if (w->spins++ == 0) w->start = now();
    if (w->spins < 100) sched_yield();
    else nanosleep(&(struct timespec){0, 20000}, 0);
    return now() - w->start > c->timeout;
}

static int barrier(void *h) {
    comm *c = h;
    uint64_t e = ++c->epoch;
    atomic_store_explicit(&c->ranks[c->rank].epoch, e, memory_order_release);
    waiter w = {0};
    for (int r = 0; r < c->size; r++)
        while (atomic_load_explicit(&c->ranks[r].epoch, memory_order_acquire) < e)
            if (give_up(c, &w)) {
                char late[256] = "";
                for (int q = 0, n = 0; q < c->size; q++)
                    if (atomic_load(&c->ranks[q].epoch) < e)
                        n += snprintf(late + n, sizeof late - n > 0 ? sizeof late - n : 0, "%s%d", n ? ", " : "", q);
                return nd_fail(OARLOCK_ERROR, "rank(s) %s did not arrive within %g s (rank %d waited); every rank "
                               "must call the same collectives in the same order", late, c->timeout, c->rank);
            }
    return OARLOCK_OK;
}

/* -- set-up --------------------------------------------------------------------------------- */
static int unique_id(int32_t dev, uint8_t *id) {
    static _Atomic int counter;
    memset(id, 0, OARLOCK_UNIQUE_ID_BYTES);
    snprintf((char *)id, OARLOCK_UNIQUE_ID_BYTES, "/oarlock-nativedev-%d-%d-%lx", (int)getpid(),
             atomic_fetch_add(&counter, 1), (unsigned long)(now() * 1e9));
    return OARLOCK_OK;
}

static int attach_fail(comm *c, int fd, const char *what) {
    int status = nd_fail(OARLOCK_ERROR, "%s of the shared memory %s failed (%s)", what, c->name, strerror(errno));
    if (fd >= 0) close(fd);
    if (c->rank == 0) shm_unlink(c->name);
    free(c);
    return status;
}

/* Rank 0 creates and sizes the segment; the others open it once it is ready; the last to map
 * it removes its name, so nothing is left behind in /dev/shm once every rank has attached. */
static int create(int32_t dev, const uint8_t *id, int32_t rank, int32_t size, double timeout, void **out) {
    if (rank < 0 || rank >= size)
        return nd_fail(OARLOCK_INVALID_ARGUMENT, "rank %d is not in [0, %d)", rank, size);
    comm *c = calloc(1, sizeof *c);
    if (!c) return nd_fail(OARLOCK_OUT_OF_MEMORY, "out of memory creating a communicator");
    memcpy(c->name, id, sizeof c->name);
    c->name[sizeof c->name - 1] = 0;
    c->rank = rank, c->size = size, c->timeout = timeout, c->bytes = segment_bytes(size);
    int fd = -1, err;
    waiter w = {0};
    struct stat st;
    if (rank == 0) {
        fd = shm_open(c->name, O_CREAT | O_EXCL | O_RDWR, 0600);
        if (fd < 0) return attach_fail(c, fd, "shm_open");
        if ((err = posix_fallocate(fd, 0, (off_t)c->bytes))) {  /* room now, not SIGBUS later */
            errno = err;
            return attach_fail(c, fd, "reserving /dev/shm space (posix_fallocate)");
        }
    } else
        while ((fd = shm_open(c->name, O_RDWR, 0)) < 0 || fstat(fd, &st) || (size_t)st.st_size < c->bytes) {
            if (fd >= 0) close(fd), fd = -1;
            if (give_up(c, &w)) return nd_fail(OARLOCK_ERROR, "rank 0 did not create the shared memory %s within "
                                               "%g s (rank %d waited)", c->name, timeout, rank);
        }
    char *base = mmap(0, c->bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (base == MAP_FAILED) return attach_fail(c, fd, "mmap");
    close(fd);
    c->head = (header *)base;
    c->ranks = (rank_line *)(base + sizeof(header));
    c->boxes = (mailbox_line *)(c->ranks + size);
    c->slots = (char *)(c->boxes + (size_t)size * size);
    c->box_data = c->slots + (size_t)size * SLOT;
    if (rank == 0) atomic_store(&c->head->ready, MAGIC);
    while (atomic_load(&c->head->ready) != MAGIC)
        if (give_up(c, &w)) {
            munmap(base, c->bytes), free(c);
            return nd_fail(OARLOCK_ERROR, "rank 0 did not finish setting up the shared memory within %g s", timeout);
        }
    if (atomic_fetch_add(&c->head->attached, 1) + 1 == size) shm_unlink(c->name);
    *out = c;
    return OARLOCK_OK;
}

static int destroy(void *h) {
    comm *c = h;
    munmap(c->head, c->bytes);
    free(c);
    return OARLOCK_OK;
}
static int set_timeout(void *h, double seconds) { ((comm *)h)->timeout = seconds; return OARLOCK_OK; }

/* -- reductions: acc = acc (op) src, elementwise; integers wrap ------------------------------- */
static int reducible(int dt) {
    if (dt == OARLOCK_FLOAT16 || dt == OARLOCK_BFLOAT16 || nd_itemsize(dt) == 0)
        return nd_fail(OARLOCK_NOT_SUPPORTED, "reductions of dtype code %d are not supported", dt);
    return OARLOCK_OK;
}

#define COMBINE(T, WIDE)                                                                          \
    for (uint64_t k = 0; k < n; k++) {                                                            \
        T x = ((T *)acc)[k], y = ((const T *)src)[k];                                             \
        ((T *)acc)[k] = op == OARLOCK_SUM || op == OARLOCK_AVG ? (T)((WIDE)x + (WIDE)y)           \
                      : op == OARLOCK_PROD ? (T)((WIDE)x * (WIDE)y)                               \
                      : op == OARLOCK_MAX ? (y > x ? y : x) : (y < x ? y : x);                    \
    }
static void combine(void *acc, const void *src, uint64_t n, int dt, int op) {
    switch (dt) {
    case OARLOCK_FLOAT32: COMBINE(float, float) break;
    case OARLOCK_FLOAT64: COMBINE(double, double) break;
    case OARLOCK_INT8: COMBINE(int8_t, uint64_t) break;
    case OARLOCK_INT16: COMBINE(int16_t, uint64_t) break;
    case OARLOCK_INT32: COMBINE(int32_t, uint64_t) break;
    case OARLOCK_INT64: COMBINE(int64_t, uint64_t) break;
    case OARLOCK_UINT8: COMBINE(uint8_t, uint64_t) break;
    default: /* bool: sum and max are "or", prod and min "and" */
        for (uint64_t k = 0; k < n; k++) {
            uint8_t *a = (uint8_t *)acc + k, b = ((const uint8_t *)src)[k];
            *a = op == OARLOCK_PROD || op == OARLOCK_MIN ? (*a && b) : (*a || b);
        }
    }
}

/* avg: divide the sum by the number of ranks (integers round toward -inf, like numpy's //) */
#define DIVIDE(T) for (uint64_t k = 0; k < n; k++) ((T *)acc)[k] /= (T)size;
#define FLOOR_DIVIDE(T)                                                                         \
    for (uint64_t k = 0; k < n; k++) {                                                          \
        T *a = (T *)acc + k, q = *a / size;                                                     \
        *a = q * size != *a && *a < 0 ? q - 1 : q;                                              \
    }
static void average(void *acc, uint64_t n, int dt, int size) {
    switch (dt) {
    case OARLOCK_FLOAT32: DIVIDE(float) break;
    case OARLOCK_FLOAT64: DIVIDE(double) break;
    case OARLOCK_INT8: FLOOR_DIVIDE(int8_t) break;
    case OARLOCK_INT16: FLOOR_DIVIDE(int16_t) break;
    case OARLOCK_INT32: FLOOR_DIVIDE(int32_t) break;
    case OARLOCK_INT64: FLOOR_DIVIDE(int64_t) break;
    case OARLOCK_UINT8: DIVIDE(uint8_t) break;
    }
}

/* -- collectives: write my slot, barrier, read the slots, barrier ---------------------------- */
#define AT(buf, off, bytes) ((char *)(buf) + (off) + (bytes))

/* The reduction of every rank's `n` elements at byte `at` of its slot, into `dst` (in rank order). */
static void reduce_slots(comm *c, char *dst, uint64_t at, uint64_t n, int dt, int op) {
    memcpy(dst, slot(c, 0) + at, n * nd_itemsize(dt));
    for (int r = 1; r < c->size; r++) combine(dst, slot(c, r) + at, n, dt, op);
    if (op == OARLOCK_AVG) average(dst, n, dt, c->size);
}

static int reduce_to(comm *c, void *send, uint64_t soff, void *recv, uint64_t roff, uint64_t count, int dt, int op,
                     int root) { /* root < 0: every rank gets the result */
    int64_t sz = nd_itemsize(dt), chunk = SLOT / sz;
    if (reducible(dt)) return OARLOCK_NOT_SUPPORTED;
    for (uint64_t at = 0; at < count; at += chunk) {
        uint64_t n = count - at < (uint64_t)chunk ? count - at : (uint64_t)chunk;
        memcpy(slot(c, c->rank), AT(send, soff, at * sz), n * sz);
        if (barrier(c)) return OARLOCK_ERROR;
        if (root < 0 || root == c->rank) reduce_slots(c, AT(recv, roff, at * sz), 0, n, dt, op);
        if (barrier(c)) return OARLOCK_ERROR;
    }
    return OARLOCK_OK;
}

static int all_reduce(void *h, void *send, uint64_t soff, void *recv, uint64_t roff, uint64_t count, int32_t dt,
                      int32_t op, void *stream) {
    return reduce_to(h, send, soff, recv, roff, count, dt, op, -1);
}
static int reduce(void *h, void *send, uint64_t soff, void *recv, uint64_t roff, uint64_t count, int32_t dt,
                  int32_t op, int32_t root, void *stream) {
    return reduce_to(h, send, soff, recv, roff, count, dt, op, root);
}

static int broadcast(void *h, void *buf, uint64_t off, uint64_t count, int32_t dt, int32_t root, void *stream) {
    comm *c = h;
    uint64_t bytes = count * nd_itemsize(dt);
    for (uint64_t at = 0; at < bytes; at += SLOT) {
        uint64_t n = bytes - at < SLOT ? bytes - at : SLOT;
        if (c->rank == root) memcpy(slot(c, root), AT(buf, off, at), n);
        if (barrier(c)) return OARLOCK_ERROR;
        if (c->rank != root) memcpy(AT(buf, off, at), slot(c, root), n);
        if (barrier(c)) return OARLOCK_ERROR;
    }
    return OARLOCK_OK;
}

static int all_gather(void *h, void *send, uint64_t soff, void *recv, uint64_t roff, uint64_t count, int32_t dt,
                      void *stream) {
    comm *c = h;
    uint64_t bytes = count * nd_itemsize(dt);
    for (uint64_t at = 0; at < bytes; at += SLOT) {
        uint64_t n = bytes - at < SLOT ? bytes - at : SLOT;
        memcpy(slot(c, c->rank), AT(send, soff, at), n);
        if (barrier(c)) return OARLOCK_ERROR;
        for (int r = 0; r < c->size; r++) memcpy(AT(recv, roff, r * bytes + at), slot(c, r), n);
        if (barrier(c)) return OARLOCK_ERROR;
    }
    return OARLOCK_OK;
}

/* Every rank's whole input passes through the slots; each rank reduces only its own block. */
static int reduce_scatter(void *h, void *send, uint64_t soff, void *recv, uint64_t roff, uint64_t count, int32_t dt,
                          int32_t op, void *stream) {
    comm *c = h;
    int64_t sz = nd_itemsize(dt), chunk = SLOT / sz;
    uint64_t total = count * c->size, mine = count * c->rank;
    if (reducible(dt)) return OARLOCK_NOT_SUPPORTED;
    for (uint64_t at = 0; at < total; at += chunk) {
        uint64_t n = total - at < (uint64_t)chunk ? total - at : (uint64_t)chunk;
        memcpy(slot(c, c->rank), AT(send, soff, at * sz), n * sz);
        if (barrier(c)) return OARLOCK_ERROR;
        uint64_t lo = at > mine ? at : mine, hi = at + n < mine + count ? at + n : mine + count;
        if (lo < hi) reduce_slots(c, AT(recv, roff, (lo - mine) * sz), (lo - at) * sz, hi - lo, dt, op);
        if (barrier(c)) return OARLOCK_ERROR;
    }
    return OARLOCK_OK;
}

/* Rank me's slot holds, for each rank j, the next piece of chunk j of its input. */
static int all_to_all(void *h, void *send, uint64_t soff, void *recv, uint64_t roff, uint64_t count, int32_t dt,
                      void *stream) {
    comm *c = h;
    uint64_t bytes = count * nd_itemsize(dt), piece = SLOT / c->size;
    for (uint64_t at = 0; at < bytes; at += piece) {
        uint64_t n = bytes - at < piece ? bytes - at : piece;
        for (int j = 0; j < c->size; j++) memcpy(slot(c, c->rank) + j * piece, AT(send, soff, j * bytes + at), n);
        if (barrier(c)) return OARLOCK_ERROR;
        for (int i = 0; i < c->size; i++) memcpy(AT(recv, roff, i * bytes + at), slot(c, i) + c->rank * piece, n);
        if (barrier(c)) return OARLOCK_ERROR;
    }
    return OARLOCK_OK;
}

/* -- point to point: the mailbox of (sender, receiver) holds one chunk at a time -------------- */
static int transfer(comm *c, char *buf, uint64_t bytes, int peer, int sending) {
    if (peer < 0 || peer >= c->size || peer == c->rank)
        return nd_fail(OARLOCK_INVALID_ARGUMENT, "peer %d is not another rank of [0, %d)", peer, c->size);
    size_t box = sending ? (size_t)c->rank * c->size + peer : (size_t)peer * c->size + c->rank;
    mailbox_line *m = &c->boxes[box];
    char *data = c->box_data + box * MAILBOX;
    for (uint64_t at = 0; at < bytes; at += MAILBOX) {
        uint64_t n = bytes - at < MAILBOX ? bytes - at : MAILBOX;
        waiter w = {0};
        uint64_t sent, taken; /* the sender waits for an empty box, the receiver for a full one */
        while (sent = atomic_load_explicit(&m->sent, memory_order_acquire),
               taken = atomic_load_explicit(&m->taken, memory_order_acquire), sending ? taken != sent : taken == sent)
            if (give_up(c, &w))
                return nd_fail(OARLOCK_ERROR, "rank %d did not %s within %g s (rank %d waited)", peer,
                               sending ? "take the previous message" : "send", c->timeout, c->rank);
        if (sending) {
            memcpy(data, buf + at, n);
            atomic_store_explicit(&m->sent, sent + 1, memory_order_release);
        } else {
            memcpy(buf + at, data, n);
            atomic_store_explicit(&m->taken, taken + 1, memory_order_release);
        }
    }
    return OARLOCK_OK;
}
static int send_to(void *h, void *buf, uint64_t off, uint64_t count, int32_t dt, int32_t peer, void *stream) {
    return transfer(h, AT(buf, off, 0), count * nd_itemsize(dt), peer, 1);
}
static int recv_from(void *h, void *buf, uint64_t off, uint64_t count, int32_t dt, int32_t peer, void *stream) {
    return transfer(h, AT(buf, off, 0), count * nd_itemsize(dt), peer, 0);
}

void nd_collectives(oarlock_plugin *p) {
    p->comm_unique_id = unique_id;
    p->comm_create = create;
    p->comm_destroy = destroy;
    p->comm_set_timeout = set_timeout;
    p->all_reduce = all_reduce;
    p->reduce = reduce;
    p->broadcast = broadcast;
    p->all_gather = all_gather;
    p->reduce_scatter = reduce_scatter;
    p->all_to_all = all_to_all;
    p->send = send_to;
    p->recv = recv_from;
    p->barrier = barrier;
}
