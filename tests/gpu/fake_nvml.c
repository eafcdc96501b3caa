/* fake_nvml.c — a stand-in libnvidia-ml.so.1 for sonde's GPU tests.
 *
 * FOR TESTS ONLY. It is not NVML and talks to no GPU: it implements the
 * handful of NVML functions sonde calls (src/ext/gpu.c), with the types
 * of NVML's public nvml.h, and answers with figures a test scripts. The
 * Makefile builds it into $(BUILD)/tests/fakenvml/libnvidia-ml.so.1; a
 * test puts that directory on LD_LIBRARY_PATH so that sonde's
 * dlopen("libnvidia-ml.so.1") finds it (tests/e2e/test_gpu.py). It is
 * never installed and nothing else loads it.
 *
 * Environment (read at each call):
 *   FAKE_NVML_MODE     ""              a working NVML
 *                      "init-fails"    nvmlInit_v2 fails (driver not loaded)
 *                      "no-device"     NVML works but sees no GPU
 *                      "no-per-process" the per-process queries are not
 *                                      supported (sonde falls back to
 *                                      device-wide figures)
 *   FAKE_NVML_DEVICES  number of GPUs (default 1, at most 8)
 *   FAKE_NVML_CONTROL  a file the test program rewrites while it runs:
 *                      whitespace-separated key=value words, all optional:
 *       util=P          utilisation % of every device (utilK=P: device K)
 *       mem=MB          device memory in use (memK=MB: device K)
 *       proc_util=P     this process's SM utilisation (proc_utilK: device K;
 *                       default: the device's utilisation)
 *       proc_mem=MB     this process's GPU memory (proc_memK; default: the
 *                       device's memory in use)
 *       child=PID child_util=P child_mem=MB   another process listed on
 *                       every device (the test's child process)
 *       other=PID other_util=P other_mem=MB   a process that is not the
 *                       profiled program's (default pid 1)
 *   FAKE_NVML_LOG      a file to which "init" and "shutdown" lines are
 *                      appended
 * Device K is named "sonde stand-in GPU K" and has the UUID
 * GPU-5e6d0000-0000-4000-8000-00000000000K.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define FAKE_EXPORT __attribute__((visibility("default")))
#define FAKE_MAX_DEVICES 8
#define FAKE_MB 1048576ull

/* NVML's return codes (nvml.h). */
enum {
    FAKE_SUCCESS = 0,
    FAKE_ERROR_UNINITIALIZED = 1,
    FAKE_ERROR_INVALID_ARGUMENT = 2,
    FAKE_ERROR_NOT_SUPPORTED = 3,
    FAKE_ERROR_NOT_FOUND = 6,
    FAKE_ERROR_INSUFFICIENT_SIZE = 7,
    FAKE_ERROR_DRIVER_NOT_LOADED = 9,
};

typedef struct fake_device {
    unsigned int index;
} fake_device_t;

typedef struct {
    unsigned int gpu, memory;
} fake_utilization_t;
typedef struct {
    unsigned long long total, free, used;
} fake_memory_t;
typedef struct {
    unsigned int pid;
    unsigned long long used_gpu_memory;
    unsigned int gpu_instance_id, compute_instance_id;
} fake_process_info_t;
typedef struct {
    unsigned int pid;
    unsigned long long time_stamp;
    unsigned int sm_util, mem_util, enc_util, dec_util;
} fake_process_sample_t;

/* What it exports: NVML's signatures, with its own names for the types. */
FAKE_EXPORT int nvmlInit_v2(void);
FAKE_EXPORT int nvmlShutdown(void);
FAKE_EXPORT const char *nvmlErrorString(int rc);
FAKE_EXPORT int nvmlDeviceGetCount_v2(unsigned int *count);
FAKE_EXPORT int nvmlDeviceGetHandleByIndex_v2(unsigned int index, fake_device_t **device);
FAKE_EXPORT int nvmlDeviceGetName(fake_device_t *device, char *name, unsigned int length);
FAKE_EXPORT int nvmlDeviceGetUUID(fake_device_t *device, char *uuid, unsigned int length);
FAKE_EXPORT int nvmlDeviceGetUtilizationRates(fake_device_t *device, fake_utilization_t *util);
FAKE_EXPORT int nvmlDeviceGetMemoryInfo(fake_device_t *device, fake_memory_t *memory);
FAKE_EXPORT int nvmlDeviceGetComputeRunningProcesses_v3(fake_device_t *device, unsigned int *count,
                                                        fake_process_info_t *infos);
FAKE_EXPORT int nvmlDeviceGetProcessUtilization(fake_device_t *device,
                                                fake_process_sample_t *samples, unsigned int *count,
                                                unsigned long long last_seen);

static fake_device_t fake_devices[FAKE_MAX_DEVICES];
static int fake_initialised;

/* ---- configuration ------------------------------------------------------------ */

static const char *fake_mode(void)
{
    const char *mode = getenv("FAKE_NVML_MODE");
    return mode ? mode : "";
}

static unsigned int fake_count(void)
{
    const char *text = getenv("FAKE_NVML_DEVICES");
    int n = text ? atoi(text) : 1;
    if (strcmp(fake_mode(), "no-device") == 0) return 0;
    return n < 0 ? 0 : n > FAKE_MAX_DEVICES ? FAKE_MAX_DEVICES : (unsigned int)n;
}

static void fake_log(const char *what)
{
    const char *path = getenv("FAKE_NVML_LOG");
    FILE *f = path ? fopen(path, "a") : NULL;
    if (!f) return;
    fprintf(f, "%s %d\n", what, (int)getpid());
    fclose(f);
}

/* The value of key (or key followed by the device index) in the control
 * file, or fallback. */
static double fake_value(const char *key, int device, double fallback)
{
    const char *path = getenv("FAKE_NVML_CONTROL");
    char text[4096];
    size_t n = 0;
    FILE *f = path ? fopen(path, "r") : NULL;
    if (!f) return fallback;
    n = fread(text, 1, sizeof text - 1, f);
    fclose(f);
    text[n] = 0;
    double generic = fallback, specific = -1;
    int have_specific = 0;
    char with_index[64];
    snprintf(with_index, sizeof with_index, "%s%d", key, device);
    for (char *save = NULL, *word = strtok_r(text, " \t\r\n", &save); word;
         word = strtok_r(NULL, " \t\r\n", &save)) {
        char *eq = strchr(word, '=');
        if (!eq) continue;
        *eq = 0;
        if (strcmp(word, key) == 0) generic = atof(eq + 1);
        if (device >= 0 && strcmp(word, with_index) == 0) {
            specific = atof(eq + 1);
            have_specific = 1;
        }
    }
    return have_specific ? specific : generic;
}

static int fake_device_index(const fake_device_t *dev)
{
    if (!dev || dev < fake_devices || dev >= fake_devices + FAKE_MAX_DEVICES) return -1;
    int index = (int)(dev - fake_devices);
    return (unsigned int)index < fake_count() ? index : -1;
}

/* ---- the NVML functions sonde uses --------------------------------------------------- */

FAKE_EXPORT int nvmlInit_v2(void)
{
    if (strcmp(fake_mode(), "init-fails") == 0) return FAKE_ERROR_DRIVER_NOT_LOADED;
    fake_initialised++;
    fake_log("init");
    return FAKE_SUCCESS;
}

FAKE_EXPORT int nvmlShutdown(void)
{
    if (!fake_initialised) return FAKE_ERROR_UNINITIALIZED;
    fake_initialised--;
    fake_log("shutdown");
    return FAKE_SUCCESS;
}

FAKE_EXPORT const char *nvmlErrorString(int rc)
{
    switch (rc) {
    case FAKE_SUCCESS:
        return "Success";
    case FAKE_ERROR_UNINITIALIZED:
        return "Uninitialized";
    case FAKE_ERROR_INVALID_ARGUMENT:
        return "Invalid Argument";
    case FAKE_ERROR_NOT_SUPPORTED:
        return "Not Supported";
    case FAKE_ERROR_NOT_FOUND:
        return "Not Found";
    case FAKE_ERROR_INSUFFICIENT_SIZE:
        return "Insufficient Size";
    case FAKE_ERROR_DRIVER_NOT_LOADED:
        return "Driver Not Loaded";
    default:
        return "Unknown Error";
    }
}

FAKE_EXPORT int nvmlDeviceGetCount_v2(unsigned int *count)
{
    if (!fake_initialised) return FAKE_ERROR_UNINITIALIZED;
    if (!count) return FAKE_ERROR_INVALID_ARGUMENT;
    *count = fake_count();
    return FAKE_SUCCESS;
}

FAKE_EXPORT int nvmlDeviceGetHandleByIndex_v2(unsigned int index, fake_device_t **device)
{
    if (!fake_initialised) return FAKE_ERROR_UNINITIALIZED;
    if (!device || index >= fake_count()) return FAKE_ERROR_INVALID_ARGUMENT;
    fake_devices[index].index = index;
    *device = &fake_devices[index];
    return FAKE_SUCCESS;
}

FAKE_EXPORT int nvmlDeviceGetName(fake_device_t *device, char *name, unsigned int length)
{
    int index = fake_device_index(device);
    if (index < 0 || !name) return FAKE_ERROR_INVALID_ARGUMENT;
    if ((unsigned int)snprintf(name, length, "sonde stand-in GPU %d", index) >= length)
        return FAKE_ERROR_INSUFFICIENT_SIZE;
    return FAKE_SUCCESS;
}

FAKE_EXPORT int nvmlDeviceGetUUID(fake_device_t *device, char *uuid, unsigned int length)
{
    int index = fake_device_index(device);
    if (index < 0 || !uuid) return FAKE_ERROR_INVALID_ARGUMENT;
    if ((unsigned int)snprintf(uuid, length, "GPU-5e6d0000-0000-4000-8000-%012d", index) >= length)
        return FAKE_ERROR_INSUFFICIENT_SIZE;
    return FAKE_SUCCESS;
}

FAKE_EXPORT int nvmlDeviceGetUtilizationRates(fake_device_t *device, fake_utilization_t *util)
{
    int index = fake_device_index(device);
    if (index < 0 || !util) return FAKE_ERROR_INVALID_ARGUMENT;
    util->gpu = (unsigned int)fake_value("util", index, 0);
    util->memory = 0;
    return FAKE_SUCCESS;
}

FAKE_EXPORT int nvmlDeviceGetMemoryInfo(fake_device_t *device, fake_memory_t *memory)
{
    int index = fake_device_index(device);
    if (index < 0 || !memory) return FAKE_ERROR_INVALID_ARGUMENT;
    memory->total = (unsigned long long)fake_value("total", index, 16384) * FAKE_MB;
    memory->used = (unsigned long long)(fake_value("mem", index, 0) * FAKE_MB);
    memory->free = memory->total > memory->used ? memory->total - memory->used : 0;
    return FAKE_SUCCESS;
}

/* The processes device `index` lists: this one, the child, the other. */
static unsigned int fake_processes(int index, fake_process_info_t *infos)
{
    unsigned int n = 0;
    double mine = fake_value("proc_mem", index, fake_value("mem", index, 0));
    infos[n++] = (fake_process_info_t){(unsigned int)getpid(), (unsigned long long)(mine * FAKE_MB),
                                       ~0u, ~0u};
    double child = fake_value("child", -1, 0);
    if (child > 0)
        infos[n++] = (fake_process_info_t){
            (unsigned int)child, (unsigned long long)(fake_value("child_mem", -1, 0) * FAKE_MB),
            ~0u, ~0u};
    double other_mem = fake_value("other_mem", -1, 0);
    if (other_mem > 0)
        infos[n++] = (fake_process_info_t){(unsigned int)fake_value("other", -1, 1),
                                           (unsigned long long)(other_mem * FAKE_MB), ~0u, ~0u};
    return n;
}

FAKE_EXPORT int nvmlDeviceGetComputeRunningProcesses_v3(fake_device_t *device, unsigned int *count,
                                                        fake_process_info_t *infos)
{
    int index = fake_device_index(device);
    if (index < 0 || !count) return FAKE_ERROR_INVALID_ARGUMENT;
    if (strcmp(fake_mode(), "no-per-process") == 0) return FAKE_ERROR_NOT_SUPPORTED;
    fake_process_info_t all[3];
    unsigned int n = fake_processes(index, all);
    if (*count < n) {
        *count = n;
        return FAKE_ERROR_INSUFFICIENT_SIZE;
    }
    if (!infos) return FAKE_ERROR_INVALID_ARGUMENT;
    memcpy(infos, all, n * sizeof *all);
    *count = n;
    return FAKE_SUCCESS;
}

/* As NVML documents: one sample per process that had non-zero utilisation,
 * stamped in µs; NOT_FOUND when none is newer than last_seen. */
FAKE_EXPORT int nvmlDeviceGetProcessUtilization(fake_device_t *device,
                                                fake_process_sample_t *samples, unsigned int *count,
                                                unsigned long long last_seen)
{
    int index = fake_device_index(device);
    if (index < 0 || !count) return FAKE_ERROR_INVALID_ARGUMENT;
    if (strcmp(fake_mode(), "no-per-process") == 0) return FAKE_ERROR_NOT_SUPPORTED;
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    unsigned long long now_us = (unsigned long long)ts.tv_sec * 1000000ull + ts.tv_nsec / 1000;
    if (now_us <= last_seen) now_us = last_seen + 1;
    fake_process_sample_t all[3];
    unsigned int n = 0;
    unsigned int mine = (unsigned int)fake_value("proc_util", index, fake_value("util", index, 0));
    if (mine) all[n++] = (fake_process_sample_t){(unsigned int)getpid(), now_us, mine, 0, 0, 0};
    unsigned int child = (unsigned int)fake_value("child", -1, 0);
    unsigned int child_util = (unsigned int)fake_value("child_util", -1, 0);
    if (child && child_util) all[n++] = (fake_process_sample_t){child, now_us, child_util, 0, 0, 0};
    unsigned int other_util = (unsigned int)fake_value("other_util", -1, 0);
    if (other_util)
        all[n++] = (fake_process_sample_t){
            (unsigned int)fake_value("other", -1, 1), now_us, other_util, 0, 0, 0};
    if (n == 0) return FAKE_ERROR_NOT_FOUND;
    if (!samples || *count < n) {
        *count = n;
        return FAKE_ERROR_INSUFFICIENT_SIZE;
    }
    memcpy(samples, all, n * sizeof *all);
    *count = n;
    return FAKE_SUCCESS;
}
