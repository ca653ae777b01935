/* Compile access of nativedev: language "c", built by the system C compiler ($CC, else cc).
 *
 * compile writes the source to a file, appends a launcher for the entry and builds a shared
 * library; its bytes are the binary the core caches. load writes them to a file and dlopens
 * it. A generated kernel has any parameter list (in0.., out0.., rows), so compile reads the
 * entry's parameters from the source and emits, after it,
 *
 *     void oarlock_launcher(void *const *p, const long long *i, const double *f) {
 *         entry((const float *restrict)p[0], (float *restrict)p[1], (int64_t)i[2]);
 *     }
 *
 * launch fills p, i and f from the oarlock_launch_args and calls it (grid: the function loops
 * over rows itself). Generated kernels carry `#pragma omp` lines: built without -fopenmp they
 * run on one thread, which keeps the plugin free of an OpenMP runtime.
 */
#define _GNU_SOURCE
#include "nativedev.h"

#include <ctype.h>
#include <dlfcn.h>
#include <fcntl.h>
#include <pthread.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;

static const char *FLAGS[] = {"-O2", "-std=gnu11", "-fPIC", "-shared", "-fno-math-errno"};
enum { NFLAGS = sizeof FLAGS / sizeof FLAGS[0], MAX_ARGS = 64 };

static const char *cc(void) {
    const char *c = getenv("CC");
    return c && *c ? c : "cc";
}

/* A folder of our own for the files of one build. */
static int workdir(char *dir, size_t size) {
    const char *tmp = getenv("TMPDIR");
    snprintf(dir, size, "%s/oarlock-nativedev-XXXXXX", tmp && *tmp ? tmp : "/tmp");
    return mkdtemp(dir) ? OARLOCK_OK : nd_fail(OARLOCK_ERROR, "cannot create a folder %s for the build", dir);
}

/* Run argv with stdout and stderr into `log`; its exit status, or -1 when it could not start. */
static int run(char *const *argv, const char *log) {
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_addopen(&fa, 1, log, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    posix_spawn_file_actions_adddup2(&fa, 1, 2);
    pid_t pid;
    int status = -1, err = posix_spawnp(&pid, argv[0], &fa, 0, argv, environ);
    posix_spawn_file_actions_destroy(&fa);
    if (err) return -1;
    if (waitpid(pid, &status, 0) < 0 || !WIFEXITED(status)) return -1;
    return WEXITSTATUS(status);
}

/* The whole file, NUL-terminated, in malloc'd memory (NULL when it cannot be read). */
static char *slurp(const char *path, uint64_t *size) {
    FILE *f = fopen(path, "rb");
    if (!f) return 0;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *buf = malloc(n + 1);
    if (buf && fread(buf, 1, n, f) != (size_t)n) free(buf), buf = 0;
    fclose(f);
    if (buf) buf[n] = 0, *size = (uint64_t)n;
    return buf;
}

static void clean(const char *dir) {
    char path[512];
    for (const char *name = "kernel.c\0kernel.so\0log\0"; *name; name += strlen(name) + 1) {
        snprintf(path, sizeof path, "%s/%s", dir, name);
        unlink(path);
    }
    rmdir(dir);
}

/* -- the launcher: the entry's parameters read from its definition ------------------------- */
static int is_ident(char ch) { return isalnum((unsigned char)ch) || ch == '_'; }

/* Start of the parameter list of `entry`'s definition ("entry ( ... ) {"), its end in *end. */
static const char *parameters(const char *src, const char *entry, const char **end) {
    size_t len = strlen(entry);
    for (const char *s = strstr(src, entry); s; s = strstr(s + 1, entry)) {
        const char *p = s + len;
        if ((s > src && is_ident(s[-1])) || is_ident(*p)) continue;
        while (isspace((unsigned char)*p)) p++;
        const char *close = *p == '(' ? strchr(p, ')') : 0, *q = close ? close + 1 : 0;
        while (q && isspace((unsigned char)*q)) q++;
        if (q && *q == '{') { *end = close; return p + 1; }
    }
    return 0;
}

/* Append the launcher to `out`; the number of parameters, or -1 without a definition. */
static int write_launcher(FILE *out, const char *src, const char *entry) {
    const char *end, *p = parameters(src, entry, &end);
    if (!p) return -1;
    int n = 0;
    fprintf(out, "\nvoid oarlock_launcher(void *const *p, const long long *i, const double *f) {\n    %s(", entry);
    while (p < end) {
        const char *comma = memchr(p, ',', end - p), *stop = comma ? comma : end, *name = stop;
        while (name > p && isspace((unsigned char)name[-1])) name--;
        while (name > p && is_ident(name[-1])) name--; /* the parameter's name: drop it, keep the type */
        int len = (int)(name - p), pointer = memchr(p, '*', len) != 0;
        int real = !pointer && (memmem(p, len, "float", 5) || memmem(p, len, "double", 6));
        while (len && isspace((unsigned char)*p)) p++, len--;
        if (!(n == 0 && !comma && len == 0 && strncmp(p, "void", 4) == 0)) /* "(void)": no parameters */
            fprintf(out, "%s(%.*s)%s[%d]", n ? ", " : "", len, p, pointer ? "p" : real ? "f" : "i", n), n++;
        p = stop + 1;
    }
    fprintf(out, ");\n}\nconst int oarlock_launcher_args = %d;\n", n);
    return n;
}

/* -- the entries ----------------------------------------------------------------------------- */
static pthread_once_t identity_once = PTHREAD_ONCE_INIT;
static char identity_text[512];

static void find_identity(void) {
    char dir[256], log[300];
    uint64_t size;
    snprintf(identity_text, sizeof identity_text, "%s (version unknown)", cc());
    if (workdir(dir, sizeof dir)) return;
    snprintf(log, sizeof log, "%s/log", dir);
    char *argv[] = {(char *)cc(), "--version", 0}, *text;
    if (run(argv, log) == 0 && (text = slurp(log, &size))) {
        text[strcspn(text, "\n")] = 0;
        snprintf(identity_text, sizeof identity_text, "%s: %s", cc(), text);
        free(text);
    }
    clean(dir);
    size_t n = strlen(identity_text);
    for (int k = 0; k < NFLAGS; k++) n += snprintf(identity_text + n, n < sizeof identity_text ? sizeof identity_text - n : 0, " %s", FLAGS[k]);
}

static int identity(int32_t dev, char *buf, uint64_t size) {
    pthread_once(&identity_once, find_identity);
    snprintf(buf, size, "%s", identity_text);
    return OARLOCK_OK;
}

static int compile(int32_t dev, const char *source, const char *entry, const char *const *options, int32_t n_options,
                   void **binary, uint64_t *nbytes) {
    char dir[256], src[300], lib[300], log[300];
    if (n_options > MAX_ARGS) return nd_fail(OARLOCK_INVALID_ARGUMENT, "%d options, at most %d", n_options, MAX_ARGS);
    if (workdir(dir, sizeof dir)) return OARLOCK_ERROR;
    snprintf(src, sizeof src, "%s/kernel.c", dir);
    snprintf(lib, sizeof lib, "%s/kernel.so", dir);
    snprintf(log, sizeof log, "%s/log", dir);
    FILE *f = fopen(src, "w");
    if (!f) { clean(dir); return nd_fail(OARLOCK_ERROR, "cannot write %s", src); }
    fputs(source, f);
    int params = write_launcher(f, source, entry);
    fclose(f);
    char *argv[NFLAGS + MAX_ARGS + 6];
    int k = 0;
    argv[k++] = (char *)cc();
    argv[k++] = src;
    for (int j = 0; j < NFLAGS; j++) argv[k++] = (char *)FLAGS[j];
    for (int j = 0; j < n_options; j++) argv[k++] = (char *)options[j];
    argv[k++] = "-o", argv[k++] = lib, argv[k++] = "-lm", argv[k] = 0;
    int status = run(argv, log);
    uint64_t size = 0;
    char *text = status ? slurp(log, &size) : 0;
    int rc = OARLOCK_OK;
    if (status < 0)
        rc = nd_fail(OARLOCK_ERROR, "cannot run the C compiler '%s'; install one or set CC", cc());
    else if (status)
        rc = nd_fail(OARLOCK_ERROR, "%s could not compile '%s' (exit %d); the compiler's log:\n%s", cc(), entry, status,
                     text ? text : "(no log)");
    else if (params < 0)
        rc = nd_fail(OARLOCK_ERROR, "the source has no definition of '%s' (\"... %s(...) {\" at top level)", entry,
                     entry);
    else if (!(*binary = slurp(lib, nbytes)))
        rc = nd_fail(OARLOCK_ERROR, "cannot read the library %s the compiler wrote", lib);
    free(text);
    clean(dir);
    return rc;
}

static int free_binary(void *binary) { free(binary); return OARLOCK_OK; }

typedef struct {
    void *handle;
    void (*launcher)(void *const *, const long long *, const double *);
    int args;
    char entry[128];
} program;

static int load(int32_t dev, const void *binary, uint64_t nbytes, const char *entry, void **out) {
    char dir[256], lib[300];
    if (workdir(dir, sizeof dir)) return OARLOCK_ERROR;
    snprintf(lib, sizeof lib, "%s/kernel.so", dir);
    FILE *f = fopen(lib, "wb");
    int written = f && fwrite(binary, 1, nbytes, f) == nbytes;
    if (f) fclose(f);
    void *handle = written ? dlopen(lib, RTLD_NOW | RTLD_LOCAL) : 0;
    clean(dir); /* the mapping outlives the file */
    if (!handle) return nd_fail(OARLOCK_ERROR, "cannot load the binary of '%s': %s", entry, written ? dlerror() : "write failed");
    program *p = calloc(1, sizeof *p);
    const int *args = dlsym(handle, "oarlock_launcher_args");
    *(void **)&p->launcher = dlsym(handle, "oarlock_launcher");
    if (!p->launcher || !args) {
        dlclose(handle), free(p);
        return nd_fail(OARLOCK_ERROR, "the binary of '%s' has no oarlock_launcher; clear the kernel cache", entry);
    }
    p->handle = handle, p->args = *args;
    snprintf(p->entry, sizeof p->entry, "%s", entry);
    *out = p;
    return OARLOCK_OK;
}

static int launch(void *prog, const oarlock_launch_arg *args, int32_t n, const int64_t *grid, int32_t grid_dims,
                  const int64_t *local, int32_t local_dims, void *stream) {
    program *p = prog;
    if (n != p->args || n > MAX_ARGS)
        return nd_fail(OARLOCK_INVALID_ARGUMENT, "'%s' takes %d arguments (at most %d), got %d", p->entry, p->args,
                      MAX_ARGS, n);
    void *ptr[MAX_ARGS];
    long long ints[MAX_ARGS];
    double reals[MAX_ARGS];
    for (int k = 0; k < n; k++) {
        const oarlock_launch_arg *a = &args[k];
        ptr[k] = a->kind == OARLOCK_ARG_BUFFER ? (char *)a->data + a->offset : 0;
        ints[k] = a->kind == OARLOCK_ARG_FLOAT ? (long long)a->f : a->i;
        reals[k] = a->kind == OARLOCK_ARG_FLOAT ? a->f : (double)a->i;
    }
    p->launcher(ptr, ints, reals);
    return OARLOCK_OK;
}

static int free_program(void *prog) {
    program *p = prog;
    dlclose(p->handle);
    free(p);
    return OARLOCK_OK;
}

void nd_compiler(oarlock_plugin *p) {
    p->kernel_language = "c";
    p->compiler_identity = identity;
    p->compile = compile;
    p->free_binary = free_binary;
    p->load = load;
    p->launch = launch;
    p->free_program = free_program;
}
