/* gpu.c — GPU utilisation and memory through NVML (sonde run --gpu).
 *
 * Owns: the GPU reader of a session. NVML (libnvidia-ml.so.1, part of the
 * NVIDIA driver) is loaded at run time with dlopen; sonde is built without
 * CUDA or NVML headers, so the few types and functions it calls are
 * declared here, as NVML's public nvml.h defines them. A reader thread
 * initialises NVML, picks the devices (CUDA_VISIBLE_DEVICES), and polls
 * them every few sampling intervals, since one NVML call can take
 * milliseconds; it publishes each reading under a sequence lock. At every
 * tick the CPU sampler takes the readings' mean over the tick's interval
 * (gpu_interval, lock-free) and attaches it to every sample it
 * charges, weighted by the sample's time: that is how each line gets the
 * GPU utilisation and memory in use while it ran (seed 000 §4).
 *
 * Figures are this process tree's own when NVML can tell (per-process
 * utilisation samples and the list of compute processes, matched against
 * this process and its descendants), else the devices' (device-wide).
 * Utilisation is the mean over the chosen devices; memory is their sum.
 *
 * Called by session.c (start, stop, report; with the GIL, or on the
 * sampler thread for the SIGTERM report) and by the sampler thread, which
 * loads NVML and starts the reader after its first tick (off the
 * program's start: gpu_launch). No
 * signal handler or allocator hook runs here. Without the library, a
 * device or a working NVML, the reader stays idle and the report has no
 * GPU figures; the reason is one line on stderr with --verbose (or when
 * --gpu was asked for explicitly).
 *
 * The tests load a stand-in libnvidia-ml.so.1 (tests/gpu/fake_nvml.c)
 * through LD_LIBRARY_PATH; nothing here knows about it.
 */
#include "ext.h"

#include "../core/atomic.h"

#include <dlfcn.h>
#include <limits.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* ---- the reader's state and readings ---------------------------------------------
 * NVML loaded at run time; a reader thread polls it and publishes the
 * latest reading, which the sampler attaches to each sample it charges. */

#define SONDE_GPU_MAX_DEVICES 16

/* The readings over one of the sampler's ticks (gpu_interval). */
typedef struct sonde_gpu_reading {
    double util_percent;   /* mean over the interval and the chosen devices */
    double memory_mb;      /* mean over the interval, summed over devices (MiB) */
    double peak_memory_mb; /* the highest reading in the interval */
} sonde_gpu_reading_t;

/* Where the sampler's previous tick left the GPU readings. */
typedef struct sonde_gpu_cursor {
    bool have;                     /* the previous tick had a reading */
    uint64_t polls;                /* readings published by then */
    sonde_ns_t t_ns;               /* its time */
    double util_area, memory_area; /* the integrals, up to t_ns */
    double memory_mb;              /* the reading in force at t_ns */
} sonde_gpu_cursor_t;
#define SONDE_GPU_RING 16 /* recent readings kept for the sampler's peaks */

struct sonde_gpu_nvml; /* private to gpu.c */

/* The readings, published by the reader thread under a sequence lock
 * (seq odd while it writes; the sampler retries a torn read a few times,
 * then goes without). Readings hold from one poll to the next: the
 * integrals let the sampler take the mean over any interval. */
typedef struct sonde_gpu_published {
    _Atomic uint32_t seq;
    _Atomic uint32_t valid;      /* 0: no reading (not yet, or NVML failed) */
    _Atomic uint64_t polls;      /* readings published so far */
    _Atomic uint64_t at_ns;      /* monotonic time of the latest */
    _Atomic double util_percent; /* the latest reading */
    _Atomic double memory_mb;
    _Atomic double util_area;                      /* integral of utilisation (% s) up to at_ns */
    _Atomic double memory_area;                    /* integral of memory (MB s) up to at_ns */
    _Atomic double ring_memory_mb[SONDE_GPU_RING]; /* reading k's memory at k % RING */
} sonde_gpu_published_t;

typedef struct sonde_gpu {
    /* Set by gpu_start, read-only afterwards. */
    bool started;     /* between start and free */
    pid_t pid;        /* the process that started it (a forked
                                     child has no reader thread) */
    int8_t requested; /* opts->gpu: 1 --gpu, 0 --no-gpu, -1 default */
    bool verbose;
    bool stderr_open; /* fd 2 was open at start: notes may go there */
    sonde_ns_t poll_ns;
    /* Set by gpu_start; gpu_launch (the sampler thread) loads
     * NVML, clears it and starts the reader. Read by others only after
     * joining the sampler thread. */
    bool launch_pending;
    struct sonde_gpu_nvml *nvml; /* owned; NULL without the library */
    /* Written by the reader thread before it sets ready (release); read by
     * others only after seeing ready (acquire). */
    char device_name[512]; /* the chosen devices' names, ", "-joined */
    bool per_process;      /* this process tree's figures, not the devices' */
    /* Shared. */
    sonde_gpu_published_t pub; /* written by the reader thread only */
    atomic_bool ready;         /* devices chosen, a first reading published */
    atomic_bool stop_requested;
    sonde_prim_wake_t wake; /* stop */
    pthread_t thread;
    atomic_int thread_tid; /* the reader's kernel tid (0 before it runs) */
    bool thread_started;   /* written by the starting/stopping thread */
    bool paused;           /* stopped for fork, to restart */
    /* Written by the reader thread, read by others after joining it. */
    bool setup_tried; /* NVML and the devices were set up (or failed) */
    bool finished;    /* the reader ended for good (no GPU, lost) */
    /* The sampler thread's only (gpu_source_tick). */
    sonde_gpu_cursor_t cursor;
} sonde_gpu_t;

/* Prepares the reader, unless opts->gpu is 0; gpu_launch starts it.
 * Never fails. Call gpu_free afterwards in every case. */
static void gpu_start(sonde_gpu_t *g, const sonde_run_opts_t *opts);
/* Loads NVML and starts the reader thread, once, if start prepared one:
 * called on the sampler thread after its first tick, so that the search
 * for the library (dlopen over some thirty paths) and the reader's start
 * are not part of the program's start, and the descriptor table grows
 * before a second thread exists (sonde_prim_kept_reserve). Never fails:
 * without the library, a device or a working NVML the reader stays idle
 * (one line on stderr says why with opts->verbose, or when opts->gpu is 1).
 * Callers of stop, pause, resume and free join the sampler thread first. */
static void gpu_launch(sonde_gpu_t *g);
/* The readings since the previous call with this cursor (the sampler's
 * previous tick): their time-weighted means and peak; the first call
 * after a gap gives the latest reading. Returns false when there is no
 * reading (then the cursor restarts). Lock-free and bounded: the sampler
 * thread calls it every tick. */
static bool gpu_interval(const sonde_gpu_t *g, sonde_gpu_cursor_t *cursor,
                         sonde_gpu_reading_t *out);
/* Marks prof as having GPU figures (device names, per process or not)
 * when the reader found a GPU; otherwise leaves it alone. Returns 0 or
 * -ENOMEM. Any thread, any time after start. */
static int gpu_to_profile(const sonde_gpu_t *g, sonde_profile_t *prof);
/* Stops and joins the reader thread. Idempotent. */
static void gpu_stop(sonde_gpu_t *g);
/* Around fork(): stops the reader (waiting until the kernel no longer
 * lists its thread) and, in the parent afterwards, restarts it with the
 * devices already set up. Both harmless when no reader runs. GIL held. */
static void gpu_pause(sonde_gpu_t *g);
static void gpu_resume(sonde_gpu_t *g);
/* Stops the reader, shuts NVML down and frees everything. Idempotent;
 * harmless on a zeroed sonde_gpu_t. */
static void gpu_free(sonde_gpu_t *g);

#define GPU_LIBRARY "libnvidia-ml.so.1"
/* Polls follow the sampling interval within these bounds: NVML's own
 * sample period is 1/6 s to 1 s, so polling faster only costs. */
#define GPU_POLL_MIN_NS (20 * 1000 * 1000ull)
#define GPU_POLL_MAX_NS (100 * 1000 * 1000ull)
#define GPU_MAX_PROCESSES 256   /* entries read from a device's lists */
#define GPU_MAX_FAILED_POLLS 10 /* failures in a row before readings stop */
/* A per-process utilisation sample stands for this long when no newer one
 * arrives (NVML's sample period is at most 1 s). */
#define GPU_PROCESS_SAMPLE_STALE_NS (1000 * 1000 * 1000ull)
#define GPU_BYTES_PER_MB 1048576.0

/* ---- NVML's interface (nvml.h, NVML_API_VERSION 11-13) --------------------
 * Only what sonde calls. nvmlReturn_t is an enum (int-sized); nvmlDevice_t
 * is an opaque pointer (newer headers wrap it in a one-pointer struct,
 * which the ABI passes the same way). */

typedef int gpu_nvml_return_t;
enum {
    GPU_NVML_SUCCESS = 0,
    GPU_NVML_ERROR_NOT_SUPPORTED = 3,
    GPU_NVML_ERROR_NO_PERMISSION = 4,
    GPU_NVML_ERROR_NOT_FOUND = 6,
    GPU_NVML_ERROR_INSUFFICIENT_SIZE = 7,
    GPU_NVML_ERROR_FUNCTION_NOT_FOUND = 13,
};
#define GPU_NVML_NAME_SIZE 96                   /* NVML_DEVICE_NAME_V2_BUFFER_SIZE */
#define GPU_NVML_UUID_SIZE 96                   /* NVML_DEVICE_UUID_V2_BUFFER_SIZE */
#define GPU_NVML_VALUE_NOT_AVAILABLE ULLONG_MAX /* (unsigned long long)-1 */

typedef struct gpu_nvml_device *gpu_nvml_device_t;

typedef struct gpu_nvml_utilization { /* nvmlUtilization_t */
    unsigned int gpu;                 /* % of the last sample period a kernel ran */
    unsigned int memory;              /* % of it device memory was read or written */
} gpu_nvml_utilization_t;

typedef struct gpu_nvml_memory { /* nvmlMemory_t (v1), bytes */
    unsigned long long total, free, used;
} gpu_nvml_memory_t;

typedef struct gpu_nvml_process_info { /* nvmlProcessInfo_t (= _v2_t), as
                                          nvmlDeviceGetComputeRunningProcesses_v3 fills it */
    unsigned int pid;
    unsigned long long used_gpu_memory; /* bytes, or NOT_AVAILABLE */
    unsigned int gpu_instance_id, compute_instance_id;
} gpu_nvml_process_info_t;

typedef struct gpu_nvml_process_sample { /* nvmlProcessUtilizationSample_t */
    unsigned int pid;
    unsigned long long time_stamp; /* CPU timestamp, µs */
    unsigned int sm_util, mem_util, enc_util, dec_util;
} gpu_nvml_process_sample_t;

_Static_assert(sizeof(gpu_nvml_process_info_t) == 24, "nvmlProcessInfo_t layout");
_Static_assert(sizeof(gpu_nvml_process_sample_t) == 32, "nvmlProcessUtilizationSample_t layout");

/* ---- the reader's private state ---------------------------------------------- */

typedef struct gpu_device {
    gpu_nvml_device_t handle;
    unsigned int index; /* NVML's index */
    /* Per-process utilisation (owned by the reader thread). */
    unsigned long long last_seen_us; /* newest sample timestamp read */
    double process_util;             /* our latest figure, % */
    sonde_ns_t process_util_ns;      /* when it was read */
} gpu_device_t;

struct sonde_gpu_nvml {
    void *lib; /* owned (dlopen handle) */
    gpu_nvml_return_t (*init)(void);
    gpu_nvml_return_t (*shutdown)(void);
    const char *(*error_string)(gpu_nvml_return_t); /* may be NULL */
    gpu_nvml_return_t (*device_count)(unsigned int *);
    gpu_nvml_return_t (*handle_by_index)(unsigned int, gpu_nvml_device_t *);
    gpu_nvml_return_t (*name)(gpu_nvml_device_t, char *, unsigned int);
    gpu_nvml_return_t (*uuid)(gpu_nvml_device_t, char *, unsigned int); /* may be NULL */
    gpu_nvml_return_t (*utilization)(gpu_nvml_device_t, gpu_nvml_utilization_t *);
    gpu_nvml_return_t (*memory)(gpu_nvml_device_t, gpu_nvml_memory_t *);
    gpu_nvml_return_t (*compute_processes)(gpu_nvml_device_t, unsigned int *,
                                           gpu_nvml_process_info_t *); /* may be NULL */
    gpu_nvml_return_t (*process_utilization)(gpu_nvml_device_t, gpu_nvml_process_sample_t *,
                                             unsigned int *, unsigned long long); /* may be NULL */
    /* Owned by the reader thread. */
    bool initialised;
    gpu_device_t devices[SONDE_GPU_MAX_DEVICES];
    unsigned int n_devices;
    pid_t self;
    gpu_nvml_process_info_t infos[GPU_MAX_PROCESSES];
    gpu_nvml_process_sample_t samples[GPU_MAX_PROCESSES];
};

/* ---- notes on stderr ------------------------------------------------------------ */

/* One line "sonde: GPU: ..." on stderr when --verbose, or when --gpu was
 * asked for and this is why there will be no GPU figures. */
static void gpu_note(const sonde_gpu_t *g, bool problem, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void gpu_note(const sonde_gpu_t *g, bool problem, const char *fmt, ...)
{
    if (!g->stderr_open || (!g->verbose && !(problem && g->requested == 1))) return;
    char line[512];
    int n = snprintf(line, sizeof line, "sonde: GPU: ");
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(line + n, sizeof line - (size_t)n - 1, fmt, ap);
    va_end(ap);
    size_t len = strlen(line);
    line[len++] = '\n';
    ssize_t rc = write(2, line, len);
    (void)rc;
}

static const char *gpu_error(const struct sonde_gpu_nvml *nv, gpu_nvml_return_t rc)
{
    const char *text = nv->error_string ? nv->error_string(rc) : NULL;
    return text ? text : "unknown error";
}

/* ---- the published readings ------------------------------------------------------
 * A sequence lock (sonde_gpu_published_t): one writer, the reader thread;
 * the sampler copies the fields and keeps the copy only if seq was even
 * and unchanged around it. Each reading holds until the next poll, so the
 * integrals grow by the previous reading times the time between polls. */

#define GPU_READ_TRIES 8 /* torn copies retried before a tick goes without */

/* Publishes a reading taken at `now`, or (valid false) that there will be
 * no more. Reader thread only. */
static void gpu_publish(sonde_gpu_t *g, bool valid, double util_percent, double memory_mb,
                        sonde_ns_t now)
{
    sonde_gpu_published_t *p = &g->pub;
    uint32_t seq = sonde_atomic_load_relaxed(&p->seq);
    sonde_atomic_store_relaxed(&p->seq, seq + 1);
    atomic_thread_fence(memory_order_release);
    uint64_t polls = sonde_atomic_load_relaxed(&p->polls);
    if (sonde_atomic_load_relaxed(&p->valid) && polls) {
        double held_sec = (double)(now - sonde_atomic_load_relaxed(&p->at_ns)) / 1e9;
        sonde_atomic_store_relaxed(&p->util_area,
                                   sonde_atomic_load_relaxed(&p->util_area) +
                                       sonde_atomic_load_relaxed(&p->util_percent) * held_sec);
        sonde_atomic_store_relaxed(&p->memory_area,
                                   sonde_atomic_load_relaxed(&p->memory_area) +
                                       sonde_atomic_load_relaxed(&p->memory_mb) * held_sec);
    }
    if (valid) {
        polls++;
        sonde_atomic_store_relaxed(&p->polls, polls);
        sonde_atomic_store_relaxed(&p->at_ns, now);
        sonde_atomic_store_relaxed(&p->util_percent, util_percent);
        sonde_atomic_store_relaxed(&p->memory_mb, memory_mb);
        sonde_atomic_store_relaxed(&p->ring_memory_mb[polls % SONDE_GPU_RING], memory_mb);
    }
    sonde_atomic_store_relaxed(&p->valid, valid ? 1u : 0u);
    sonde_atomic_store_release(&p->seq, seq + 2);
}

/* A consistent copy of the published readings; peak_mb is the highest
 * memory of the readings after `since` (the last SONDE_GPU_RING at most). */
typedef struct gpu_snapshot {
    bool valid;
    uint64_t polls;
    sonde_ns_t at_ns;
    double util_percent, memory_mb, util_area, memory_area, peak_mb;
} gpu_snapshot_t;

static bool gpu_snapshot(const sonde_gpu_published_t *p, uint64_t since, gpu_snapshot_t *snap)
{
    for (int tries = 0; tries < GPU_READ_TRIES; tries++) {
        uint32_t seq = sonde_atomic_load_acquire(&p->seq);
        if (seq & 1) continue;
        snap->valid = sonde_atomic_load_relaxed(&p->valid) != 0;
        snap->polls = sonde_atomic_load_relaxed(&p->polls);
        snap->at_ns = sonde_atomic_load_relaxed(&p->at_ns);
        snap->util_percent = sonde_atomic_load_relaxed(&p->util_percent);
        snap->memory_mb = sonde_atomic_load_relaxed(&p->memory_mb);
        snap->util_area = sonde_atomic_load_relaxed(&p->util_area);
        snap->memory_area = sonde_atomic_load_relaxed(&p->memory_area);
        snap->peak_mb = 0;
        uint64_t from = snap->polls > SONDE_GPU_RING ? snap->polls - SONDE_GPU_RING : 0;
        if (since > from) from = since;
        for (uint64_t k = from + 1; k <= snap->polls; k++) {
            double mb = sonde_atomic_load_relaxed(&p->ring_memory_mb[k % SONDE_GPU_RING]);
            if (mb > snap->peak_mb) snap->peak_mb = mb;
        }
        atomic_thread_fence(memory_order_acquire);
        if (sonde_atomic_load_relaxed(&p->seq) == seq) return true;
    }
    return false;
}

static bool gpu_interval(const sonde_gpu_t *g, sonde_gpu_cursor_t *cursor, sonde_gpu_reading_t *out)
{
    gpu_snapshot_t snap;
    if (!gpu_snapshot(&g->pub, cursor->have ? cursor->polls : 0, &snap) || !snap.valid ||
        !snap.polls) {
        cursor->have = false;
        return false;
    }
    sonde_ns_t now = sonde_prim_monotonic_ns();
    if (now < snap.at_ns) now = snap.at_ns;
    double ahead_sec = (double)(now - snap.at_ns) / 1e9;
    double util_area = snap.util_area + snap.util_percent * ahead_sec;
    double memory_area = snap.memory_area + snap.memory_mb * ahead_sec;
    if (cursor->have && now > cursor->t_ns) {
        double dt_sec = (double)(now - cursor->t_ns) / 1e9;
        out->util_percent = (util_area - cursor->util_area) / dt_sec;
        out->memory_mb = (memory_area - cursor->memory_area) / dt_sec;
        out->peak_memory_mb = snap.peak_mb > cursor->memory_mb ? snap.peak_mb : cursor->memory_mb;
    } else {
        out->util_percent = snap.util_percent;
        out->memory_mb = out->peak_memory_mb = snap.memory_mb;
    }
    /* (rounding in the differences) */
    if (out->util_percent < 0) out->util_percent = 0;
    if (out->util_percent > 100) out->util_percent = 100;
    if (out->memory_mb < 0) out->memory_mb = 0;
    cursor->have = true;
    cursor->polls = snap.polls;
    cursor->t_ns = now;
    cursor->util_area = util_area;
    cursor->memory_area = memory_area;
    cursor->memory_mb = snap.memory_mb;
    return true;
}

/* ---- loading NVML ------------------------------------------------------------------- */

#define GPU_SYM(nv, field, name, required)                                                         \
    do {                                                                                           \
        *(void **)&(nv)->field = dlsym((nv)->lib, name);                                           \
        if (!(nv)->field && (required)) {                                                          \
            missing = name;                                                                        \
            goto error;                                                                            \
        }                                                                                          \
    } while (0)

/* Opens the library and finds its functions. Returns the state or NULL,
 * with why set. */
static struct sonde_gpu_nvml *gpu_load(char *why, size_t why_len)
{
    const char *missing = NULL;
    struct sonde_gpu_nvml *nv = calloc(1, sizeof *nv);
    if (!nv) {
        snprintf(why, why_len, "out of memory");
        return NULL;
    }
    nv->lib = dlopen(GPU_LIBRARY, RTLD_NOW | RTLD_LOCAL);
    if (!nv->lib) {
        const char *err = dlerror();
        snprintf(why, why_len, "cannot load %s, which comes with the NVIDIA driver (%s)",
                 GPU_LIBRARY, err ? err : "dlopen failed");
        free(nv);
        return NULL;
    }
    GPU_SYM(nv, init, "nvmlInit_v2", true);
    GPU_SYM(nv, shutdown, "nvmlShutdown", true);
    GPU_SYM(nv, error_string, "nvmlErrorString", false);
    GPU_SYM(nv, device_count, "nvmlDeviceGetCount_v2", true);
    GPU_SYM(nv, handle_by_index, "nvmlDeviceGetHandleByIndex_v2", true);
    GPU_SYM(nv, name, "nvmlDeviceGetName", true);
    GPU_SYM(nv, uuid, "nvmlDeviceGetUUID", false);
    GPU_SYM(nv, utilization, "nvmlDeviceGetUtilizationRates", true);
    GPU_SYM(nv, memory, "nvmlDeviceGetMemoryInfo", true);
    GPU_SYM(nv, compute_processes, "nvmlDeviceGetComputeRunningProcesses_v3", false);
    GPU_SYM(nv, process_utilization, "nvmlDeviceGetProcessUtilization", false);
    return nv;
error:
    snprintf(why, why_len, "%s has no %s (driver too old)", GPU_LIBRARY, missing);
    dlclose(nv->lib);
    free(nv);
    return NULL;
}

/* ---- choosing devices ---------------------------------------------------------------- */

/* The index of the device whose UUID starts with prefix (CUDA accepts any
 * unambiguous prefix of "GPU-..."), or -1. */
static int gpu_find_uuid(struct sonde_gpu_nvml *nv, unsigned int count, const char *prefix,
                         size_t len)
{
    int found = -1;
    if (!nv->uuid) return -1;
    for (unsigned int i = 0; i < count; i++) {
        gpu_nvml_device_t dev = NULL;
        char uuid[GPU_NVML_UUID_SIZE] = "";
        if (nv->handle_by_index(i, &dev) != GPU_NVML_SUCCESS ||
            nv->uuid(dev, uuid, sizeof uuid) != GPU_NVML_SUCCESS)
            continue;
        if (strncmp(uuid, prefix, len) != 0) continue;
        if (found >= 0) return -1; /* ambiguous */
        found = (int)i;
    }
    return found;
}

/* The NVML indices of the devices CUDA_VISIBLE_DEVICES lets the program
 * use, in its order, into out (at most max). As CUDA does: entries are
 * indices or GPU UUIDs ("GPU-...", any unambiguous prefix); the list ends
 * at the first entry that names no device; unset means every device.
 * Integer entries are taken as NVML (PCI bus) indices, CUDA's numbering
 * under CUDA_DEVICE_ORDER=PCI_BUS_ID. Returns the count. */
static unsigned int gpu_visible(struct sonde_gpu_nvml *nv, unsigned int count, unsigned int *out,
                                unsigned int max)
{
    const char *env = getenv("CUDA_VISIBLE_DEVICES");
    unsigned int n = 0;
    if (!env) {
        for (unsigned int i = 0; i < count && n < max; i++)
            out[n++] = i;
        return n;
    }
    const char *p = env;
    while (*p && n < max) {
        while (*p == ' ')
            p++;
        size_t len = strcspn(p, ",");
        size_t trimmed = len;
        while (trimmed && p[trimmed - 1] == ' ')
            trimmed--;
        int index = -1;
        if (trimmed && p[0] >= '0' && p[0] <= '9') {
            char *end = NULL;
            long v = strtol(p, &end, 10);
            if (end == p + trimmed && v >= 0 && v < (long)count) index = (int)v;
        } else if (trimmed > 4 && strncmp(p, "GPU-", 4) == 0) {
            index = gpu_find_uuid(nv, count, p, trimmed);
        }
        if (index < 0) break; /* CUDA ignores this entry and the rest */
        bool dup = false;
        for (unsigned int i = 0; i < n; i++)
            dup |= out[i] == (unsigned int)index;
        if (!dup) out[n++] = (unsigned int)index;
        p += len;
        if (*p == ',') p++;
    }
    return n;
}

/* Whether the per-process figures can be read on every chosen device:
 * NVML answers both process queries, and its process ids are ours (it
 * reports the kernel's global ids, which a process in a container with its
 * own pid namespace does not see). Returns true, or false with why set. */
static bool gpu_probe_per_process(struct sonde_gpu_nvml *nv, char *why, size_t why_len)
{
    if (!nv->compute_processes || !nv->process_utilization) {
        snprintf(why, why_len, "this NVML has no per-process queries");
        return false;
    }
    if (sonde_prim_in_initial_pid_ns() != 1) {
        snprintf(why, why_len,
                 "running in a separate pid namespace (a container), where "
                 "NVML's process ids are not this process's");
        return false;
    }
    for (unsigned int i = 0; i < nv->n_devices; i++) {
        gpu_device_t *d = &nv->devices[i];
        unsigned int n = GPU_MAX_PROCESSES;
        gpu_nvml_return_t rc = nv->compute_processes(d->handle, &n, nv->infos);
        if (rc != GPU_NVML_SUCCESS && rc != GPU_NVML_ERROR_INSUFFICIENT_SIZE) {
            snprintf(why, why_len, "device %u does not list its processes: %s", d->index,
                     gpu_error(nv, rc));
            return false;
        }
        n = GPU_MAX_PROCESSES;
        rc = nv->process_utilization(d->handle, nv->samples, &n, 0);
        if (rc != GPU_NVML_SUCCESS && rc != GPU_NVML_ERROR_NOT_FOUND &&
            rc != GPU_NVML_ERROR_INSUFFICIENT_SIZE) {
            snprintf(why, why_len, "device %u has no per-process utilisation: %s", d->index,
                     gpu_error(nv, rc));
            return false;
        }
        /* Only samples newer than these count from now on. */
        for (unsigned int k = 0; rc == GPU_NVML_SUCCESS && k < n && k < GPU_MAX_PROCESSES; k++)
            if (nv->samples[k].time_stamp > d->last_seen_us)
                d->last_seen_us = nv->samples[k].time_stamp;
    }
    return true;
}

/* ---- polling ---------------------------------------------------------------------------- */

static bool gpu_pid_ours(const struct sonde_gpu_nvml *nv, unsigned int pid)
{
    if ((pid_t)pid == nv->self) return true;
    return sonde_prim_descends_from((pid_t)pid, nv->self) == 1;
}

/* This process tree's utilisation of device d, %: the newest sample of
 * each of its processes, summed; samples of other processes only mean
 * that ours had none (NVML lists only processes that used the device).
 * Without a new sample, the last figure stands for up to
 * GPU_PROCESS_SAMPLE_STALE_NS. Returns 0 or -EIO. */
static int gpu_poll_process_util(struct sonde_gpu_nvml *nv, gpu_device_t *d, sonde_ns_t now,
                                 double *util)
{
    unsigned int n = GPU_MAX_PROCESSES;
    gpu_nvml_return_t rc = nv->process_utilization(d->handle, nv->samples, &n, d->last_seen_us);
    if (rc == GPU_NVML_ERROR_NOT_FOUND || rc == GPU_NVML_ERROR_INSUFFICIENT_SIZE)
        n = 0;
    else if (rc != GPU_NVML_SUCCESS)
        return -EIO;
    if (n > GPU_MAX_PROCESSES) n = GPU_MAX_PROCESSES;
    if (n > 0) {
        /* The newest sample of each of our processes. */
        unsigned int pids[GPU_MAX_PROCESSES];
        unsigned long long stamps[GPU_MAX_PROCESSES];
        unsigned int utils[GPU_MAX_PROCESSES];
        unsigned int n_ours = 0;
        for (unsigned int k = 0; k < n; k++) {
            const gpu_nvml_process_sample_t *sample = &nv->samples[k];
            if (sample->time_stamp > d->last_seen_us) d->last_seen_us = sample->time_stamp;
            if (!gpu_pid_ours(nv, sample->pid)) continue;
            unsigned int j = 0;
            while (j < n_ours && pids[j] != sample->pid)
                j++;
            if (j == n_ours) {
                n_ours++;
                pids[j] = sample->pid;
                stamps[j] = 0;
            }
            if (sample->time_stamp >= stamps[j]) {
                stamps[j] = sample->time_stamp;
                utils[j] = sample->sm_util;
            }
        }
        double sum = 0;
        for (unsigned int j = 0; j < n_ours; j++)
            sum += utils[j];
        d->process_util = sum > 100 ? 100 : sum;
        d->process_util_ns = now;
    } else if (now - d->process_util_ns > GPU_PROCESS_SAMPLE_STALE_NS) {
        d->process_util = 0;
    }
    *util = d->process_util;
    return 0;
}

/* GPU memory this process tree holds on device d, in bytes. Returns 0 or
 * -EIO. */
static int gpu_poll_process_memory(struct sonde_gpu_nvml *nv, gpu_device_t *d, double *bytes)
{
    unsigned int n = GPU_MAX_PROCESSES;
    if (nv->compute_processes(d->handle, &n, nv->infos) != GPU_NVML_SUCCESS) return -EIO;
    if (n > GPU_MAX_PROCESSES) n = GPU_MAX_PROCESSES;
    double sum = 0;
    for (unsigned int k = 0; k < n; k++) {
        const gpu_nvml_process_info_t *info = &nv->infos[k];
        if (info->used_gpu_memory == GPU_NVML_VALUE_NOT_AVAILABLE) continue;
        if (gpu_pid_ours(nv, info->pid)) sum += (double)info->used_gpu_memory;
    }
    *bytes = sum;
    return 0;
}

/* One device's utilisation (%) and memory in use (bytes). Returns an
 * NVML code. */
static gpu_nvml_return_t gpu_poll_device(sonde_gpu_t *g, gpu_device_t *d, sonde_ns_t now,
                                         double *util, double *bytes)
{
    struct sonde_gpu_nvml *nv = g->nvml;
    gpu_nvml_utilization_t u = {0, 0};
    gpu_nvml_return_t rc = nv->utilization(d->handle, &u);
    if (rc != GPU_NVML_SUCCESS) return rc;
    *util = u.gpu > 100 ? 100 : u.gpu;
    if (g->per_process) {
        double mine = 0;
        if (gpu_poll_process_util(nv, d, now, &mine) < 0 ||
            gpu_poll_process_memory(nv, d, bytes) < 0)
            return GPU_NVML_ERROR_NOT_SUPPORTED;
        /* SM samples and the device's busy time are measured apart: the
         * device's figure bounds ours (0 when no kernel ran at all). */
        if (mine < *util) *util = mine;
        return GPU_NVML_SUCCESS;
    }
    gpu_nvml_memory_t m = {0, 0, 0};
    if ((rc = nv->memory(d->handle, &m)) != GPU_NVML_SUCCESS) return rc;
    *bytes = (double)m.used;
    return GPU_NVML_SUCCESS;
}

/* One reading of every chosen device: mean utilisation, summed memory.
 * Returns 0, or -EIO with *failed set to the NVML code. */
static int gpu_poll(sonde_gpu_t *g, double *util_percent, double *memory_mb, int *failed)
{
    struct sonde_gpu_nvml *nv = g->nvml;
    sonde_ns_t now = sonde_prim_monotonic_ns();
    double util_sum = 0, bytes_sum = 0;
    for (unsigned int i = 0; i < nv->n_devices; i++) {
        double util = 0, bytes = 0;
        gpu_nvml_return_t rc = gpu_poll_device(g, &nv->devices[i], now, &util, &bytes);
        if (rc != GPU_NVML_SUCCESS) {
            *failed = rc;
            return -EIO;
        }
        util_sum += util;
        bytes_sum += bytes;
    }
    *util_percent = nv->n_devices ? util_sum / nv->n_devices : 0;
    *memory_mb = bytes_sum / GPU_BYTES_PER_MB;
    return 0;
}

/* ---- the reader thread ---------------------------------------------------------------- */

/* Initialises NVML, chooses the devices and how to read them, and takes a
 * first reading. Returns 0, or -1 after saying why. */
static int gpu_setup(sonde_gpu_t *g)
{
    struct sonde_gpu_nvml *nv = g->nvml;
    char why[256] = "";
    gpu_nvml_return_t rc = nv->init();
    if (rc != GPU_NVML_SUCCESS) {
        gpu_note(g, true, "not profiled: NVML did not initialise: %s (error %d)", gpu_error(nv, rc),
                 rc);
        return -1;
    }
    nv->initialised = true;
    unsigned int count = 0;
    if ((rc = nv->device_count(&count)) != GPU_NVML_SUCCESS) {
        gpu_note(g, true, "not profiled: NVML cannot count the GPUs: %s", gpu_error(nv, rc));
        return -1;
    }
    if (count == 0) {
        gpu_note(g, true, "not profiled: NVML sees no GPU");
        return -1;
    }
    unsigned int chosen[SONDE_GPU_MAX_DEVICES];
    unsigned int n = gpu_visible(nv, count, chosen, SONDE_GPU_MAX_DEVICES);
    if (n == 0) {
        gpu_note(g, true, "not profiled: CUDA_VISIBLE_DEVICES='%s' selects none of the %u GPU%s",
                 getenv("CUDA_VISIBLE_DEVICES"), count, count == 1 ? "" : "s");
        return -1;
    }
    for (unsigned int i = 0; i < n; i++) {
        gpu_device_t *d = &nv->devices[nv->n_devices];
        memset(d, 0, sizeof *d);
        d->index = chosen[i];
        char name[GPU_NVML_NAME_SIZE] = "";
        if ((rc = nv->handle_by_index(d->index, &d->handle)) != GPU_NVML_SUCCESS ||
            (rc = nv->name(d->handle, name, sizeof name)) != GPU_NVML_SUCCESS) {
            gpu_note(g, true, "not profiled: NVML cannot open device %u: %s", d->index,
                     gpu_error(nv, rc));
            return -1;
        }
        name[sizeof name - 1] = 0;
        nv->n_devices++;
        size_t used = strlen(g->device_name);
        snprintf(g->device_name + used, sizeof g->device_name - used, "%s%s", i ? ", " : "", name);
    }
    nv->self = getpid();
    g->per_process = gpu_probe_per_process(nv, why, sizeof why);

    double util = 0, memory_mb = 0;
    int failed = 0;
    if (gpu_poll(g, &util, &memory_mb, &failed) < 0) {
        gpu_note(g, true, "not profiled: reading %s failed: %s", g->device_name,
                 gpu_error(nv, failed));
        return -1;
    }
    gpu_publish(g, true, util, memory_mb, sonde_prim_monotonic_ns());
    char devices[64] = "";
    int w = 0;
    for (unsigned int i = 0; i < nv->n_devices && w >= 0 && (size_t)w < sizeof devices; i++)
        w += snprintf(devices + w, sizeof devices - (size_t)w, "%s%u", i ? "," : "",
                      nv->devices[i].index);
    gpu_note(g, false, "profiling %s (NVML device%s %s); %s%s%s", g->device_name,
             nv->n_devices == 1 ? "" : "s", devices,
             g->per_process ? "figures of this process and its children" : "device-wide figures",
             g->per_process ? "" : ": ", g->per_process ? "" : why);
    return 0;
}

/* Sleeps until the next poll or a stop request. Returns true to go on. */
static bool gpu_wait(sonde_gpu_t *g)
{
    sonde_prim_wake_wait(&g->wake, g->poll_ns);
    return !sonde_atomic_load_acquire(&g->stop_requested);
}

static void *gpu_main(void *arg)
{
    sonde_gpu_t *g = arg;
    sigset_t all;
    sigfillset(&all);
    pthread_sigmask(SIG_BLOCK, &all, NULL);
    atomic_store(&g->thread_tid, sonde_prim_gettid());

    if (!g->setup_tried) { /* not again after a pause for fork */
        g->setup_tried = true;
        if (gpu_setup(g) < 0) {
            g->finished = true;
            return NULL;
        }
        sonde_atomic_store_release(&g->ready, true);
    }
    int failures = 0;
    while (gpu_wait(g)) {
        double util = 0, memory_mb = 0;
        int failed = 0;
        if (gpu_poll(g, &util, &memory_mb, &failed) == 0) {
            failures = 0;
            gpu_publish(g, true, util, memory_mb, sonde_prim_monotonic_ns());
        } else if (++failures == GPU_MAX_FAILED_POLLS) {
            /* A lost GPU: no reading holds any more; the figures so far stay. */
            gpu_publish(g, false, 0, 0, sonde_prim_monotonic_ns());
            gpu_note(g, true, "NVML stopped answering (%s); later samples have no GPU figures",
                     gpu_error(g->nvml, failed));
            g->finished = true;
            break;
        }
    }
    return NULL;
}

/* ---- public ------------------------------------------------------------------------------ */

static void gpu_start(sonde_gpu_t *g, const sonde_run_opts_t *opts)
{
    memset(g, 0, sizeof *g);
    g->started = true;
    g->pid = getpid();
    g->requested = opts->gpu;
    g->verbose = opts->verbose;
    g->stderr_open = sonde_prim_fd_is_open(STDERR_FILENO);
    if (opts->gpu == 0) {
        gpu_note(g, false, "off (--no-gpu)");
        return;
    }
    sonde_ns_t interval = (sonde_ns_t)(opts->interval_sec * 1e9);
    g->poll_ns = interval < GPU_POLL_MIN_NS   ? GPU_POLL_MIN_NS
                 : interval > GPU_POLL_MAX_NS ? GPU_POLL_MAX_NS
                                              : interval;
    g->launch_pending = true;
}

static void gpu_launch(sonde_gpu_t *g)
{
    char why[512] = "";
    if (!g->launch_pending || g->pid != getpid()) return;
    g->launch_pending = false;
    g->nvml = gpu_load(why, sizeof why);
    if (!g->nvml) {
        gpu_note(g, true, "not profiled: %s", why);
        return;
    }
    int rc = -pthread_create(&g->thread, NULL, gpu_main, g);
    if (rc < 0) {
        gpu_note(g, true, "not profiled: cannot start the GPU reader thread: %s", strerror(-rc));
        gpu_free(g);
        return;
    }
    g->thread_started = true;
}

static void gpu_stop(sonde_gpu_t *g)
{
    if (!g->thread_started || g->pid != getpid()) return;
    sonde_atomic_store_release(&g->stop_requested, true);
    sonde_prim_wake_signal(&g->wake);
    pthread_join(g->thread, NULL);
    g->thread_started = false;
}

static void gpu_pause(sonde_gpu_t *g)
{
    if (!g->thread_started || g->pid != getpid()) return;
    gpu_stop(g);
    sonde_prim_forget_joined_thread(atomic_load(&g->thread_tid), &g->wake);
    sonde_atomic_store_release(&g->stop_requested, false);
    g->paused = true;
}

static void gpu_resume(sonde_gpu_t *g)
{
    if (!g->paused || g->pid != getpid()) return;
    g->paused = false;
    if (g->finished) return; /* no GPU, or NVML stopped answering */
    if (pthread_create(&g->thread, NULL, gpu_main, g) == 0) g->thread_started = true;
}

static int gpu_to_profile(const sonde_gpu_t *g, sonde_profile_t *prof)
{
    if (!sonde_atomic_load_acquire(&g->ready)) return 0;
    return sonde_fig_run_set(&prof->fig_runs[SONDE_FIGSRC_GPU], g->device_name, g->per_process);
}

static void gpu_free(sonde_gpu_t *g)
{
    if (!g->started) return;
    gpu_stop(g);
    if (g->pid != getpid()) { /* a forked child: the thread and NVML are the parent's */
        g->started = false;
        return;
    }
    if (g->nvml) {
        if (g->nvml->initialised) g->nvml->shutdown();
        dlclose(g->nvml->lib);
        free(g->nvml);
        g->nvml = NULL;
    }
    sonde_atomic_store_release(&g->ready, false);
    g->started = false;
}

/* ---- the GPU source (sources.c's row) ------------------------------------------ */

static int gpu_source_start_gil(void *state, const sonde_source_ctx_t *ctx)
{
    gpu_start(state, ctx->opts);
    return 0;
}

static void gpu_source_launch(void *state)
{
    gpu_launch(state);
}

/* The tick's readings in the slots' order (figures.h: seconds and count
 * take none). */
static bool gpu_source_tick(void *state, double *reading)
{
    sonde_gpu_t *g = state;
    sonde_gpu_reading_t r;
    if (!gpu_interval(g, &g->cursor, &r)) return false;
    reading[SONDE_FIG_GPU_SEC - SONDE_FIG_GPU_SEC] = 0;
    reading[SONDE_FIG_GPU_SAMPLES - SONDE_FIG_GPU_SEC] = 0;
    reading[SONDE_FIG_GPU_UTIL - SONDE_FIG_GPU_SEC] = r.util_percent;
    reading[SONDE_FIG_GPU_MEM - SONDE_FIG_GPU_SEC] = r.memory_mb;
    reading[SONDE_FIG_GPU_PEAK - SONDE_FIG_GPU_SEC] = r.peak_memory_mb;
    return true;
}

static void gpu_source_pause_gil(void *state)
{
    gpu_pause(state);
}

static void gpu_source_resume_gil(void *state)
{
    gpu_resume(state);
}

static int gpu_source_to_profile(void *state, const char *cwd, sonde_profile_t *prof, bool period)
{
    (void)cwd;
    (void)period;
    return gpu_to_profile(state, prof);
}

static void gpu_source_release_gil(void *state)
{
    gpu_free(state);
}

const sonde_source_ops_t sonde_source_gpu = {
    .name = "GPU",
    .figs = SONDE_FIGSRC_GPU,
    .state_size = sizeof(sonde_gpu_t),
    .start_gil = gpu_source_start_gil,
    .launch = gpu_source_launch,
    .tick = gpu_source_tick,
    .pause_gil = gpu_source_pause_gil,
    .resume_gil = gpu_source_resume_gil,
    .to_profile = gpu_source_to_profile,
    .release_gil = gpu_source_release_gil,
};
