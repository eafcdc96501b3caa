/* native.c — Python or native: watching a running thread's innermost frame.
 *
 * Owns: sonde_native_watch, the one rule that tells whether a thread's
 * running time is native code (C reached from its innermost frame,
 * whatever instruction led there: a call, an operator, a subscript, a
 * comparison) or bytecode; and the two sets of its constants, for a front
 * end that reads the thread's CPU clock exactly (the in-process sampler,
 * src/ext/sampler.c) and for one that sees it in scheduler-tick lumps (the
 * attach reader, src/attach/target.c: schedstat of another process).
 * Called by the sampler thread / the attach reader once per running
 * thread per tick, after a stack walk. Looks go through src/pyread/ (fault-
 * safe reads of this process, or process_vm_readv of another: either way
 * they cost the program nothing). Sleeps between looks; no signal handler,
 * no allocation.
 *
 * The rule. The interpreter moves its frame's instruction pointer at every
 * instruction, and a pure-bytecode step takes well under a microsecond;
 * so the watcher looks again and again at the innermost frame, counting
 * only looks after the thread has used more CPU: if rule->looks such looks
 * and rule->proof_ns of the thread's CPU time all find the same frame
 * (address, code) on the same instruction, it is in native code; any
 * change means bytecode. In a loop of two instructions a look lands on the
 * first one's instruction about half the time, so one agreeing look proves
 * nothing, twelve leave well under 1 % (the accuracy tests hold
 * two-instruction loops to >= 95 % Python). A garbage collection in that
 * thread during the looks means Python (the front end's gc_touched: the
 * collector is the interpreter's own work). Between looks at a thread that
 * has not run, the watcher sleeps rather than spins, so that on a busy
 * machine it does not itself keep the thread off its CPU. A thread that
 * does not run long enough within the budget gives no answer, and so does
 * a move seen only after the thread ran rule->move_ns (C work ending while
 * it was watched, or looks too far apart in the thread's time to tell, as
 * when the watcher shares its CPU): such time is shared out by the line's
 * sure answers (sonde_line_split).
 *
 * A thread can also stand still while its CPU clock runs: on a virtual
 * machine the host stops a virtual CPU for tens to hundreds of
 * microseconds, most often just as the watcher's own CPU wakes, and the
 * guest counts that as the thread's time (measured: a spinning C thread
 * seen frozen >= 20 us at 0.2-1 % of looks that follow a sleep, while such
 * stalls fill only 0.03 % of the time: bench/stalls.c; pure-Python lines
 * read 88-92 % Python in some runs before this). So a proof is confirmed
 * (rule->confirm_ns > 0): the watcher sleeps confirm_ns and looks again; a
 * thread still on the same instruction that has run proof_ns more since is
 * native (one that has hardly run is looked at again, within the budget);
 * one that moved is unsure (a stall, or native work shorter than the
 * confirmation).
 *
 * A stall can also outlast the confirmation: the host stops a virtual CPU
 * for milliseconds at a time (measured on this project's 2-CPU machine, a
 * quiet guest: stalls of 1-10 ms, 13 in 30 s of one spinning thread, their
 * sum within the steal time /proc/stat counted for that CPU; a busy host
 * stops it far more often). A thread in a pure-bytecode loop caught in such
 * a stall passes every look and the confirmation, and its line read up to
 * 31 % native in one run. So, where the front end can (watch->resume: the
 * in-process sampler, by membarrier(2), which returns only once every CPU
 * running a thread of the process has taken its interrupt, that is, runs
 * again), the confirmed thread's CPU is resumed and the proof made a third
 * time: a thread that was stopped in bytecode now moves (unsure), one in
 * native code stays. A stall that begins within the last proof's few tens
 * of microseconds is not caught.
 *
 * A coarse clock (rule->coarse_clock: another process's thread, whose CPU
 * time the kernel publishes only at scheduler ticks and switches, in lumps
 * of 1-4 ms) cannot say that the thread ran between two looks. It can say
 * when it ran after a look: the time a lump adds after the first lump seen
 * was all spent after the look before that first lump (the kernel had not
 * yet counted it then). So with a coarse clock the looks count from the
 * look before the clock first moves, the proof is the CPU time added since
 * that first move (at least rule->looks looks' spacing: rule->proof_ns >=
 * rule->looks x the longest gap between looks, so that twelve gaps hold
 * running time), a move is bytecode only when seen within rule->move_ns of
 * wall time of the watch's start, and the proof needs no confirmation (it
 * spans milliseconds, far beyond a stall). A thread that waits for a CPU
 * the whole time adds no lump: no answer, never a false native one.
 *
 * That proof fails C calls shorter than itself: a line that calls one C
 * function again and again stands on the same instruction at every look
 * but for the moments between two calls, and a look landing there ends
 * the proof (the end of C work: no answer), or answers bytecode when it
 * comes within move_ns. The line's only sure answers were then Python
 * ones: zlib.compress of 64 KiB (0.6 ms of CPU a call) read 0 % native
 * under attach on a loaded machine, where run reads it 93-97 %. Bytecode
 * runs only under the GIL, though, and such calls release it for their
 * work (hashing, compression, I/O, numpy's loops). So where the front end
 * can read the GIL (watch->holds_gil: the attach reader, one read), the
 * first look asks it; a thread off the GIL then was not running bytecode
 * but C code, or it was waiting to take the GIL back. The watch tells the
 * two apart by letting it run: it is native once the clock shows it ran
 * (rule->gil_free_proof_ns of CPU time after the first lump, over
 * rule->gil_free_looks looks) without keeping the GIL, else there is no
 * answer, never Python. Here a move of schedstat's run-queue wait counts
 * as a first lump does: it moves when the thread is put on a CPU (or
 * moved between run queues while it waits), so the thread was not
 * running at some moment after the look before, and what the clock adds
 * from then on was run after that look; on a loaded machine, where the
 * thread is switched often, the proof comes without waiting for a second
 * scheduler tick. A thread that was waiting and then runs bytecode keeps
 * the GIL for its switch interval (sys.setswitchinterval, 5 ms by
 * default: a waiter asks the holder to let go only after waiting that long
 * since the GIL last changed hands) unless it lets go itself, so two looks
 * in a row finding it holding the GIL end the watch without an answer;
 * one look alone holding it is a moment between two C calls. For two
 * looks to fall within such a turn they must be at most 2/5 of the switch
 * interval apart (watch->gil_switch_ns, which the front end reads from the
 * target; at most rule->gil_free_gap_ns, 2 ms): two looks further apart
 * (the watcher kept off its CPU) start the count again, as at the watch's
 * start, and a switch interval under five naps (a program that lowered it
 * below 0.5 ms: contended pure-Python threads read 25-62 % native at
 * 0.1 ms before this) leaves the GIL unasked. Moves are not looked for on this path (a C call
 * that ends says nothing of the moment the watch began), which reads the
 * GIL and the clock only: fewer reads than a look at the frame. A thread
 * holding the GIL at the first look (or whose GIL could not be read) is
 * watched as above.
 */
#include "sample.h"

#include "../prim/prim.h"

const sonde_native_rule_t sonde_native_rule_exact = {
    .looks = 12,
    .proof_ns = 40000,    /* CPU time on the one instruction, at least */
    .move_ns = 40000,     /* a move within this much CPU time: bytecode */
    .nap_ns = 20000,      /* sleep between looks at an idle thread */
    .confirm_ns = 200000, /* after the proof, sleep this long and look again */
    .coarse_clock = false,
};

const sonde_native_rule_t sonde_native_rule_coarse = {
    .looks = 12,
    /* 12 gaps of at most 250 us (a 100 us nap, the attach reader's timer
     * slack of up to 200 us at 100 Hz, less the look itself) */
    .proof_ns = 3000000,
    .move_ns = 400000, /* wall time: the first few looks */
    .nap_ns = 100000,
    .confirm_ns = 0,
    .coarse_clock = true,
    .gil_free_looks = 4,
    /* a lump after the first: it ran this long after the look before it */
    .gil_free_proof_ns = 200000,
    /* 2/5 of the default 5 ms switch interval */
    .gil_free_gap_ns = 2000000,
};

/* Whether the thread's innermost frame is elsewhere than the walk's:
 * another frame, code or instruction, or none. Returns 1 moved, 0 not,
 * -errno when it could not be read. */
static int native_moved(const sonde_native_watch_t *watch, const sonde_walk_t *w)
{
    sonde_pyframe_iter_t it;
    sonde_pyframe_t again;
    int rc = sonde_pyframe_iter_begin(watch->proc, watch->tstate, &it);
    if (rc < 0) return rc;
    rc = sonde_pyframe_iter_next(&it, &again);
    if (rc < 0) return rc;
    return rc == 0 || it.frame_addr != w->innermost_addr || again.code_id != w->innermost.code_id ||
           again.instr_offset != w->innermost.instr_offset;
}

/* A thread off the GIL at the watch's first look (the banner): 1 once the
 * clock shows it ran after the first lump or switch without keeping the
 * GIL, else -1 (a read failed, it kept the GIL, the budget ran out). */
static int native_watch_gil_free(const sonde_native_rule_t *rule, const sonde_native_watch_t *watch,
                                 sonde_ns_t gap_ns, sonde_ns_t start, sonde_ns_t cpu0,
                                 sonde_ns_t waited0)
{
    sonde_ns_t cpu = cpu0, waited = waited0, counted_from = cpu0, last_look = start;
    bool counting = false;
    uint32_t looks = 0, held_in_row = 0;

    for (;;) {
        sonde_prim_sleep_ns(rule->nap_ns); /* the first look was the caller's */
        int held = watch->holds_gil(watch->arg);
        if (held < 0 || watch->cpu_ns(watch->arg, &cpu, &waited) < 0) return -1;
        sonde_ns_t now = sonde_prim_monotonic_ns();
        held_in_row = held ? held_in_row + 1 : 0;
        if (held_in_row >= 2) return -1;
        if (now - last_look > gap_ns) {
            /* The watcher was kept off its CPU: what the thread ran
             * meanwhile was not seen. Count again from here. */
            counting = false;
            cpu0 = cpu;
            waited0 = waited;
        }
        last_look = now;
        /* The first lump: as below. A move of the run-queue wait: the
         * thread was put on a CPU (or moved between queues while waiting)
         * since the look before, so it was not running then, and all the
         * clock adds from now on was run after that look. */
        if (!counting && (cpu > cpu0 || waited > waited0)) {
            counting = true;
            counted_from = cpu;
            looks = 1;
        }
        if (counting) looks++;
        if (counting && !held && looks >= rule->gil_free_looks &&
            cpu - counted_from >= rule->gil_free_proof_ns)
            return 1;
        if (now - start >= watch->budget_ns) return -1;
    }
}

/* The stages of a watch with an exact clock: prove, confirm after a
 * sleep, then (where the CPU can be resumed) resume it and prove again. */
enum native_stage { NATIVE_PROVE, NATIVE_CONFIRM, NATIVE_VERIFY };

int sonde_native_watch(const sonde_native_rule_t *rule, const sonde_native_watch_t *watch,
                       const sonde_walk_t *w)
{
    sonde_ns_t cpu0 = 0, cpu = 0, last_cpu = 0, waited0 = 0, waited = 0;
    sonde_ns_t start = sonde_prim_monotonic_ns();
    sonde_ns_t proved_at = 0, proved_cpu = 0;
    sonde_ns_t counted_from = 0; /* coarse: the clock at its first move */
    bool counting = !rule->coarse_clock;
    enum native_stage stage = NATIVE_PROVE;
    uint32_t looks = 0;

    if (!w->have_innermost || watch->cpu_ns(watch->arg, &cpu0, &waited0) < 0) return -1;
    /* looks close enough that a holder's turn spans two (the banner) */
    sonde_ns_t gap_ns = watch->gil_switch_ns / 5 * 2;
    if (gap_ns > rule->gil_free_gap_ns) gap_ns = rule->gil_free_gap_ns;
    if (watch->holds_gil && rule->gil_free_proof_ns > 0 && gap_ns >= 2 * rule->nap_ns &&
        watch->holds_gil(watch->arg) == 0)
        return native_watch_gil_free(rule, watch, gap_ns, start, cpu0, waited0);
    last_cpu = counted_from = cpu0;
    for (;;) {
        int moved = native_moved(watch, w);
        if (moved < 0) return -1;
        if (watch->cpu_ns(watch->arg, &cpu, &waited) < 0) return -1;
        sonde_ns_t now = sonde_prim_monotonic_ns();
        if (moved) {
            /* Bytecode if it moved soon after the walk. Later, unsure:
             * the end of C work (else every native stretch would lose its
             * last looks' worth), looks spaced too far apart to tell (the
             * watcher sharing the thread's CPU sees it only between time
             * slices), or a stopped CPU that ran again. */
            sonde_ns_t spent = rule->coarse_clock ? now - start : cpu - cpu0;
            return spent < rule->move_ns ? 0 : -1;
        }
        if (watch->gc_touched && watch->gc_touched(watch->arg)) return 0;
        if (rule->coarse_clock && !counting && cpu > cpu0) {
            /* The first lump: what the clock adds from now on was run
             * after the previous look, which therefore counts too. */
            counting = true;
            counted_from = cpu;
            looks = 1;
        }
        if (counting && (rule->coarse_clock || cpu > last_cpu)) looks++;
        bool proved = counting && looks >= rule->looks && cpu - counted_from >= rule->proof_ns;
        if (proved && (rule->confirm_ns == 0 || stage == NATIVE_VERIFY)) return 1;
        if (proved && stage == NATIVE_PROVE) {
            stage = NATIVE_CONFIRM;
            proved_at = now;
            proved_cpu = cpu;
        } else if (stage == NATIVE_CONFIRM && now - proved_at >= rule->confirm_ns &&
                   cpu - proved_cpu >= rule->proof_ns) {
            /* Confirmed, unless the thread's CPU stood still all along
             * (the banner: a host that stops a virtual CPU for
             * milliseconds). Make it run, and prove it once more. */
            if (!watch->resume || watch->resume(watch->arg) < 0) return 1;
            if (watch->cpu_ns(watch->arg, &cpu, &waited) < 0) return -1;
            stage = NATIVE_VERIFY;
            looks = 0;
            counted_from = cpu;
            now = sonde_prim_monotonic_ns();
        }
        if (now - start >= watch->budget_ns) return -1;
        if (stage == NATIVE_CONFIRM)
            sonde_prim_sleep_ns(rule->confirm_ns);
        else if (cpu == last_cpu)
            sonde_prim_sleep_ns(rule->nap_ns);
        last_cpu = cpu;
    }
}
