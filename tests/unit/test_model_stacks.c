/* test_model_stacks.c — call stacks in the profile model (src/model/stacks.c):
 * interning, accumulation of identical stacks, per-thread stacks, growth
 * past the index's first size, and bad arguments. */
#include "check.h"
#include "model/model.h"

#include <stdio.h>
#include <string.h>

int main(void)
{
    sonde_profile_t prof;
    sonde_profile_init(&prof);
    sonde_stack_frame_t a[] = {
        {"main", "app.py", 10}, {"work", "app.py", 20}, {"inner", "lib.py", 3}};
    sonde_stack_frame_t b[] = {{"main", "app.py", 10}, {"work", "app.py", 21}};

    check(sonde_profile_add_stack(&prof, a, 3, -1, 1, 100) == 0, "add_first", "rc");
    check(sonde_profile_add_stack(&prof, a, 3, -1, 2, 200) == 0, "add_again", "rc");
    check(sonde_profile_add_stack(&prof, b, 2, -1, 5, 50) == 0, "add_other", "rc");
    check(prof.n_stacks == 2, "identical_stacks_merge", "%zu stacks", prof.n_stacks);
    check(prof.n_frames == 4, "frames_interned", "%zu frames", prof.n_frames);
    check(prof.stacks[0].samples == 3 && prof.stacks[0].ns == 300, "weights_accumulate",
          "%llu samples %llu ns", (unsigned long long)prof.stacks[0].samples,
          (unsigned long long)prof.stacks[0].ns);
    check(prof.stacks[1].frames[0] == prof.stacks[0].frames[0], "root_shared", "different ids");
    check(strcmp(prof.frames[prof.stacks[0].frames[2]].func, "inner") == 0 &&
              prof.frames[prof.stacks[0].frames[2]].line == 3,
          "root_first_order", "leaf is %s", prof.frames[prof.stacks[0].frames[2]].func);

    int t1 = sonde_profile_thread(&prof, "MainThread");
    int t2 = sonde_profile_thread(&prof, "worker");
    check(t1 == 0 && t2 == 1 && sonde_profile_thread(&prof, "worker") == 1, "thread_ids", "%d %d",
          t1, t2);
    check(sonde_profile_add_stack(&prof, a, 3, t2, 1, 10) == 0 && prof.n_stacks == 3,
          "per_thread_stack_separate", "%zu stacks", prof.n_stacks);
    check(sonde_profile_add_stack(&prof, a, 3, 7, 1, 10) == -EINVAL, "unknown_thread_rejected",
          "accepted");

    /* Many distinct stacks: the index grows and finds them all again. */
    char name[32];
    for (int i = 0; i < 2000; i++) {
        snprintf(name, sizeof name, "f%d", i);
        sonde_stack_frame_t f[] = {{"main", "app.py", 10}, {name, "gen.py", i}};
        if (sonde_profile_add_stack(&prof, f, 2, -1, 1, 1) != 0) break;
    }
    for (int i = 0; i < 2000; i++) {
        snprintf(name, sizeof name, "f%d", i);
        sonde_stack_frame_t f[] = {{"main", "app.py", 10}, {name, "gen.py", i}};
        sonde_profile_add_stack(&prof, f, 2, -1, 1, 1);
    }
    size_t twos = 0;
    for (size_t i = 0; i < prof.n_stacks; i++)
        twos += prof.stacks[i].samples == 2;
    check(prof.n_stacks == 2003 && twos == 2000, "index_grows", "%zu stacks, %zu doubled",
          prof.n_stacks, twos);
    sonde_profile_free(&prof);
    check(prof.n_stacks == 0 && prof.stacks == NULL, "free_empties", "not empty");
    return check_exit_code();
}
