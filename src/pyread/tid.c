/* tid.c — where the kernel thread id sits inside struct pthread.
 *
 * Owns: sonde_pthread_tid_offset. Called by proc.c when it opens a reader
 * for CPython <= 3.10, whose thread states keep only the pthread_t
 * (tstate->thread_id): in glibc (and musl) a pthread_t is the address of
 * the thread's struct pthread, which holds the kernel tid at a fixed,
 * private offset. We find that offset once per process by scanning, through
 * the fault-safe reader, the struct pthread of the calling thread and of a
 * short-lived helper thread for their own gettid() values: the first offset
 * that matches both is taken. threads.c then reads the tid of any thread
 * state at thread_id + offset. For another process the same offset is
 * assumed, i.e. the target uses the same C library build as the reader
 * (true for `sonde attach` on the same system; a container with another
 * libc gives a wrong or zero native_tid, which threads.c bounds-checks).
 * Runs in a normal thread; never in a signal handler.
 */
#include "pyread_internal.h"

#include "../prim/prim.h"

#include <pthread.h>
#include <unistd.h>

#define TID_SCAN_BYTES 4096 /* struct pthread is about 2.3 KiB in glibc 2.36 */
#define TID_SCAN_CHUNK 64

struct tid_helper {
    pthread_mutex_t lock;
    pthread_cond_t cond;
    uint64_t self; /* helper's pthread_self() */
    pid_t tid;     /* helper's gettid() */
    bool ready;    /* helper has filled self/tid */
    bool done;     /* scanner has finished with the helper's struct */
};

static pthread_once_t tid_once = PTHREAD_ONCE_INIT;
static int tid_offset_result = -ENOENT;

/* Whether the int at `offset` of the struct at `base` equals tid. */
static bool tid_matches(sonde_mem_t *mem, uint64_t base, int offset, pid_t tid)
{
    int32_t value = 0;
    return sonde_mem_read(mem, base + (uint64_t)offset, &value, sizeof value) == 0 && value == tid;
}

static void *tid_helper_main(void *arg)
{
    struct tid_helper *helper = arg;

    pthread_mutex_lock(&helper->lock);
    helper->self = (uint64_t)pthread_self();
    helper->tid = sonde_prim_gettid();
    helper->ready = true;
    pthread_cond_broadcast(&helper->cond);
    while (!helper->done)
        pthread_cond_wait(&helper->cond, &helper->lock);
    pthread_mutex_unlock(&helper->lock);
    return NULL;
}

static void tid_probe(void)
{
    struct tid_helper helper = {
        PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, 0, 0, false, false};
    uint64_t self = (uint64_t)pthread_self();
    pid_t tid = sonde_prim_gettid();
    sonde_mem_t mem;
    pthread_t thread;
    int found = -ENOENT;

    if (sonde_mem_open(&mem, 0) != 0) return;
    if (pthread_create(&thread, NULL, tid_helper_main, &helper) != 0) {
        tid_offset_result = -EAGAIN;
        goto out;
    }
    pthread_mutex_lock(&helper.lock);
    while (!helper.ready)
        pthread_cond_wait(&helper.cond, &helper.lock);
    pthread_mutex_unlock(&helper.lock);

    for (int chunk = 0; chunk < TID_SCAN_BYTES && found < 0; chunk += TID_SCAN_CHUNK) {
        int32_t words[TID_SCAN_CHUNK / 4];
        if (sonde_mem_read(&mem, self + (uint64_t)chunk, words, sizeof words) != 0)
            break; /* end of the mapping that holds our struct */
        for (int i = 0; i < TID_SCAN_CHUNK / 4 && found < 0; i++) {
            int offset = chunk + 4 * i;
            if (words[i] == tid && tid_matches(&mem, helper.self, offset, helper.tid))
                found = offset;
        }
    }

    pthread_mutex_lock(&helper.lock);
    helper.done = true;
    pthread_cond_broadcast(&helper.cond);
    pthread_mutex_unlock(&helper.lock);
    pthread_join(thread, NULL);
    tid_offset_result = found;
out:
    sonde_mem_close(&mem);
}

/* Offset of the kernel tid in struct pthread, or -errno (pyread_internal.h). */
int sonde_pthread_tid_offset(void)
{
    pthread_once(&tid_once, tid_probe);
    return tid_offset_result;
}
