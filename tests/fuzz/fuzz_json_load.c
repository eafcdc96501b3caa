/* fuzz_json_load.c — libFuzzer target: reading a JSON profile back into
 * the model (sonde_profile_load_json, src/report/json_load.c, with cJSON)
 * and adding it up (sonde_profile_merge, src/model/merge.c), as `sonde
 * merge` does with files from anywhere.
 *
 * Input: the file. Checked: a file is refused with -EINVAL and a one-line
 * reason (or -ENOMEM), leaving the profile empty; a file taken gives a
 * profile whose JSON (src/report/json.c) is taken again, and that merges
 * into an empty profile and into itself's copy without error, the merged
 * total being the sum of the two.
 */
#include "report/report.h"

#include "fuzz.h"

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    /* exactly size bytes: a read past the end is caught */
    char *text = malloc(size ? size : 1);
    if (text == NULL) abort();
    memcpy(text, data, size);
    sonde_profile_t prof, again, merged;
    sonde_profile_init(&prof);
    sonde_profile_init(&again);
    sonde_profile_init(&merged);
    sonde_buf_t json = SONDE_BUF_INIT;
    char why[256] = "";

    int rc = sonde_profile_load_json(&prof, text, size, why, sizeof why);
    if (rc < 0) {
        fuzz_assert(rc == -EINVAL || rc == -ENOMEM, "rc %d", rc);
        fuzz_assert(rc == -ENOMEM || (why[0] && !strchr(why, '\n')), "reason '%s'", why);
        fuzz_assert(prof.n_files == 0 && prof.n_processes == 0 && prof.n_stacks == 0 &&
                        !prof.program,
                    "a refused file left a profile");
    } else {
        fuzz_assert(sonde_report_json(&prof, &json) == 0, "cannot write what was read");
        rc = sonde_profile_load_json(&again, json.data, json.len, why, sizeof why);
        fuzz_assert(rc == 0 || rc == -ENOMEM, "what sonde wrote is refused: %s", why);
        if (sonde_profile_merge(&merged, &prof) == 0 && sonde_profile_merge(&merged, &prof) == 0)
            fuzz_assert(merged.total_ns == 2 * prof.total_ns &&
                            merged.n_processes == 2 * prof.n_processes,
                        "merging a profile twice does not double it");
    }
    sonde_buf_free(&json);
    sonde_profile_free(&merged);
    sonde_profile_free(&again);
    sonde_profile_free(&prof);
    free(text);
    return 0;
}
