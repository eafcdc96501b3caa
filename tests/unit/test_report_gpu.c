/* test_report_gpu.c — unit tests of the GPU figures in the model and the
 * writers (sonde_profile_add_figs, src/model/figures.c, src/report/columns.c, json.c, text.c).
 *
 * Builds profiles with known GPU figures and checks that the JSON and the
 * terminal report show their time-weighted means and peaks for lines,
 * functions and the run, and that a profile without GPU figures has no
 * trace of them at all (the reports stay as they were before GPU
 * profiling existed).
 */
#include "report/report.h"

#include "check.h"

#define MS 1000000ull

/* Two lines of one function: one at 90 % / 2048 MB for 0.6 s of samples,
 * one at 10 % / 512 MB (peak 1024 MB) for 0.2 s. */
static void build(sonde_profile_t *prof, bool gpu)
{
    sonde_profile_init(prof);
    sonde_profile_add(prof, "/nonexistent/app.py", "work", 1, 2, 600 * MS, 0, 0, 60);
    sonde_profile_add(prof, "/nonexistent/app.py", "work", 1, 3, 200 * MS, 0, 0, 20);
    if (gpu) {
        sonde_figs_t hot = {{[SONDE_FIG_GPU_UTIL] = 90 * 0.6,
                             [SONDE_FIG_GPU_SAMPLES] = 60,
                             [SONDE_FIG_GPU_MEM] = 2048 * 0.6,
                             [SONDE_FIG_GPU_PEAK] = 2048,
                             [SONDE_FIG_GPU_SEC] = 0.6}};
        sonde_figs_t cold = {{[SONDE_FIG_GPU_UTIL] = 10 * 0.2,
                              [SONDE_FIG_GPU_SAMPLES] = 20,
                              [SONDE_FIG_GPU_MEM] = 512 * 0.2,
                              [SONDE_FIG_GPU_PEAK] = 1024,
                              [SONDE_FIG_GPU_SEC] = 0.2}};
        check(sonde_profile_add_figs(prof, "/nonexistent/app.py", "work", 1, 2, &hot) == 0,
              "gpu_add_line", "rc");
        check(sonde_profile_add_figs(prof, "/nonexistent/app.py", "work", 1, 3, &cold) == 0,
              "gpu_add_second_line", "rc");
        check(sonde_profile_add_figs(prof, NULL, "work", 1, 3, &cold) == -EINVAL,
              "gpu_add_null_path", "not -EINVAL");
        sonde_fig_run_set(&prof->fig_runs[SONDE_FIGSRC_GPU], "Stand-in \"GPU\" 0", true);
    }
    sonde_profile_finish(prof);
}

static char *render_json(const sonde_profile_t *prof)
{
    sonde_buf_t out = SONDE_BUF_INIT;
    check(sonde_report_json(prof, &out) == 0, "gpu_json_renders", "rc");
    char *text = strdup(out.data ? out.data : "");
    sonde_buf_free(&out);
    return text;
}

static char *render_text(const sonde_profile_t *prof)
{
    sonde_buf_t out = SONDE_BUF_INIT;
    sonde_text_opts_t opts;
    sonde_text_opts_default(&opts);
    opts.width = 160;
    check(sonde_report_text(prof, &opts, &out) == 0, "gpu_text_renders", "rc");
    char *text = strdup(out.data ? out.data : "");
    sonde_buf_free(&out);
    return text;
}

static void test_model_functions(void)
{
    sonde_profile_t prof;
    build(&prof, true);
    const sonde_file_stats_t *file = &prof.files[0];
    const double *func = file->funcs[0].figs.v;
    check(file->n_funcs == 1 && func[SONDE_FIG_GPU_SAMPLES] == 80 &&
              func[SONDE_FIG_GPU_SEC] > 0.79 && func[SONDE_FIG_GPU_SEC] < 0.81 &&
              func[SONDE_FIG_GPU_PEAK] == 2048,
          "gpu_function_sums_its_lines", "samples %g sec %g peak %g", func[SONDE_FIG_GPU_SAMPLES],
          func[SONDE_FIG_GPU_SEC], func[SONDE_FIG_GPU_PEAK]);
    sonde_profile_free(&prof);
}

static void test_json(void)
{
    sonde_profile_t prof;
    build(&prof, true);
    char *json = render_json(&prof);
    check(strstr(json, "\"gpu\": true,\n") != NULL, "gpu_json_flag", "%s", json);
    check(strstr(json, "\"gpu_device\": \"Stand-in \\\"GPU\\\" 0\"") != NULL, "gpu_json_device",
          "%s", json);
    check(strstr(json, "\"gpu_per_process\": true") != NULL, "gpu_json_per_process", "%s", json);
    /* The run: (54 + 2) / 0.8 = 70 %, (1228.8 + 102.4) / 0.8 = 1664 MB. */
    check(strstr(json, "\"gpu_percent\": 70,") != NULL, "gpu_json_run_percent", "%s", json);
    check(strstr(json, "\"gpu_avg_memory_mb\": 1664,") != NULL, "gpu_json_run_avg", "%s", json);
    check(strstr(json, "\"gpu_peak_memory_mb\": 2048,") != NULL, "gpu_json_run_peak", "%s", json);
    check(strstr(json, "\"n_gpu_percent\": 90, \"n_gpu_avg_memory_mb\": 2048, "
                       "\"n_gpu_peak_memory_mb\": 2048") != NULL,
          "gpu_json_line", "%s", json);
    check(strstr(json, "\"n_gpu_percent\": 10, \"n_gpu_avg_memory_mb\": 512, "
                       "\"n_gpu_peak_memory_mb\": 1024") != NULL,
          "gpu_json_second_line", "%s", json);
    check(check_count(json, "\"n_gpu_percent\": 70") == 1, "gpu_json_function", "%s", json);
    free(json);
    sonde_profile_free(&prof);

    build(&prof, false);
    json = render_json(&prof);
    check(strstr(json, "gpu") == NULL, "gpu_json_absent_without_gpu", "%s", json);
    free(json);
    sonde_profile_free(&prof);
}

static void test_text(void)
{
    sonde_profile_t prof;
    build(&prof, true);
    char *text = render_text(&prof);
    check(strstr(text, "GPU util") != NULL && strstr(text, "GPU MB") != NULL, "gpu_text_columns",
          "%s", text);
    check(strstr(text, "GPU: 70.0% utilisation, 1664.0 MB on average, 2048.0 MB at peak") != NULL,
          "gpu_text_summary", "%s", text);
    check(strstr(text, "90%") != NULL && strstr(text, "10%") != NULL, "gpu_text_cells", "%s", text);
    free(text);
    sonde_profile_free(&prof);

    build(&prof, false);
    text = render_text(&prof);
    check(strstr(text, "GPU") == NULL, "gpu_text_absent_without_gpu", "%s", text);
    free(text);
    sonde_profile_free(&prof);
}

int main(void)
{
    test_model_functions();
    test_json();
    test_text();
    return check_exit_code();
}
