"""Mutation testing: small wrong programs that the tests must reject.

Each mutant below replaces one snippet of a source file (it must occur
exactly once) and names the tests that claim to catch it. `make mutants`
(python tests/mutants.py) applies them one at a time, rebuilds the probes
when a C file changed, runs those tests, and fails if any mutant survives
(its tests pass) or cannot be applied. The source is always restored: in a
`finally`, on SIGINT, SIGTERM and SIGHUP, and, should the runner be killed
outright, from build/mutants-journal.json at its next start.

Grow the list with every bug a test was found not to catch: the bug
itself, as a mutant, beside the test that now catches it.

Tests that read a quick run get the one `make test` saved in
build/quick-run (OSMETER_TEST_QUICK_RUN; made here when missing or made by
other sources): a mutant of the code that reads results is tested on
results the unchanged tree made.

    python tests/mutants.py              every mutant
    python tests/mutants.py -k ctx       those whose name contains ctx
    python tests/mutants.py --list
    python tests/mutants.py --ci         all but those marked slow (CI)
"""
from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
JOURNAL = ROOT / "build" / "mutants-journal.json"
QUICK = ROOT / "build" / "quick-run"
PY = sys.executable


@dataclass(frozen=True)
class Mutant:
    name: str
    file: str        # relative to the repository
    old: str         # the snippet, exactly once in the file
    new: str         # what the wrong program has instead
    tests: str       # pytest arguments: node ids, or a file and -k
    quick: bool = False  # the tests read the shared quick run
    slow: bool = False   # its tests take 15 s or more (namespace hosts, sshd, a PDF): make mutants only, not CI


MUTANTS = [
    Mutant("path-stat-and-open-bodies-swapped", "bench/fs/path.c",
           'const osm_body bodies[2] = { body_stat, body_open_close };', 'const osm_body bodies[2] = { body_open_close, body_stat };',
           "tests/test_probes_lmbench.py::test_stat_cheaper_than_open_close"),
    Mutant("null-io-halved-again", "bench/cpu/syscall.c",
           "(m[READ].v[i] + m[WRITE].v[i]) / 2,", "(m[READ].v[i] + m[WRITE].v[i]) / 4,",
           "tests/test_probes_lmbench.py::test_null_io_dearer_than_a_null_call_and_the_mean_of_read_and_write"),
    Mutant("exec-child-exits-instead", "bench/cpu/exec.c",
           "            execv(argv_prog[0], argv_prog);", "            _exit(0);",
           "tests/test_probes_lmbench.py::test_exec_starts_the_program_on_each_path_once_per_start"),
    Mutant("proc-child-exit-option-ignored", "bench/cpu/proc.c",
           "            if (child_exit)\n                exit(0);\n", "",
           "tests/test_probes_lmbench.py -k child_exit"),
    Mutant("protfault-mprotect-pair-in-every-window", "bench/mem/vm.c",
           "    if (!sigsetjmp(out_of_the_write, 0)) /* 0: the mask is not saved, nor restored by the jump */",
           "    mprotect(page, pagesize, PROT_READ | PROT_WRITE);\n    mprotect(page, pagesize, PROT_READ);\n"
           "    if (!sigsetjmp(out_of_the_write, 0))",
           "tests/test_probes_lmbench.py -k windows_hold_faults"),
    Mutant("sh-path-execs-the-program", "bench/cpu/exec.c",
           'execl("/bin/sh", "sh", "-c", cmd, (char *)NULL);', "execv(argv_prog[0], argv_prog);",
           "tests/test_probes_lmbench.py::test_exec_dearer_than_fork_and_sh_dearer_than_exec"),
    Mutant("ctxring-children-skip-their-sets", "bench/cpu/ctxring.c",
           "hop(r->fd[i][0], r->fd[(i + 1) % n][1], set, r->words);", "hop(r->fd[i][0], r->fd[(i + 1) % n][1], set, 0);",
           "tests/test_probes_lmbench.py::test_ctx_matrix_grows_with_working_set_and_processes_beyond_the_caches"),
    Mutant("ctxring-cached-sum-not-subtracted", "bench/cpu/ctxring.c",
           "m.sy[x * o.samples + i] = trip / (double)r->n - hop_cost;",
           "m.sy[x * o.samples + i] = trip / (double)r->n - hops[0];",
           "tests/test_probes_lmbench.py::test_ctx_matrix_grows_with_working_set_and_processes_beyond_the_caches"),
    Mutant("protfault-catch-is-the-kill-alone", "bench/mem/vm.c",
           "catch[nc++] = m[DELIVER].v[i] - m[SEND].v[i];", "catch[nc++] = m[SEND].v[i];",
           "tests/test_probes_lmbench.py::test_protection_fault_less_catch_takes_the_catch_of_its_own_process"),
    Mutant("protfault-catch-handler-defers", "bench/mem/vm.c",
           "    sa.sa_sigaction = on_usr1;\n    sa.sa_flags = HANDLER_FLAGS;", "    sa.sa_sigaction = on_usr1;\n    sa.sa_flags = SA_SIGINFO;",
           "tests/test_probes_lmbench.py -k delivered_as_the_fault"),
    Mutant("pagewise-pages-in-address-order", "bench/common/mem.c",
           "        sattolo(order_of, pages, seed);\n", "",
           "tests/test_common_chain.py"),
    Mutant("pagewise-a-page-at-a-time", "bench/common/mem.c",
           "uint64_t pass = k / pages, i = k % pages;", "uint64_t pass = k % per_page, i = k / per_page;",
           "tests/test_common_chain.py"),
    Mutant("core-clock-adds-counted-twice", "bench/common/timing.c",
           "return med > 0 ? osm_timer.hz * (double)adds / med / 1e6 : 0;",
           "return med > 0 ? osm_timer.hz * (double)adds * 2 / med / 1e6 : 0;",
           "tests/test_probes_lmbench.py -k core_clock_at_its_process"),
    Mutant("core-width-the-wrong-way-up", "bench/common/timing.c",
           "*width = med > 0 && wmed > 0 ? med / wmed : 0;",
           "*width = med > 0 && wmed > 0 ? wmed / med : 0;",
           "tests/test_probes_lmbench.py -k core_clock_at_its_process"),
    Mutant("core-width-not-recorded", "harness/osmeter/running/execute.py",
           'for key in ("core_mhz", "core_width"):',
           'for key in ("core_mhz",):',
           "tests/test_cli.py -k interleaved"),
    Mutant("shared-core-judged-by-the-clock", "harness/osmeter/results/readings.py",
           'out["core_shared_share"] = slowed_share(widths, ref_width or out["core_width"])',
           'out["core_shared_share"] = slowed_share(clocks or widths, ref_width or out["core_width"])',
           "tests/test_analysis_compare.py -k slowed_or_shared_core"),
    Mutant("shared-processes-not-set-aside", "harness/osmeter/results/store.py",
           "got = kept_by_process(self.path, m, self.shared_processes(m))",
           "got = kept_by_process(self.path, m)",
           "tests/test_analysis_compare.py -k shared_core_are_set_aside"),
    Mutant("shared-process-set-aside-though-none-would-remain", "harness/osmeter/results/store.py",
           "return low if len(low) < len(widths) else frozenset()",
           "return low",
           "tests/test_analysis_compare.py -k shared_core_are_set_aside"),
    Mutant("process-width-not-kept", "harness/osmeter/results/writer.py",
           "                    ps[\"core_width\"] = width",
           "                    pass",
           "tests/test_analysis_compare.py -k shared_core_are_set_aside"),
    Mutant("slowed-core-above-the-threshold", "harness/osmeter/results/readings.py",
           "return sum(c < SLOWED * ref for c in clocks) / len(clocks)",
           "return sum(c > SLOWED * ref for c in clocks) / len(clocks)",
           "tests/test_analysis_compare.py -k slowed_or_shared_core"),
    Mutant("compare-lmbench-slowed-above-threshold", "tools/compare-lmbench",
           "any(c is not None and c < SLOWED * ref for c in pair)", "any(c is not None and c > SLOWED * ref for c in pair)",
           "tests/test_tools_compare_lmbench.py -k slowed_core"),
    Mutant("compare-lmbench-sigterm-not-handled", "tools/compare-lmbench",
           "        signal.signal(sig, stop_on)\n", "        pass\n",
           "tests/test_tools_compare_lmbench.py -k sigterm"),
    Mutant("compare-lmbench-stopped-program-left-running", "tools/compare-lmbench",
           "        os.killpg(p.pid, signal.SIGKILL)\n        p.wait()\n", "        p.wait()\n",
           "tests/test_tools_compare_lmbench.py -k sigterm", slow=True),
    Mutant("compare-lmbench-ratio-inverted", "tools/compare-lmbench",
           "rounds = [(x / y, sl) for x, y, sl in zip(o, lv, slow) if y > 0]",
           "rounds = [(y / x, sl) for x, y, sl in zip(o, lv, slow) if y > 0]",
           "tests/test_tools_compare_lmbench.py -k figure_is_read"),
    Mutant("stride-walk-runs-16-counts-100", "bench/mem/lat.c",
           "osm_body body = sequential ? chase_body100 : chase_body;",
           "osm_body body = chase_body;\n    (void)chase_body100;",
           "tests/test_probes_lmbench.py -k stride_walk"),
    Mutant("stride-walk-16-loads-a-turn", "bench/mem/lat.c",
           "unsigned per = sequential ? 100 : 16;", "unsigned per = 16; (void)chase_body100;\n    body = chase_body;",
           "tests/test_probes_lmbench.py -k stride_walk"),
    Mutant("mmap-faults-counted-around-nothing", "bench/mem/vm.c",
           "    getrusage(RUSAGE_SELF, &r0);\n    body_mmap(NULL, 1);\n", "    getrusage(RUSAGE_SELF, &r0);\n",
           "tests/test_probes_lmbench.py::test_protection_fault_less_catch_takes_the_catch_of_its_own_process"),
    Mutant("ipc-buffers-from-malloc", "bench/net/ipc.c",
           "    char *buf = aligned_alloc(4096, CHUNK);\n    if (!buf)\n        osm_die", "    char *buf = malloc(CHUNK);\n    if (!buf)\n        osm_die",
           "tests/test_net.py -k page_aligned"),
    Mutant("protfault-per-256-faults", "bench/mem/vm.c",
           "#define FAULTS_PER_ITERATION 1", "#define FAULTS_PER_ITERATION 256",
           "tests/test_probes_lmbench.py::test_protection_fault_cheaper_than_a_page_fault_from_disk"),
    Mutant("clock-from-the-multiply-chain", "bench/cpu/ops.c",
           "osm_timer.hz / m[ADD].v[i] / 1e6", "osm_timer.hz / m[MUL].v[i] / 1e6",
           "tests/test_probes_lmbench.py::test_core_clock_agrees_with_cpuinfo"),
    Mutant("par-chains-depend-on-each-other", "bench/mem/par.c",
           "p[j] = (void **)*p[j];", "p[j] = (void **)*p[(j + K - 1) % K];",
           "tests/test_probes_lmbench.py::test_memory_serves_several_loads_at_once"),
    Mutant("loaded-delay-not-applied", "bench/mem/loaded.c",
           "for (int64_t i = 0; i < d; i++)", "for (int64_t i = 0; i < 0 * d; i++)",
           "tests/test_probes_lmbench.py::test_loaded_latency_load_levels_draw_rising_bandwidth"),
    Mutant("ctx-pipe-not-subtracted", "bench/cpu/ctx.c",
           "osm_meas_add(m, (rt - 2 * pipe_cost) / 2, dist);", "osm_meas_add(m, (rt - 0 * pipe_cost) / 2, dist);",
           "tests/test_probes_relations.py::test_switch_costs_more_than_a_pipe_write_and_read_is_subtracted"),
    Mutant("ctx-pipe-subtracted-twice", "bench/cpu/ctx.c",
           "osm_meas_add(m, (rt - 2 * pipe_cost) / 2, dist);", "osm_meas_add(m, (rt - 4 * pipe_cost) / 2, dist);",
           "tests/test_probes_relations.py::test_switch_costs_more_than_a_pipe_write_and_read_is_subtracted"),
    Mutant("call-loop-not-subtracted", "bench/cpu/call.c",
           "m[k].v[i] = (m[k].v[i] - loop_turn) / UNROLL;", "m[k].v[i] = m[k].v[i] / UNROLL;",
           "tests/test_probes.py::test_call_probe_subtracts_loop_and_timer"),
    Mutant("sqpoll-submits-like-a-plain-ring", "bench/iogen/engines/engine_uring.c",
           "        if (flags)\n            r = enter(e, u->to_submit, need_wait ? min : 0, flags);",
           "        if (flags || u->to_submit)\n            r = enter(e, u->to_submit, need_wait ? min : 0, flags);",
           "tests/test_iogen.py::test_sqpoll_calls_only_to_wait_or_wake"),
    Mutant("far-processes-ignored", "harness/osmeter/analysis/per_id.py",
           "    return int(np.sum(r > FAR_PROCESS * sd))", "    return 0",
           "tests/test_analysis_compare.py::test_a_disturbance_over_more_of_b_s_processes_flags_nothing "
           "tests/test_analysis_compare.py::test_the_unit_is_the_process_only_where_runs_add_nothing"),
    Mutant("isolate-seen-tasks-taken-for-born", "harness/osmeter/host/isolate.py",
           " or (seen is not None and (tid, start) in seen):", ":",
           "tests/test_host_isolate.py::test_tasks_born_during_the_run_get_their_creators_mask_back "
           "tests/test_host_isolate.py::test_an_isolated_run_records_what_it_did_and_puts_everything_back"),
    Mutant("isolate-killed-runs-mask-kept-for-the-plan", "harness/osmeter/running/plan.py",
           "    stale = isolate.undo_killed_run() if opts.isolate else None",
           "    stale = isolate.need_root() if opts.isolate else None",
           "tests/test_host_isolate.py::test_after_a_sigkill_the_next_isolated_run_puts_the_machine_back_first"),
    Mutant("iogen-ramp-recorded", "bench/iogen/run/stream.c",
           "if (io->t_start < t_measure || now > atomic_load_explicit(&rs->t_end, memory_order_relaxed)) {",
           "if (now > atomic_load_explicit(&rs->t_end, memory_order_relaxed)) {",
           "tests/test_iogen.py::test_ramp_up_is_not_recorded"),
    Mutant("iogen-test-list-runs-the-first-spec-again", "bench/iogen/run/run.c",
           "w->spec = &job->specs[w->cfg->spec[p->step]];", "w->spec = &job->specs[w->cfg->spec[0]];",
           "tests/test_iogen.py::test_two_specs_on_one_worker_give_two_results_each_with_its_own_mix"),
    Mutant("iogen-random-share-miscounted", "bench/iogen/run/stream.c",
           "io->random = rnd(s) % 100 < ln->random;", "io->random = rnd(s) % 100 < ln->random + 10;",
           "tests/test_iogen.py::test_two_specs_on_one_worker_give_two_results_each_with_its_own_mix"),
    Mutant("iogen-targets-not-taken-in-turn", "bench/iogen/run/stream.c",
           "s->next_target = ti + 1 == w->ntargets ? 0 : ti + 1;", "s->next_target = ti;",
           "tests/test_iogen.py::test_two_targets_on_one_worker_share_its_ios"),
    Mutant("engine-options-not-listed-under-their-engine", "bench/iogen/options/options.c",
           "        else if (!markdown)\n            for (const struct engine_option *o = e->options ? e->options->table : NULL;",
           "        else if (markdown)\n            for (const struct engine_option *o = e->options ? e->options->table : NULL;",
           "tests/test_iogen_spec.py::test_an_engines_options_live_in_its_engine"),
    Mutant("engine-options-taken-by-any-engine", "bench/iogen/options/options.c",
           "if (tuned && tuned->options != c->engine->options)", "if (tuned && !tuned->options)",
           "tests/test_iogen_spec.py::test_an_engines_options_live_in_its_engine"),
    Mutant("iogen-run-state-shared-as-a-global-again", "bench/iogen/run/run.h",
           "void run_free(struct run_result *r);", "void run_free(struct run_result *r);\nextern struct run_state run;",
           "tests/test_tree_layout.py::test_iogen_passes_its_job_instead_of_sharing_globals"),
    Mutant("iogen-only-the-first-target-checked", "bench/iogen/iogen.c",
           "if (target_open(&ts[nt], cfg.targets[nt], &to, err, sizeof err) != 0) {",
           "if (target_open(&ts[nt], cfg.targets[nt], &to, err, sizeof err) != 0 && nt == 0) {",
           "tests/test_iogen.py::test_every_target_of_a_worker_passes_the_safety_checks"),
    Mutant("icf-write-keeps-one-spec-per-worker", "bench/iogen/spec/spec_icf.c",
           "for (int k = 0; k < w->nspec; k++)\n                fprintf(f, \"\\t%s\\n\", job->specs[w->spec[k]].name);",
           "for (int k = 0; k < 1; k++)\n                fprintf(f, \"\\t%s\\n\", job->specs[w->spec[k]].name);",
           "tests/test_iogen.py -k save_icf_reads_back"),
    Mutant("icf-write-drops-the-ramp", "bench/iogen/spec/spec_icf.c",
           "fprintf(f, \"'Ramp Up Time (s)\\n\\t%llu\\n\", (unsigned long long)job->ramp_s);",
           "fprintf(f, \"'Ramp Up Time (s)\\n\\t%llu\\n\", (unsigned long long)job->ramp_s / 2);",
           "tests/test_iogen.py -k save_icf_reads_back"),
    Mutant("results-csv-all-row-first-target-only", "bench/iogen/output/results_csv.c",
           "                tstat_add(&all, &w->streams[n].tst[k]);", "                if (!k) tstat_add(&all, &w->streams[n].tst[k]);",
           "tests/test_iogen.py::test_results_csv_has_iometers_layout_and_the_jsons_totals"),
    Mutant("results-csv-response-time-in-us", "bench/iogen/output/results_csv.c",
           "double iops = (double)ios / secs, ms = 1e-6;", "double iops = (double)ios / secs, ms = 1e-3;",
           "tests/test_iogen.py::test_results_csv_has_iometers_layout_and_the_jsons_totals"),
    Mutant("cycle-stops-before-its-end", "bench/iogen/spec/spec.c",
           "for (uint64_t v = c->start; v <= end && n < max;) {", "for (uint64_t v = c->start; v < end && n < max;) {",
           "tests/test_iogen.py::test_cycle_size_and_qd_give_every_cell"),
    Mutant("cycle-size-not-applied", "bench/iogen/run/run.c",
           "            w->sized.line[k].size = p->size;", "            w->sized.line[k].size = w->spec->line[k].size;",
           "tests/test_iogen.py::test_cycle_size_and_qd_give_every_cell"),
    Mutant("live-view-never-moves-back", "bench/iogen/run/live.c",
           "        fprintf(f, \"\\033[%dF\", drawn); /* back to the first line of the last frame */",
           "        fprintf(f, \"\\n\"); /* back to the first line of the last frame */",
           "tests/test_iogen.py::test_the_live_view_redraws_on_a_terminal_and_adds_nothing_in_a_pipe"),
    Mutant("live-view-into-a-pipe", "bench/iogen/run/run.c",
           "bool bars = rs->cfg->live && isatty(STDERR_FILENO);", "bool bars = rs->cfg->live;",
           "tests/test_iogen.py::test_the_live_view_redraws_on_a_terminal_and_adds_nothing_in_a_pipe"),
    Mutant("heat-map-cells-transposed", "harness/osmeter/present/plots.py",
           "mat[sizes.index(s), depths.index(q)] = v", "mat[min(depths.index(q), len(sizes) - 1), sizes.index(s) % len(depths)] = v",
           "tests/test_iogen.py::test_the_size_qd_heat_map_is_drawn_from_iogens_json"),
    Mutant("size-qd-parse-every-depth-the-first", "harness/osmeter/probes/areas/disk.py",
           'for iv in cells[s, q]["intervals"][:width]]', 'for iv in cells[s, depths[0]]["intervals"][:width]]',
           "tests/test_iogen.py::test_size_qd_parse_gives_every_cell_and_the_heat_map_draws_the_run_s_own"),
    Mutant("run-params-the-first-process", "harness/osmeter/results/writer.py",
           "dict(merge_params(ps) if merge_params else ps[0], processes", "dict(ps[0], processes",
           "tests/test_iogen.py::test_a_runs_params_describe_every_process_of_the_workload"),
    Mutant("run-params-rates-averaged-unweighted", "harness/osmeter/probes/areas/disk.py",
           'out[k] = sum(p[k] * p["run_s"] for p in ps) / secs', 'out[k] = sum(p[k] for p in ps) / len(ps)',
           "tests/test_iogen.py::test_a_runs_params_describe_every_process_of_the_workload"),
    Mutant("mem-bw-cache-side-checks-the-memory-fit", "bench/mem/bw.c",
           "if (buffers_only != B_CACHE && big_size > fit)", "if (big_size > fit)",
           "tests/test_mem.py::test_the_bandwidths_are_three_probes_of_one_binary"),
    Mutant("mem-bw-memory-side-prints-the-cache-ids", "bench/mem/bw.c",
           "if (buffers_only == B_ALL || buffers_only == B_CACHE) {", "if (buffers_only != B_MT) {",
           "tests/test_mem.py::test_the_bandwidths_are_three_probes_of_one_binary"),
    Mutant("mem-bw-mt-side-prints-the-one-thread-ids", "bench/mem/bw.c",
           "if (buffers_only == B_ALL || buffers_only == B_MEMORY) {", "if (buffers_only != B_CACHE) {",
           "tests/test_mem.py::test_the_bandwidths_are_three_probes_of_one_binary"),
    Mutant("mem-bw-thread-rate-of-one-pass", "bench/mem/bw.c",
           "w->own[i - osm_warmup_samples] = (double)(mt->passes * mt->size)",
           "w->own[i - osm_warmup_samples] = (double)(mt->size)",
           "tests/test_mem.py::test_the_summed_bandwidth_gives_each_thread_its_own_rate"),
    Mutant("awake-probe-without-its-busy-loop", "harness/osmeter/host/launch.py",
           "                if awake:\n", "                if False:\n",
           "tests/test_net.py::test_an_awake_probe_has_a_busy_loop_on_its_cpu_only_while_it_runs"),
    Mutant("awake-not-asked-for-by-the-runner", "harness/osmeter/running/execute.py",
           "rc, stdout, stderr = launch.run(argv, probe.timeout, awake=probe.awake, pinned=probe.pinned)",
           "rc, stdout, stderr = launch.run(argv, probe.timeout, awake=False, pinned=probe.pinned)",
           "tests/test_net.py::test_a_run_keeps_the_cpu_of_an_awake_probe_busy_and_no_other"),
    Mutant("awake-busy-loop-at-sched-other", "harness/osmeter/host/launch.py",
           "os.sched_setscheduler(0, os.SCHED_IDLE, os.sched_param(0))",
           "os.sched_setscheduler(0, os.SCHED_OTHER, os.sched_param(0))",
           "tests/test_net.py::test_an_awake_probe_has_a_busy_loop_on_its_cpu_only_while_it_runs"),
    Mutant("mem-pagefault-device-read-from-the-cache", "bench/mem/pagefault.c",
           "ssize_t got = pread(dfd, dbuf, page, at);",
           "ssize_t got = pread(fd, dbuf, page, at - at + (off_t)(order[next - 2] * page));",
           "tests/test_mem.py::test_the_device_read_beside_the_faults_is_most_of_a_major_fault"),
    Mutant("mem-loaded-pair-rtt-left-out", "bench/mem/loaded.c",
           'osm_param_num(&m, "pair_rtt_ns", rtt_before);', "(void)rtt_before;",
           "tests/test_mem.py::test_the_loaded_latency_records_where_the_host_put_its_cpus"),
    Mutant("derived-figure-from-the-first-process-only", "harness/osmeter/running/collect.py",
           "if d.measure.id in used and all(x is y for x, y in zip(inputs, used[d.measure.id])):",
           "if d.measure.id in used:",
           "tests/test_mem.py::test_a_derived_figure_takes_every_process_of_its_inputs"),
    Mutant("derived-failure-left-after-the-figure-stands", "harness/osmeter/running/collect.py",
           'f["error"].startswith("cannot derive: "))]', 'f["error"].startswith("never"))]',
           "tests/test_mem.py::test_a_derived_figure_that_could_not_be_derived_at_first_keeps_no_failure"),
    Mutant("mem-pagefault-refused-direct-read-not-said", "bench/mem/pagefault.c",
           'why_no_read ? why_no_read : "no undisturbed read"', '"no undisturbed read"',
           "tests/test_mem.py::test_a_file_system_that_refuses_o_direct_leaves_the_faults_and_says_why"),
    Mutant("sched-noise-every-interruption-the-hypervisors", "bench/sched/noise.c",
           "double beyond = (double)interruptions > (double)guest ? (double)interruptions - (double)guest : 0;",
           "double beyond = (double)interruptions;",
           "tests/test_sched.py::test_the_noise_probe_counts_the_guests_interrupts_and_the_interruptions_beyond_them"),
    Mutant("sched-noise-counts-across-a-move", "bench/sched/noise.c",
           ': osm_current_cpu() != irq_cpu ? "the thread moved to another CPU (not pinned: give --cpu)" : NULL;',
           ": NULL;",
           "tests/test_sched.py::test_the_noise_probe_moved_to_another_cpu_gives_no_interrupt_count"),
    Mutant("derived-fault-samples-without-their-processes", "harness/osmeter/probes/areas/mem.py",
           '        "process": proc.tolist(),\n', "",
           "tests/test_mem.py::test_a_derived_figure_takes_every_process_of_its_inputs"),
    Mutant("mem-bw-pair-rtt-left-out", "bench/mem/bw.c",
           'osm_param_num(m, "pair_rtt_ns", rtt_before);', "(void)rtt_before;",
           "tests/test_mem.py::test_the_summed_bandwidth_gives_each_thread_its_own_rate"),
    Mutant("compare-host-mode-split-unused", "harness/osmeter/analysis/compare.py",
           "ta, tb = _trials(ha, mid), _trials(hb, mid)", "ta, tb = _trials(a, mid), _trials(b, mid)",
           "tests/test_analysis_compare.py::test_runs_in_another_host_mode_are_left_out_of_the_comparison"),
    Mutant("compare-host-mode-never-far", "harness/osmeter/analysis/compare.py",
           'else "far" if max(v) > HOST_MODE_FACTOR * ref else "near"', 'else "near"',
           "tests/test_analysis_compare.py::test_runs_in_another_host_mode_are_left_out_of_the_comparison"),
    Mutant("sweep-params-the-first-process", "harness/osmeter/probes/areas/disk.py",
           'runs = [merge_run_params(list(rs)) for rs in zip(*(p["runs"] for p in ps))]', 'runs = ps[0]["runs"]',
           "tests/test_iogen.py::test_a_runs_params_describe_every_process_of_the_workload"),
    Mutant("net-bw-buffers-autotuned-by-default", "bench/net/bw.c",
           "sndbuf = 1u << 20, rcvbuf = 1u << 20;", "sndbuf, rcvbuf;",
           "tests/test_net.py::test_bulk_bandwidth_fixes_its_own_sockets_buffers"),
    Mutant("grid-summary-cells-transposed", "harness/osmeter/results/writer.py",
           "cells = series_summary(a.reshape(gx.size * gy.size, a.shape[2]))",
           "cells = series_summary(a.transpose(1, 0, 2).reshape(gx.size * gy.size, a.shape[2]))",
           "tests/test_iogen.py::test_size_qd_parse_gives_every_cell_and_the_heat_map_draws_the_run_s_own"),
    Mutant("grid-merge-keeps-the-first-process", "harness/osmeter/results/writer.py",
           "[[[t for q in same for t in", "[[[t for q in same[:1] for t in",
           "tests/test_iogen.py::test_size_qd_parse_gives_every_cell_and_the_heat_map_draws_the_run_s_own"),
    Mutant("grid-not-checked-on-load", "harness/osmeter/results/store.py",
           "    g = m.get(\"grid\")\n    if g is not None:", "    g = m.get(\"grid\")\n    if False:",
           "tests/test_iogen.py::test_size_qd_parse_gives_every_cell_and_the_heat_map_draws_the_run_s_own"),
    Mutant("size-qd-figure-iops-panel-shows-mbps", "harness/osmeter/probes/areas/disk.py",
           'nan(v["mbps"]["median"]), nan(v["iops"]["median"])', 'nan(v["mbps"]["median"]), nan(v["mbps"]["median"])',
           "tests/test_iogen.py::test_size_qd_parse_gives_every_cell_and_the_heat_map_draws_the_run_s_own"),
    Mutant("zones-unreached-kept-as-zero", "harness/osmeter/probes/areas/disk.py",
           'reached = [z for z in zs if z["bytes"] > 0]', "reached = zs",
           "tests/test_iogen.py::test_zones_parse_to_a_series_by_offset_drawn_in_the_report"),
    Mutant("zones-figure-bars-without-length", "harness/osmeter/probes/areas/disk.py",
           'd["series"]["median"], p.get("zone_bytes") or 0)', 'd["series"]["median"], 0)',
           "tests/test_iogen.py::test_zones_parse_to_a_series_by_offset_drawn_in_the_report"),
    Mutant("report-disk-figures-only-the-sweep", "harness/osmeter/probes/areas/disk.py",
           'FIGURES = (disk_sweep, disk_size_qd, disk_zones)', 'FIGURES = (disk_sweep,)',
           "tests/test_iogen.py::test_zones_parse_to_a_series_by_offset_drawn_in_the_report"),
    Mutant("zones-not-asked-of-the-sequential-read", "harness/osmeter/probes/areas/disk.py",
           '*(("--zones", str(zones[preset == "full"])) if zones else ())', "*()",
           "tests/test_iogen.py::test_the_disk_probes_parse_their_own_smoke_runs"),
    Mutant("ramp-ios-ignored", "bench/iogen/run/run.c",
           "rs->ramp_ios = rs->cfg->ramp_ios;", "rs->ramp_ios = 0;",
           "tests/test_iogen.py::test_ramp_by_a_count_of_requests"),
    Mutant("zones-all-in-the-first", "bench/iogen/run/stream.c",
           "uint64_t z = (io->off - tg->region_start) * rs->zones / tg->region_len;",
           "uint64_t z = (io->off - tg->region_start) * 0 / tg->region_len;",
           "tests/test_iogen.py::test_zones_bin_a_sequential_run_by_offset"),
    Mutant("prober-packets-received-only", "bench/iogen/measure/prober.c",
           "r->net_packets_per_s += r->nic[n].rx_packets_per_s + r->nic[n].tx_packets_per_s;",
           "r->net_packets_per_s += r->nic[n].rx_packets_per_s;",
           "tests/test_iogen.py::test_the_prober_reports_packets_per_nic_and_memory"),
    Mutant("prober-nic-packets-are-bytes", "bench/iogen/measure/prober.c",
           "&rx, &rxp, &rxe, &tx, &txp, &txe) == 6) {", "&rxp, &rx, &rxe, &txp, &tx, &txe) == 6) {",
           "tests/test_iogen.py::test_the_prober_reports_packets_per_nic_and_memory"),
    Mutant("prober-buffers-are-the-cache", "bench/iogen/measure/prober.c",
           "\"MemFree\", \"MemAvailable\", \"Cached\", \"Buffers\",", "\"MemFree\", \"MemAvailable\", \"Buffers\", \"Cached\",",
           "tests/test_iogen.py::test_the_prober_reports_packets_per_nic_and_memory"),
    Mutant("launcher-kill-does-nothing", "harness/osmeter/host/launch.py",
           "        proc = self.proc\n        if proc is None:", "        proc = None\n        if proc is None:",
           "tests/test_cli.py::test_sigint_keeps_the_finished_probes"),
    Mutant("vtimer-probe-per-64-calls", "bench/vtimer/probe.c",
           "((double)ticks[c] - osm_timer.overhead) / NT,", "((double)ticks[c] - osm_timer.overhead) / 64,",
           "tests/test_vtimer.py::test_timer_costs_against_the_clocks_they_read"),
    Mutant("vtimer-virtual-reads-the-tsc", "bench/vtimer/vtimer.c",
           "return t->kind == VT_VIRTUAL ? vnow() : tsc_now();",
           "return t->kind == VT_VIRTUAL ? tsc_now() : tsc_now();",
           "tests/test_vtimer.py::test_timer_costs_against_the_clocks_they_read"),
    Mutant("memlevels-core-farthest-point", "harness/osmeter/probes/memlevels.py",
           "np.array([int(np.argmin(dist))])", "np.array([int(np.argmax(dist))])",
           "tests/test_mem.py::test_two_points_either_side_of_their_median_still_make_a_level"),
    Mutant("fs-meta-create-delete-swapped", "bench/fs/meta.c",
           "osm_meas_add(&mc, created[k * rounds + r], false);\n            osm_meas_add(&md, deleted[k * rounds + r], false);",
           "osm_meas_add(&mc, deleted[k * rounds + r], false);\n            osm_meas_add(&md, created[k * rounds + r], false);",
           "tests/test_fs.py::test_metadata_rates"),
    Mutant("fs-meta-rate-1000x", "bench/fs/meta.c",
           "osm_meas_add(&md, deleted[k * rounds + r], false);",
           "osm_meas_add(&md, deleted[k * rounds + r] * 1000, false);",
           "tests/test_fs.py::test_metadata_rates"),
    Mutant("fs-meta-deletes-between-rounds", "bench/fs/meta.c",
           "            created[k * rounds + r] = create_round(sub, names, (size_t)kib[k] * 1024, data);\n"
           "        }\n    for (size_t k = 0; k < NSIZES; k++)\n        for (size_t r = 0; r < rounds; r++)\n"
           "            deleted[k * rounds + r] = delete_round(subs[k * rounds + r], names);",
           "            created[k * rounds + r] = create_round(sub, names, (size_t)kib[k] * 1024, data);\n"
           "            deleted[k * rounds + r] = delete_round(sub, names);\n        }",
           "tests/test_fs.py::test_metadata_creates_never_follow_the_runs_own_deletes", slow=True),
    Mutant("c2c-one-direction-for-every-pair", "bench/cpu/c2c.c",
           "double v = measure_pair(cpus[pairs[k].a], cpus[pairs[k].b], &o);",
           "double v = measure_pair(cpus[pairs[0].a], cpus[pairs[0].b], &o);",
           "tests/test_sched.py::test_c2c_both_directions_agree"),
    Mutant("c2c-matrix-transposed", "bench/cpu/c2c.c",
           "matrix[pairs[k].a * n + pairs[k].b] = v;", "matrix[pairs[k].b * n + pairs[k].a] = v;",
           "tests/test_sched.py::test_c2c_both_directions_agree"),
    Mutant("compare-interval-80-percent", "harness/osmeter/core/inference.py",
           "lo, hi = np.percentile(r, [2.5, 97.5])", "lo, hi = np.percentile(r, [10, 90])",
           "tests/test_analysis_compare.py::test_hierarchical_interval_covers_the_true_ratio"),
    Mutant("kpaths-irq-left-in-its-syscall", "harness/osmeter/ktrace/trace.py",
           "            th.stack.append(f\"hardirq {mo.group(1)} {mo.group(2) or ''}\".rstrip() if mo else \"hardirq\")",
           "            pass",
           "tests/test_ktrace_kpaths.py::test_every_tick_of_a_sample_is_placed_once"),
    Mutant("kpaths-waker-named-by-the-interrupted-task", "harness/osmeter/ktrace/trace.py",
           "        if ctx in \"hHsZz\" and ctx != \".\":", "        if False:",
           "tests/test_ktrace_kpaths.py::test_every_tick_of_a_sample_is_placed_once"),
    Mutant("kpaths-not-per-operation", "harness/osmeter/ktrace/kpaths.py",
           "        scale = 1e9 / hz / max(ops, 1e-12)", "        scale = 1e9 / hz",
           "tests/test_ktrace_kpaths.py::test_a_breakdown_is_per_operation_and_adds_up"),
    Mutant("kpaths-unseen-switch-in-unknown", "harness/osmeter/ktrace/trace.py",
           "        elif th.pending == \"run\":\n            self._relabel_last(th, \"wake-up\")\n        th.pending = \"\"\n"
           "        th.events.append((at, \"sched_switch_in\"))",
           "        elif th.pending == \"run\":\n            self._relabel_last(th, \"unknown\")\n        th.pending = \"\"\n"
           "        th.events.append((at, \"sched_switch_in\"))",
           "tests/test_ktrace_kpaths.py::test_a_switch_in_the_kernel_did_not_trace_is_inferred"),
    Mutant("kpaths-every-wait-after-a-wakeup-is-latency", "harness/osmeter/ktrace/trace.py",
           "\"wake-up\" if prev_pid == 0 or by_waker else \"preempted\"", "\"wake-up\"",
           "tests/test_ktrace_kpaths.py::test_a_waker_that_keeps_the_cpu_is_wake_up_latency_and_another_task_is_preemption "
           "tests/test_ktrace_kpaths.py::test_a_busy_thread_on_the_woken_threads_cpu_shows_as_preemption", slow=True),
    Mutant("ktimers-virtual-is-physical", "harness/osmeter/ktrace/ktimers.py",
           "NOT_THE_PATH = tuple(g for g in GROUPS if g not in (\"user\", \"syscall\", \"page fault\"))",
           "NOT_THE_PATH = ()",
           "tests/test_ktrace_kpaths.py::test_kernel_timers_take_out_interrupts_softirqs_and_time_off_the_cpu"),
    Mutant("kpaths-disk-sleep-named-by-its-waker", "harness/osmeter/ktrace/kpaths.py",
           "    got = breakdown(tl, spans, hz, getattr(probe, \"kernel_wait\", \"\") or \"device\")",
           "    got = breakdown(tl, spans, hz, \"\")",
           "tests/test_ktrace_kpaths.py::test_io_intervals_give_time_per_io_and_waiting_is_the_device "
           "tests/test_ktrace_kpaths.py::test_a_throttled_disk_shows_in_the_device_share", slow=True),
    Mutant("kpaths-batch-operations-not-marked", "bench/common/batch.c",
           "    osm_sample_ops(iters);\n", "",
           "tests/test_ktrace_kpaths.py::test_components_add_up_to_the_traced_sample", slow=True),
    Mutant("kpaths-asleep-counted-as-its-syscall", "harness/osmeter/ktrace/trace.py",
           "            self._set(th, ev.ts, \"preempted\" if state.startswith(\"R\") else \"waiting\")",
           "            self._set(th, ev.ts, \"preempted\" if state.startswith(\"R\") else self._here(th))",
           "tests/test_ktrace_kpaths.py::test_every_tick_of_a_sample_is_placed_once"),
    Mutant("kpaths-no-kernel-column", "harness/osmeter/report/latex.py",
           "    kernel = traced(rows)\n", "    kernel = False\n",
           "tests/test_ktrace_kpaths.py::test_the_report_and_notebook_show_the_kernel_share_and_the_breakdown", slow=True),
    Mutant("tracefs-settings-at-the-top-level", "harness/osmeter/ktrace/tracefs.py",
           "        inst = Instance(path)\n", "        inst = Instance(self.mount)\n",
           "tests/test_ktrace_kpaths.py::test_tracefs_is_as_it_was_after_a_run_and_after_sigint", slow=True),
    Mutant("tracefs-stale-state-ignored", "harness/osmeter/ktrace/tracefs.py",
           "                self._undo_stale()\n", "",
           "tests/test_ktrace_kpaths.py::test_a_killed_runs_tracing_is_undone_by_the_next", slow=True),
    Mutant("kpaths-rates-traced", "harness/osmeter/ktrace/kpaths.py",
           'if m.unit == "ns" and not m.curve and m.id in wanted', "if m.id in wanted",
           "tests/test_ktrace_kpaths.py::test_only_a_time_is_traced"),
    Mutant("kpaths-refusal-fails-the-run", "harness/osmeter/running/runner.py",
           "        p.extra_conditions[\"kernel_paths\"] = {\"requested\": True, \"refused\": why}",
           "        raise RunError(why)",
           "tests/test_ktrace_kpaths.py::test_without_root_the_refusal_is_named_and_the_run_goes_on", slow=True),
    Mutant("compare-components-runs-pooled", "harness/osmeter/analysis/kparts.py",
           "[np.array([v]) for v in va], [np.array([v]) for v in vb],", "[np.array(va)], [np.array(vb)],",
           "tests/test_ktrace_kpaths.py::test_compare_names_the_component_that_moved"),
    Mutant("fleet-index-duplicate-labels-kept", "harness/osmeter/results/store.py",
           "        if label in seen:", "        if False:",
           "tests/test_fleet.py::test_a_fleet_index_with_duplicate_labels_is_refused_not_a_host_dropped"),
    Mutant("fleet-index-hosts-unchecked", "harness/osmeter/results/store.py",
           "    if not isinstance(hosts, list):", "    if False:",
           "tests/test_fleet.py -k malformed_fleet_index"),
    Mutant("fleet-compare-tex-not-refused-first", "harness/osmeter/cli/cmd_compare.py",
           "        if args.tex or args.plot:  # refused before anything is printed or written",
           "        if False:",
           "tests/test_fleet.py::test_compare_of_a_fleet_refuses_tex_before_printing_anything"),
    Mutant("fleet-check-reads-lines-by-position", "harness/osmeter/fleet/host.py",
           "    for line in text.splitlines():\n        word = line.split", "    for line in text.splitlines()[:1]:\n        word = line.split",
           "tests/test_fleet.py::test_the_check_reads_only_its_own_lines_past_a_banner"),
    Mutant("fleet-check-names-only-the-first-lack", "harness/osmeter/fleet/host.py",
           "    if (\"python3\" in needs or python) and version is not None and version < min_python:",
           "    if not problems and (\"python3\" in needs or python) and version is not None and version < min_python:",
           "tests/test_fleet.py::test_a_host_lacking_make_and_a_new_python_names_everything_it_lacks"),
    Mutant("ssh-dash-target-accepted", "harness/osmeter/remote/ssh.py",
           "    if not target or target.startswith(\"-\"):", "    if not target:",
           "tests/test_fleet.py::test_a_host_name_starting_with_a_dash_never_reaches_ssh"),
    Mutant("fleet-dash-host-accepted", "harness/osmeter/fleet/host.py",
           "    dash = [n for n in names if any(part.startswith(\"-\") for part in n.split(\"@\"))]", "    dash = []",
           "tests/test_fleet.py::test_a_host_name_starting_with_a_dash_never_reaches_ssh"),
    Mutant("fleet-fetch-after-a-run-that-wrote-nothing", "harness/osmeter/fleet/run.py",
           "    if have.stdout.strip() == \"have\":", "    if True:",
           "tests/test_fleet.py::test_a_remote_runs_own_failure_is_its_reason_not_the_fetch"),
    Mutant("ssh-keepalives-10s-apart", "harness/osmeter/remote/ssh.py",
           "ALIVE_INTERVAL = 2", "ALIVE_INTERVAL = 10",
           "tests/test_fleet.py::test_a_host_that_stops_answering_is_given_up_in_seconds", slow=True),
    Mutant("fleet-load-target-left", "harness/osmeter/fleet/load.py",
           "made = target is not None and not _exists(h, target)", "made = False",
           "tests/test_fleet.py::test_fleet_load_is_synchronized_and_merges_histograms", slow=True),
    Mutant("fleet-stale-results-kept", "harness/osmeter/remote/agent.py",
           "        if _held(d + \".lock\") or _held(os.path.join(d, \".osmeter.lock\")):\n            continue",
           "        if True:\n            continue",
           "tests/test_fleet.py::test_a_killed_controller_leaves_nothing_the_next_run_keeps", slow=True),
    Mutant("fleet-held-results-removed", "harness/osmeter/remote/agent.py",
           "    except BlockingIOError:\n        return True", "    except BlockingIOError:\n        return False",
           "tests/test_fleet.py::test_stale_fleet_results_are_removed_only_when_nobody_holds_them"),
    Mutant("agent-probe-neither-pinned-nor-fifo", "harness/osmeter/remote/agent.py",
           "launch.Launcher(Path(bin_dir), q[\"cpu\"], q[\"fifo\"],", "launch.Launcher(Path(bin_dir), 0, False,",
           "tests/test_fleet.py::test_a_thin_hosts_probe_is_pinned_scheduled_timed_out_and_killed_with_its_group_there"),
    Mutant("agent-leaves-its-probe-when-the-session-ends", "harness/osmeter/remote/agent.py",
           "        if state[\"launcher\"] is not None:\n            state[\"launcher\"].kill()",
           "        if False:\n            state[\"launcher\"].kill()",
           "tests/test_fleet.py::test_a_thin_hosts_probe_is_pinned_scheduled_timed_out_and_killed_with_its_group_there"),
    Mutant("onhost-machine-described-here", "harness/osmeter/remote/onhost.py",
           "        return self.call(\"machine\")", "        return describe_machine()",
           "tests/test_fleet.py::test_a_fleet_of_two_registry_less_namespace_hosts_runs_without_python", slow=True),
    Mutant("fleet-thin-path-not-taken", "harness/osmeter/fleet/run.py",
           "        if not python:  # a thin host", "        if False:  # a thin host",
           "tests/test_fleet.py::test_a_fleet_of_two_registry_less_namespace_hosts_runs_without_python", slow=True),
    Mutant("report-empty-id-left-out", "harness/osmeter/present/rows.py",
           "        value = value if isinstance(value, (int, float)) else None\n",
           "        value = value if isinstance(value, (int, float)) else None\n        if value is None:\n"
           "            continue\n",
           "tests/test_report.py::test_a_measurement_whose_samples_were_all_disturbed_still_reports", quick=True),
    Mutant("plots-curves-left-out", "harness/osmeter/present/plots.py",
           'if m.get("median") is not None or "series" in m or "grid" in m}',
           'if m.get("median") is not None and "series" not in m and "grid" not in m}',
           "tests/test_report.py::test_a_measurement_whose_samples_were_all_disturbed_still_reports", quick=True),
    Mutant("report-figures-not-written", "harness/osmeter/report/latex.py",
           "    fig.savefig(figdir / name)\n", "    pass\n",
           "tests/test_report.py::test_report_tex_has_every_section_table_and_figure", quick=True),
    Mutant("report-keeps-an-earlier-reports-figures", "harness/osmeter/report/latex.py",
           "        if re.fullmatch(r\"[a-z]+-\\d+\\.pdf\", old.name) and old.is_file():", "        if False:",
           "tests/test_report.py::test_report_tex_has_every_section_table_and_figure", quick=True),
    Mutant("report-figure-wider-than-the-text", "harness/osmeter/report/latex.py",
           "    fig.savefig(figdir / name)\n", "    fig.set_size_inches(8, 4)\n    fig.savefig(figdir / name)\n",
           "tests/test_report.py::test_report_tex_has_every_section_table_and_figure", quick=True),
    Mutant("memlevels-ends-from-sysfs", "harness/osmeter/probes/areas/mem.py",
           '"level_end": lv.end,', '"level_end": sysfs.get(name) or lv.end,',
           "tests/test_mem.py::test_level_ends_bracket_sysfs_sizes", quick=True),
    Mutant("series-all-nan-warning-shown", "harness/osmeter/core/stats.py",
           'warnings.filterwarnings("ignore", "All-NaN slice encountered", RuntimeWarning)', "pass",
           "tests/test_results.py::test_a_series_x_whose_trials_were_all_disturbed_has_no_median_and_no_warning"),
    Mutant("stability-area-mean-for-median", "harness/osmeter/analysis/stability.py",
           "_pct(float(np.median(cvs)))", "_pct(float(np.mean(cvs)))",
           "tests/test_analysis_compare.py::test_stability_by_area_over_both_sides_of_an_a_to_a"),
    Mutant("stability-one-side-only", "harness/osmeter/cli/cmd_stability.py",
           "        runs = load_side(args.dirs)\n    except ValueError as e:\n        raise RunError(str(e)) from None\n    if len(runs) < 2:",
           "        runs = load_side(args.dirs[:1])\n    except ValueError as e:\n        raise RunError(str(e)) from None\n    if len(runs) < 2:",
           "tests/test_analysis_compare.py::test_stability_by_area_over_both_sides_of_an_a_to_a"),
    Mutant("fleet-python-reason-without-its-cause", "harness/osmeter/fleet/host.py",
           "cannot import numpy and matplotlib there: {err[-1] if err else 'no message'}\")",
           "cannot import numpy and matplotlib there\")",
           "tests/test_fleet.py::test_a_failing_hosts_reason_is_whole_and_names_the_cause"),
    Mutant("probe-human-ignored", "bench/common/args.c",
           "osm_human_output = o->human;", "osm_human_output = false;",
           "tests/test_tree_readme.py::test_the_safe_commands_run", quick=True),
    Mutant("option-row-limits-ignored", "bench/common/args.c",
           "case OSM_OPT_U64: *r->var.u64 = osm_parse_u64(opt, val, r->min, r->max); break;",
           "case OSM_OPT_U64: *r->var.u64 = osm_parse_u64(opt, val, 0, UINT64_MAX); break;",
           "tests/test_probes.py -k option_rows_keep_their_limits"),
    Mutant("option-list-takes-one-too-many", "bench/common/args.c",
           "            if (n == r->cap)\n", "            if (n == r->cap + 1)\n",
           "tests/test_probes.py -k option_rows_keep_their_limits"),
    Mutant("option-help-defaults-after-parsing", "bench/common/args.c",
           "            usage(info, o, defs);",
           "            for (size_t k = 0; k < nopts; k++)\n                fmt_default(&info->opts[k], defs[k]);\n"
           "            usage(info, o, defs);",
           "tests/test_probes.py -k help_says_each_rows_default"),
    Mutant("option-help-without-defaults", "bench/common/args.c",
           "        if (defs[k][0])\n", "        if (0 && defs[k][0])\n",
           "tests/test_probes.py -k help_says_each_rows_default"),
    Mutant("one-event-probe-takes-batches", "bench/common/args.c",
           "if (info->one_event && o->iterations != 1)", "if (info->one_event && o->iterations == 0)",
           "tests/test_probes.py::test_fixed_iteration_probes_refuse_batches"),
    Mutant("blocking-window-counts-switches", "bench/common/osm.h",
           "    if (w->blocking) {\n        /* switching is the operation", "    if (0) {\n        /* switching is the operation",
           "tests/test_common_timing.py"),
    Mutant("export-median-is-the-mean", "harness/osmeter/present/rows.py",
           'w.writerow([m["id"], m["unit"], m.get("n"), m.get("mean"), m.get("median"),',
           'w.writerow([m["id"], m["unit"], m.get("n"), m.get("mean"), m.get("mean"),',
           "tests/test_tree_readme.py::test_the_safe_commands_run", quick=True),
    Mutant("sigint-ignored-by-commands", "harness/osmeter/core/errors.py",
           "old = {s: signal.signal(s, raise_it) for s in SIGNALS}",
           "old = {s: signal.signal(s, signal.SIG_IGN) for s in SIGNALS}",
           "tests/test_running_reliability.py::test_ctrl_c_while_the_report_is_made", slow=True),
    Mutant("latex-partial-pdf-left", "harness/osmeter/report/latex.py",
           "        partial.unlink(missing_ok=True)", "        pass",
           "tests/test_running_reliability.py::test_ctrl_c_while_the_report_is_made", slow=True),
    Mutant("net-remote-peer-is-local", "bench/net/common_net.h",
           'if (osm_net_parse(net_peer_arg, &t->addr, err, sizeof err) != 0)\n            osm_usage_error("--peer: %s", err);',
           'if (osm_net_local_peer(&t->addr, &t->local_pid, net_peer_delay_us, err, sizeof err) != 0)\n            osm_die("%s", err);',
           "tests/test_net.py::test_remote_probes_between_namespaces"),
    Mutant("net-close-window-misses-the-fin", "bench/net/conn.c",
           "        ssize_t n = read(fd, &c, 1);\n        uint64_t tx = osm_window_close(&w, &d2);",
           "        uint64_t tx = osm_window_close(&w, &d2);\n        ssize_t n = read(fd, &c, 1);",
           "tests/test_net.py::test_remote_probes_between_namespaces"),
    Mutant("net-rtt-per-sample-not-per-round-trip", "bench/net/rtt.c",
           "osm_meas_add(&m, ((double)t - osm_timer.overhead) / (double)o->iterations, d);",
           "osm_meas_add(&m, ((double)t - osm_timer.overhead), d);",
           "tests/test_net.py::test_remote_probes_between_namespaces"),
    Mutant("fleet-remote-peer-is-local", "bench/net/common_net.h",
           'if (osm_net_parse(net_peer_arg, &t->addr, err, sizeof err) != 0)\n            osm_usage_error("--peer: %s", err);',
           'if (osm_net_local_peer(&t->addr, &t->local_pid, net_peer_delay_us, err, sizeof err) != 0)\n            osm_die("%s", err);',
           "tests/test_fleet.py::test_remote_measures_against_a_namespace_host"),
    Mutant("fleet-rtt-per-sample-not-per-round-trip", "bench/net/rtt.c",
           "osm_meas_add(&m, ((double)t - osm_timer.overhead) / (double)o->iterations, d);",
           "osm_meas_add(&m, ((double)t - osm_timer.overhead), d);",
           "tests/test_fleet.py::test_remote_measures_against_a_namespace_host"),
    Mutant("fleet-compare-sides-swapped", "harness/osmeter/analysis/fleet.py",
           "columns = {x: compare.compare_sides(runs[base], runs[x], min_change",
           "columns = {x: compare.compare_sides(runs[x], runs[base], min_change",
           "tests/test_fleet.py::test_fleet_run_two_hosts_and_local_then_compare_and_report", slow=True),
    Mutant("iogen-status-left-in-the-buffer", "bench/iogen/run/status.c",
           "json_line_end(&j, \"the status to standard output\");", "fputc('\\n', stdout);",
           "tests/test_iogen.py::test_status_lines_stream_while_the_run_lasts_and_agree_with_the_result"),
    Mutant("iogen-status-ios-counted-from-the-start", "bench/iogen/run/status.c",
           "uint64_t dios = ios - c->ios;", "uint64_t dios = ios;",
           "tests/test_iogen.py::test_status_lines_stream_while_the_run_lasts_and_agree_with_the_result"),
    Mutant("prober-every-other-sample-unsaid", "bench/iogen/measure/prober.c",
           "    if (p->tick) {", "    if (p->tick && p->n % 2) {",
           "tests/test_iogen.py::test_status_lines_stream_while_the_run_lasts_and_agree_with_the_result "
           "tests/test_fleet.py::test_fleet_load_streams_every_hosts_status_while_it_runs"),
    Mutant("fleet-status-read-at-the-end", "harness/osmeter/fleet/host.py",
           "        for line in p.stdout:\n            on_line(line)",
           "        for line in p.stdout.read().splitlines(True):\n            on_line(line)",
           "tests/test_fleet.py::test_fleet_load_streams_every_hosts_status_while_it_runs", slow=True),
    Mutant("fleet-status-offset-added", "harness/osmeter/fleet/loadstatus.py",
           "st[\"t\"] = round(st[\"unix\"] - offset, 6)", "st[\"t\"] = round(st[\"unix\"] + offset, 6)",
           "tests/test_fleet.py::test_a_hosts_status_is_kept_on_this_machines_clock"),
    Mutant("fleet-status-interval-unchecked", "harness/osmeter/cli/cmd_fleet.py",
           "(not math.isfinite(args.interval) or not 0.1 <= args.interval <= 3600)",
           "(not math.isfinite(args.interval) or not 0.0 <= args.interval)",
           "tests/test_fleet.py::test_a_bad_status_interval_is_refused_before_anything_runs"),
    Mutant("fleet-net-takes-an-interval", "harness/osmeter/cli/cmd_fleet.py",
           "args.workers or args.interval is not None:", "args.workers:",
           "tests/test_fleet.py::test_a_bad_status_interval_is_refused_before_anything_runs"),
    Mutant("fleet-live-table-in-a-pipe", "harness/osmeter/fleet/loadstatus.py",
           "self.on = self.stream.isatty()", "self.on = True",
           "tests/test_fleet.py::test_the_live_table_draws_each_frame_over_the_last_and_nothing_off_a_terminal "
           "tests/test_fleet.py::test_fleet_load_streams_every_hosts_status_while_it_runs"),
    Mutant("fleet-live-table-drawn-below-the-last", "harness/osmeter/fleet/loadstatus.py",
           "            self.stream.write(f\"\\033[{self.drawn}F\\033[J\")", "            self.stream.write(\"\")",
           "tests/test_fleet.py::test_the_live_table_draws_each_frame_over_the_last_and_nothing_off_a_terminal "
           "tests/test_fleet.py::test_fleet_loads_live_table_redraws_on_a_terminal"),
    Mutant("probe-start-not-shielded-from-signals", "harness/osmeter/host/launch.py",
           "            with _deferred_signals():  # a signal here", "            with contextlib.nullcontext():  # a signal here",
           "tests/test_running_reliability.py::test_a_signal_while_a_probe_starts_leaves_the_probe_held"),
    Mutant("disk-empty-interval-a-zero-latency", "harness/osmeter/probes/areas/disk.py",
           "    done = [i for i in iv if i[\"iops\"] > 0]", "    done = list(iv)",
           "tests/test_iogen.py::test_an_interval_without_a_completion_has_no_latency_sample"),
    Mutant("kpaths-disk-traced-over-one-process-share", "harness/osmeter/probes/areas/disk.py",
           "traced=traced_args(workload, total,", "traced=traced_args(workload, secs,",
           "tests/test_iogen.py::test_the_traced_pass_is_cut_to_what_the_trace_buffers_hold"),
    Mutant("kpaths-disk-traced-over-the-whole-run", "harness/osmeter/probes/areas/disk.py",
           "        secs = min(full, max(TRACED_MIN_S, TRACED_IOS / iops)) if iops > 0 else TRACED_MIN_S",
           "        secs = full",
           "tests/test_iogen.py::test_the_traced_pass_is_cut_to_what_the_trace_buffers_hold"),
    Mutant("ssh-control-dirs-not-swept", "harness/osmeter/remote/ssh.py",
           "        sweep_control_dirs()\n", "",
           "tests/test_fleet.py::test_a_killed_controllers_ssh_directory_is_swept_by_the_next"),
    Mutant("fleet-status-transit-in-seconds", "harness/osmeter/fleet/loadstatus.py",
           "        return fmt_value(None if secs is None else secs * 1e9, \"ns\")",
           "        return fmt_value(secs, \"s\")",
           "tests/test_fleet.py::test_a_hosts_status_is_kept_on_this_machines_clock"),
    Mutant("fleet-passes-on-only-switches-set-true", "harness/osmeter/running/runopts.py",
           "            out += [o.flag] if v != o.default else []", "            out += [o.flag] if v is True else []",
           "tests/test_cli.py::test_every_run_option_reaches_each_command_the_table_names_and_the_record"),
    Mutant("campaign-records-no-switch", "harness/osmeter/running/runopts.py",
           "for o in OPTIONS if o.is_field and o.recorded for v", "for o in OPTIONS if o.is_field and o.recorded and not o.switch for v",
           "tests/test_cli.py::test_every_run_option_reaches_each_command_the_table_names_and_the_record"),
    Mutant("ab-run-options-by-hand", "harness/osmeter/running/runopts.py",
           "    return RunOptions(**{o.name: getattr(args, o.name, o.default) for o in OPTIONS if o.is_field})",
           "    return RunOptions(**{o.name: getattr(args, o.name, o.default) for o in OPTIONS if o.is_field\n"
           "                          and (o.name != \"timer\" or args.cmd != \"ab\")})",
           "tests/test_cli.py::test_every_run_option_reaches_each_command_the_table_names_and_the_record"),
    Mutant("tracefs-orphan-instances-kept", "harness/osmeter/ktrace/tracefs.py",
           "                orphans = sweep_orphans(self.mount)\n", "                orphans = []\n",
           "tests/test_ktrace_kpaths.py::test_instances_of_a_run_that_is_gone_are_removed_even_without_its_state_file"),
    Mutant("compare-imports-the-campaign-again", "harness/osmeter/analysis/compare.py",
           "from osmeter.results.store import Run, load_side\n", "from osmeter.running.campaign import Run, load_side\n",
           "tests/test_tree_layout.py::test_analysis_does_not_import_the_runner"),
    Mutant("report-package-imports-the-runner", "harness/osmeter/report/__init__.py",
           'measurements."""\n', 'measurements."""\nfrom osmeter.running.runner import start_run  # noqa: F401\n',
           "tests/test_tree_layout.py::test_analysis_does_not_import_the_runner"),
    Mutant("store-imports-compare-above-it", "harness/osmeter/results/store.py",
           "        from osmeter.results.readings import SLOWED, core_widths\n",
           "        from osmeter.analysis import compare  # noqa: F401\n"
           "        from osmeter.results.readings import SLOWED, core_widths\n",
           "tests/test_tree_layout.py::test_each_package_imports_only_those_below_it"),
    Mutant("runner-spells-raw-itself", "harness/osmeter/running/execute.py",
           "raw_dir = out / store.RAW", 'raw_dir = out / "raw"',
           "tests/test_tree_layout.py::test_only_the_store_spells_the_results_layout"),
    Mutant("ktimers-command-reads-the-wrong-directory", "harness/osmeter/cli/cmd_ktimers.py",
           "kpaths.load_timelines(args.dir / store.RAW, name,", "kpaths.load_timelines(args.dir, name,",
           "tests/test_ktrace_kpaths.py::test_the_ktimers_command_reads_a_runs_traces"),
    Mutant("netpeer-cpu-not-pinned", "bench/net/netpeer.c",
           "    if (cpu >= 0 && osm_pin(cpu) != 0)", "    if (cpu >= 0 && 0)",
           "tests/test_net.py::test_peer_refuses_bad_options"),
    Mutant("report-figures-drift-past-their-section", "harness/osmeter/report/latex.py",
           '    body.append(r"\\osmflushfloats")', "    pass",
           "tests/test_report.py::test_report_pdf", quick=True, slow=True),
    Mutant("renamed-ids-read-under-their-old-names", "harness/osmeter/results/store.py",
           '        m["id"] = current_id(m["id"])\n', "",
           "tests/test_results.py -k before_the_id_renames", quick=True),
    Mutant("timer-latency-id-outside-its-area", "harness/osmeter/probes/areas/sched.py",
           'measures=(measure("sched.timer.latency",', 'measures=(measure("timer.latency",',
           "tests/test_tree_layout.py::test_ids_probes_and_binaries_are_named_for_their_area"),
    Mutant("tail-plot-marks-quantiles-no-curve-reaches", "harness/osmeter/present/plots.py",
           "        if q < bottom:  # no curve reaches it", "        if False:  # no curve reaches it",
           "tests/test_report.py::test_a_tail_plot_marks_only_the_quantiles_its_curves_reach"),
    Mutant("collect-leaves-the-area-unstamped", "harness/osmeter/probes/areas/__init__.py",
           "    return dataclasses.replace(decl, area=area.name)", "    return decl",
           "tests/test_tree_layout.py::test_each_declaration_has_its_modules_area_unwritten"),
    Mutant("compare-keeps-its-own-rates", "harness/osmeter/analysis/verdicts.py",
           '    if better(unit) == "higher":\n', '    if unit in {"MB/s", "IOPS", "files/s"}:\n',
           "tests/test_analysis_compare.py::test_a_new_rate_unit_is_one_row_of_the_units_table"),
    Mutant("estimate-of-a-rate-predicted-as-its-time", "harness/osmeter/report/estimates.py",
           "predicted=convert(total, unit, m.unit),", "predicted=total,",
           "tests/test_report.py::test_the_example_estimates_are_optional_and_each_given_one_fits_its_id"),
    Mutant("area-figures-not-collected", "harness/osmeter/probes/areas/__init__.py",
           'figures=tuple(getattr(mod, "FIGURES", ()))', "figures=()",
           "tests/test_tree_layout.py::test_a_new_probe_with_a_figure_is_two_files"),
    Mutant("engine-list-drops-its-last-row", "bench/iogen/engines/engine.c",
           "return i < sizeof engines / sizeof engines[0] ? engines[i] : NULL;",
           "return i + 2 < sizeof engines / sizeof engines[0] ? engines[i] : NULL;",
           "tests/test_tree_layout.py::test_a_new_iogen_engine_with_an_option_is_its_file_and_its_name"),
    Mutant("engine-options-set-skips-the-last-engine", "bench/iogen/options/options.c",
           "    for (size_t i = 0; engine_at(i); i++)\n        if (engine_at(i)->options && engine_at(i)->options->set())",
           "    for (size_t i = 0; engine_at(i + 1); i++)\n        if (engine_at(i)->options && engine_at(i)->options->set())",
           "tests/test_tree_layout.py::test_a_new_iogen_engine_with_an_option_is_its_file_and_its_name"),
    Mutant("pin-here-does-not-pin", "bench/common/timing.c",
           "    if (osm_pin(cpu) != 0)\n        osm_die(\"cannot pin to the current CPU", "    if (0)\n        osm_die(\"cannot pin to the current CPU",
           "tests/test_common_timing.py::test_timing_core_checks"),
    Mutant("pin-here-repins-a-given-cpu", "bench/common/timing.c",
           "    if (o->cpu >= 0)\n        return o->cpu;", "    if (o->cpu < -1)\n        return o->cpu;",
           "tests/test_common_timing.py::test_timing_core_checks"),
    Mutant("bootstrap-median-order-statistic-off-by-one", "harness/osmeter/core/stats.py",
           "u = rng.beta(k, n + 1 - k, resamples)", "u = rng.beta(k + 1, n - k, resamples)",
           "tests/test_results.py::test_bootstrap_medians_are_those_of_resamples"),
    Mutant("bootstrap-median-next-one-not-above-the-first", "harness/osmeter/core/stats.py",
           "v = u + (1 - u) * rng.beta(1, n - k, resamples)", "v = rng.beta(k + 1, n - k, resamples)",
           "tests/test_results.py::test_bootstrap_medians_are_those_of_resamples"),
    Mutant("wakeup-idle-entries-read-once", "bench/sched/wakeup.c",
           "        idle_known = osm_idle_entries(wakee_cpu, &halts1, &polls1);",
           "        halts1 = halts0, polls1 = polls0;",
           "tests/test_sched.py::test_wakeup_counts_how_often_the_wakees_cpu_was_idle"),
    Mutant("host-params-range-from-one-run", "harness/osmeter/analysis/stability.py",
           'f"{min(v):.3g} .. {max(v):.3g}"', 'f"{v[0]:.3g} .. {v[0]:.3g}"',
           "tests/test_analysis_compare.py::test_stability_shows_what_a_probe_measured_of_the_hosts_part"),
    Mutant("compare-clock-not-used", "harness/osmeter/analysis/per_id.py",
           "    if row.test_unit == \"run\":\n        clock_adjust(", "    if False:\n        clock_adjust(",
           "tests/test_analysis_compare.py::test_a_clock_that_moves_between_runs_is_compared_out"),
    Mutant("compare-clock-slope-not-taken-out", "harness/osmeter/core/inference.py",
           "diff = float(yb.mean() - ya.mean()) - slope * gap", "diff = float(yb.mean() - ya.mean())",
           "tests/test_analysis_compare.py::test_a_clock_that_moves_between_runs_is_compared_out"),
    Mutant("ancova-se-without-the-clocks-gap", "harness/osmeter/core/inference.py",
           "s2 * (1 / na + 1 / nb + gap * gap / sxx)", "s2 * (1 / na + 1 / nb)",
           "tests/test_analysis_compare.py::test_the_covariance_test_keeps_its_size"),
    Mutant("sentinel-drift-clocks-ignored", "harness/osmeter/running/sentinel.py",
           "        if cycles:\n            a, b = [x * c", "        if False:\n            a, b = [x * c",
           "tests/test_analysis_compare.py::test_sentinels_judge_drift_at_equal_clock"),
    Mutant("compare-clock-id-at-its-own-clock", "harness/osmeter/results/readings.py",
           'probe = m.get("probe") if m.get("id") != CLOCK_ID else None', 'probe = m.get("probe")',
           "tests/test_analysis_compare.py::test_compare_and_stability_take_each_runs_clock_from_its_probes"),
    # the timer's step: the spacing of the differences' clusters (fractional), and list --methodology's line
    Mutant("timer-step-rounded-to-whole-ticks", "bench/common/timing.c",
           "step = round(sum / all * 100) / 100;", "step = round(sum / all);",
           "tests/test_common_timing.py::test_timing_core_checks"),
    Mutant("timer-step-fit-pulled-by-far-clusters", "bench/common/timing.c",
           "            sum += size[i] * centre[i] / round(centre[i] / spacing);\n            all += size[i];",
           "            sum += size[i] * centre[i] * round(centre[i] / spacing);\n"
           "            all += size[i] * round(centre[i] / spacing) * round(centre[i] / spacing);",
           "tests/test_common_timing.py::test_timing_core_checks"),
    Mutant("timer-step-is-the-largest-clusters-centre", "bench/common/timing.c",
           "        for (size_t i = 1; i < m; i++)\n            if (centre[i] - centre[i - 1] < spacing)\n"
           "                spacing = centre[i] - centre[i - 1];",
           "        for (size_t i = 1; i < m; i++)\n            if (size[i] > size[0])\n"
           "                spacing = centre[i], size[0] = size[i];",
           "tests/test_common_timing.py::test_timing_core_checks"),
    Mutant("timer-step-off-grid-reads-beside-0-decide", "bench/common/timing.c",
           "if (j - i >= need && c > STEP_NEAR) {", "if (j - i >= need) {",
           "tests/test_common_timing.py::test_timing_core_checks"),
    Mutant("timer-step-continuum-not-checked", "bench/common/timing.c",
           "if (step < 3 || (double)on_grid < 0.99 * (double)k)", "if (step < 3)",
           "tests/test_common_timing.py::test_timing_core_checks"),
    Mutant("list-timer-step-ticks-shown-as-ns", "harness/osmeter/cli/cmd_list.py",
           'return (f"timer: {t[\'kind\']}, step {res:.3g} ns', 'return (f"timer: {t[\'kind\']}, step {step:.3g} ns',
           "tests/test_cli.py::test_list_methodology_states_this_machines_timer_step_measured_now"),
    Mutant("list-methodology-without-the-timer", "harness/osmeter/cli/cmd_list.py",
           '        print(timer_now() + "\\n")', "        pass",
           "tests/test_cli.py::test_list_methodology_states_this_machines_timer_step_measured_now"),
    Mutant("list-timer-unbuilt-probes-unsaid", "harness/osmeter/cli/cmd_list.py",
           "        if not binary.exists():\n            return", "        if False:\n            return",
           "tests/test_cli.py::test_list_methodology_states_this_machines_timer_step_measured_now"),
    # the smallest detectable change (issue 44): '=' only within it, the stated change, ab's budget
    Mutant("compare-equal-below-the-detectable-change", "harness/osmeter/analysis/verdicts.py",
           "if r.p_equiv < alpha and r.mdc <= min_change:", "if r.p_equiv < alpha:",
           "tests/test_analysis_compare.py::test_no_id_is_equal_at_a_change_below_its_smallest_detectable_one"),
    Mutant("smallest-change-detection-only", "harness/osmeter/core/inference.py",
           "return math.expm1(log_change) if log_change < 50", "return math.expm1(detect * se) if log_change < 50",
           "tests/test_analysis_compare.py::test_no_id_is_equal_at_a_change_below_its_smallest_detectable_one"),
    Mutant("stability-detectable-without-the-floor", "harness/osmeter/analysis/stability.py",
           "else max(sd, RUN_SD_FLOOR) if math.isfinite(sd) else sd", "else sd",
           "tests/test_analysis_compare.py::test_stability_by_area_over_both_sides_of_an_a_to_a"),
    Mutant("need-counts-a-larger-change", "harness/osmeter/core/inference.py",
           "return math.isfinite(got) and got <= change", "return math.isfinite(got) and got <= change * 1.1",
           "tests/test_analysis_compare.py::test_too_few_runs_says_how_many_it_would_need"),
    Mutant("width-adjustment-sign-turned", "harness/osmeter/analysis/per_id.py",
           'p * math.exp(-fit["slope"] * (math.log(w) - ref))', 'p * math.exp(fit["slope"] * (math.log(w) - ref))',
           "tests/test_analysis_compare.py::test_processes_that_follow_the_cores_width_are_compared_at_equal_width"),
    Mutant("width-slope-used-whatever-its-significance", "harness/osmeter/analysis/per_id.py",
           'fit["applied"] = bool(fit["df"] >= WIDTH_MIN_DF and fit["p"] < WIDTH_P)', 'fit["applied"] = True',
           "tests/test_analysis_compare.py::test_processes_that_follow_the_cores_width_are_compared_at_equal_width"),
    Mutant("width-slope-across-runs", "harness/osmeter/core/inference.py",
           "            dy.append(y - y.mean())\n            dx.append(x - x.mean())",
           "            dy.append(y - 100)\n            dx.append(x - 1)",
           "tests/test_analysis_compare.py -k width"),
    Mutant("width-of-another-process", "harness/osmeter/results/store.py",
           "                and not isinstance(widths[k], bool) and widths[k] > 0 else None for k in numbers]",
           "                and not isinstance(widths[k], bool) and widths[k] > 0 else None for k in numbers[::-1]]",
           "tests/test_analysis_compare.py::test_compare_reads_each_processs_width_and_says_where_it_compared_at_equal_width"),
    Mutant("stability-width-left-out", "harness/osmeter/analysis/stability.py",
           '        if width and width["applied"]:\n            rs = adjusted[0]', '        if False:\n            rs = adjusted[0]',
           "tests/test_analysis_compare.py::test_compare_reads_each_processs_width_and_says_where_it_compared_at_equal_width"),
    Mutant("no-halt-request-of-1000-us", "harness/osmeter/host/nohalt.py",
           'os.write(fd, struct.pack("i", 0))', 'os.write(fd, struct.pack("i", 1000))',
           "tests/test_host_nohalt.py::test_a_latency_request_keeps_the_cpus_out_of_halt_and_goes_with_the_block"),
    Mutant("no-halt-loops-left-running", "harness/osmeter/host/nohalt.py",
           "            os.close(fd)\n        _stop(spinners)\n", "            os.close(fd)\n",
           "tests/test_host_nohalt.py::test_without_a_latency_request_a_busy_loop_keeps_each_cpu_awake_until_the_end"),
    Mutant("ram-scratch-fs-left-mounted", "harness/osmeter/host/ramdev.py",
           '            finally:\n                subprocess.run(["umount", str(mnt)], capture_output=True)\n',
           '            finally:\n                pass\n',
           "tests/test_host_ramdev.py::test_the_disk_probes_on_a_ram_device_and_fs_meta_on_a_scratch_ext4_both_gone_after"),
    Mutant("ram-killed-runs-devices-never-cleaned", "harness/osmeter/running/runner.py",
           "        removed += ramdev.clean_stale()", "        removed += []",
           "tests/test_host_ramdev.py::test_a_killed_runs_ram_devices_are_removed_by_the_next_run"),
    Mutant("ab-budget-never-checked", "harness/osmeter/running/ab.py",
           "    if max_minutes is None or done_rounds < 1:", "    if True:",
           "tests/test_analysis_compare.py::test_ab_budget_in_minutes_stops_before_a_round_that_would_end_past_it"),
    # a campaign's run: its report's and notebook's 'Between runs' (issue 44): the order, who gets it, the columns
    Mutant("between-runs-sorted-by-run-cv", "harness/osmeter/analysis/stability.py",
           'v = r["detectable"].get(DESIGNS[0])', 'v = r["run_cv"]',
           "tests/test_report.py::test_a_campaign_runs_report_states_each_ids_smallest_detectable_change"),
    Mutant("between-runs-for-a-campaign-of-one-run", "harness/osmeter/analysis/stability.py",
           "if len(runs) < 2 or run_dir not in", "if run_dir not in",
           "tests/test_report.py::test_a_campaign_runs_report_states_each_ids_smallest_detectable_change"),
    Mutant("between-runs-for-a-run-of-no-campaign", "harness/osmeter/analysis/stability.py",
           "    if not store.is_campaign(camp):\n        return None\n    runs = load_side([camp])",
           "    runs = load_side([camp if store.is_campaign(camp) else run_dir])\n    if len(runs) == 1:\n"
           "        return runs, by_detectable(stability_rows(runs))",
           "tests/test_report.py::test_a_campaign_runs_report_states_each_ids_smallest_detectable_change"),
    Mutant("between-runs-table-8-from-4", "harness/osmeter/analysis/stability.py",
           '*(_pct(r["detectable"].get(n)) for n in DESIGNS), _runs_cell(r)',
           '*(_pct(r["detectable"].get(DESIGNS[0])) for n in DESIGNS), _runs_cell(r)',
           "tests/test_report.py::test_a_campaign_runs_report_states_each_ids_smallest_detectable_change"),
    Mutant("between-runs-figure-8-from-4", "harness/osmeter/present/plots.py",
           "            v = part[:, k]\n", "            v = part[:, 0]\n",
           "tests/test_report.py::test_the_detectable_change_figure_draws_each_design_and_splits_many_ids"),
    Mutant("between-runs-figure-one-tall-page", "harness/osmeter/present/plots.py",
           "    parts = -(-len(rows) // per_figure)", "    parts = 1",
           "tests/test_report.py::test_the_detectable_change_figure_draws_each_design_and_splits_many_ids"),
    Mutant("between-runs-method-counts-the-ids", "harness/osmeter/report/latex.py",
           "esc(between_method(len(runs)))", "esc(between_method(len(rows)))",
           "tests/test_report.py::test_a_campaign_runs_report_states_each_ids_smallest_detectable_change"),
    Mutant("between-runs-notebook-in-the-ids-order", "harness/osmeter/report/notebook.py",
           "markdown_table(BETWEEN_HEAD, between_cells(rows))",
           'markdown_table(BETWEEN_HEAD, between_cells(sorted(rows, key=lambda r: r["id"])))',
           "tests/test_report.py::test_the_notebook_of_a_campaigns_run_shows_the_between_runs_table"),
    # a stalled device in one process of a run (issue 44's shorter quick budgets)
    Mutant("merge-keeps-first-process-refusal", "harness/osmeter/results/writer.py",
           "        first = lines[0]\n", "        first = lines[0] if \"refused\" not in first else first\n",
           "tests/test_iogen.py::test_zones_parse_to_a_series_by_offset_drawn_in_the_report"),
    Mutant("zones-unreached-fails-the-probe", "harness/osmeter/probes/areas/disk.py",
           'return {"id": f"{base}.zones", "refused":', 'raise ValueError(); return {"id": f"{base}.zones", "refused":',
           "tests/test_iogen.py::test_zones_parse_to_a_series_by_offset_drawn_in_the_report"),
    Mutant("ram-disk-ids-described-as-a-disk", "harness/osmeter/running/collect.py",
           'if probe.area == "disk" and conditions.get("disk_ram"):', 'if probe.area == "disk" and False:',
           "tests/test_host_ramdev.py::test_the_disk_probes_on_a_ram_device_and_fs_meta_on_a_scratch_ext4_both_gone_after"),
    Mutant("split-pools-a-runs-processes", "harness/osmeter/core/inference.py",
           "    logs = [run for run in logs if run]\n",
           "    logs = [[np.concatenate(run)] for run in logs if run]\n",
           "tests/test_analysis_compare.py::test_an_a_to_a_on_a_host_made_noisy_on_purpose_flags_nothing_and_finds_the_noise",
           slow=True),
    Mutant("mpi-collective-replayed-independent", "bench/iotrace/mpiio/replay.c",
           "case TC_MPI_FILE_WRITE_AT_ALL: ret = MPI_File_write_at_all(f, off, buf, count, dt, &st); break;",
           "case TC_MPI_FILE_WRITE_AT_ALL: ret = MPI_File_write_at(f, off, buf, count, dt, &st); break;",
           "tests/test_iotrace_mpi.py::test_the_replay_recorded_makes_the_programs_calls_rank_by_rank"),
    Mutant("mpi-replay-drops-the-view-displacement", "bench/iotrace/mpiio/replay.c",
           'ret = MPI_File_set_view(f, (MPI_Offset)arg_int(r, "disp", 0), et,',
           "ret = MPI_File_set_view(f, 0, et,",
           "tests/test_iotrace_mpi.py::test_the_replay_recorded_makes_the_programs_calls_rank_by_rank"),
    Mutant("mpi-record-drops-the-view-displacement", "bench/iotrace/mpiio/record.c",
           'a_int(&c.a, "disp", disp);', 'a_int(&c.a, "disp", 0);',
           "tests/test_iotrace_mpi.py::test_views_datatypes_communicators_and_hints_are_described"),
    Mutant("mpi-rank-clocks-not-aligned", "bench/iotrace/format/trace.c",
           "return v[0] ? strtoll(v, NULL, 10) : 0;", "return 0 * (v[0] ? strtoll(v, NULL, 10) : 0);",
           "tests/test_iotrace_mpi.py::test_ranks_clocks_are_aligned_at_mpi_init"),
    Mutant("mpi-posix-calls-not-linked", "bench/iotrace/posix/preload.c",
           "    parent = p;\n", "    parent = -1;\n    (void)p;\n",
           "tests/test_iotrace_mpi.py::test_the_posix_calls_under_a_collective_write_are_linked_and_hold_its_bytes"),
    Mutant("mpi-completion-io-not-linked", "bench/iotrace/mpiio/complete.c",
           "int64_t seq = (int64_t)rec_take_seq(), prev = rec_enter(seq);",
           "int64_t seq = (int64_t)rec_take_seq(), prev = rec_enter(-1);",
           "tests/test_iotrace_mpi.py::test_a_replay_moves_the_same_bytes_to_the_same_offsets_rank_by_rank"),
    Mutant("mpi-replay-ignores-the-recorded-gaps", "bench/iotrace/mpiio/replay.c",
           'if (!strcmp(timing, "recorded") && prev_rec_end && r->t_start > prev_rec_end) {',
           'if (0 && prev_rec_end && r->t_start > prev_rec_end) {',
           "tests/test_iotrace_mpi.py::test_timing_recorded_keeps_the_programs_compute_time"),
    Mutant("mpi-collective-recorded-as-independent", "bench/iotrace/mpiio/record.c",
           "BLOCKING(TC_MPI_FILE_WRITE_AT_ALL, fh, dt, count, off, st,",
           "BLOCKING(TC_MPI_FILE_WRITE_AT, fh, dt, count, off, st,",
           "tests/test_iotrace_mpi.py::test_hdf5s_collective_and_independent_io_is_recorded_with_its_bytes"),
    Mutant("mpi-moved-taken-from-the-request", "bench/iotrace/mpiio/record.c",
           'a_int(&c->a, "moved", (long long)got * size);',
           'a_int(&c->a, "moved", (long long)c->count * size + 0 * got);',
           "tests/test_iotrace_mpi.py::test_pnetcdfs_tools_are_recorded_and_their_trace_replays"),
    Mutant("mpi-replay-writes-half", "bench/iotrace/mpiio/replay.c",
           "case TC_MPI_FILE_WRITE_AT: ret = MPI_File_write_at(f, off, buf, count, dt, &st); break;",
           "case TC_MPI_FILE_WRITE_AT: ret = MPI_File_write_at(f, off, buf, count / 2, dt, &st); break;",
           "tests/test_iotrace_mpi.py::test_hdf5s_trace_replays_into_a_file_of_the_same_size"),
    Mutant("mpi-ranks-not-checked", "bench/iotrace/posix/record.c",
           "if (launcher && mpi_check_ranks(&t, why, sizeof why)) {", "if (0 && mpi_check_ranks(&t, why, sizeof why)) {",
           "tests/test_iotrace_mpi.py::test_a_rank_whose_file_never_reached_rank_0_is_named"),
    Mutant("mpi-launch-start-not-bounded", "bench/iotrace/mpiio/launch.c",
           "if (!up && !*timed_out && mono() - t0 > start_timeout) {",
           "if (!up && !*timed_out && mono() - t0 > start_timeout && 0) {",
           "tests/test_iotrace_mpi_hosts.py::test_a_host_the_launcher_cannot_start_is_an_error_with_nothing_left",
           slow=True),
    Mutant("mpi-replay-leaves-its-start-mark", "bench/iotrace/replay/replay.c",
           "    bool up = access(mark, F_OK) == 0;\n    unlink(mark);\n",
           "    bool up = access(mark, F_OK) == 0;\n",
           "tests/test_iotrace_mpi_hosts.py::test_a_trace_from_two_hosts_replays_on_two_hosts_under_each_mpi"),
    Mutant("mpi-prepare-limit-not-checked", "bench/iotrace/mpiio/launch.c",
           "    if (total > limit)\n", "    if (total > limit && 0)\n",
           "tests/test_iotrace_mpi.py::test_a_prepare_over_the_limit_and_options_without_a_launcher_are_refused"),
    Mutant("app-writes-counted-as-reads", "bench/iotrace/format/trace.c",
           "    case TK_WRITE: case TK_MPI_WRITE: return TCL_WRITE;\n",
           "    case TK_WRITE: case TK_MPI_WRITE: return TCL_READ;\n",
           "tests/test_iotrace_app.py::test_a_posix_trace_is_measured_as_app_ids_with_its_bytes"),
    Mutant("app-completion-not-in-its-requests-class", "bench/iotrace/mpiio/replay.c",
           "    int in = started_as ? *started_as : (int)trace_class_of(r->call);",
           "    int in = (int)trace_class_of(r->call);\n    (void)started_as;",
           "tests/test_iotrace_app.py::test_an_mpi_trace_is_replayed_under_its_launcher"),
    Mutant("app-replay-dir-kept", "harness/osmeter/running/execute.py",
           '                shutil.rmtree(self.subst["{app_dir}"], ignore_errors=True)',
           '                pass',
           "tests/test_iotrace_app.py::test_a_posix_trace_is_measured_as_app_ids_with_its_bytes"),
    Mutant("history-migration-skipped", "harness/osmeter/history/store.py",
           "                        for stmt in MIGRATIONS[v]:",
           "                        for stmt in (MIGRATIONS[v] if have == 0 or v == 1 else ()):",
           "tests/test_history.py::test_an_older_schema_is_migrated_and_a_foreign_or_damaged_file_is_refused"),
    Mutant("history-add-outside-one-transaction", "harness/osmeter/history/store.py",
           "                info, figs = _row(run, doc)\n",
           "                con.execute(\"COMMIT\")\n                con.execute(\"BEGIN IMMEDIATE\")\n"
           "                info, figs = _row(run, doc)\n",
           "tests/test_history.py::test_concurrent_writers_lose_no_run_and_a_killed_writer_leaves_no_half_run"),
    Mutant("history-run-not-added", "harness/osmeter/cli/cmd_run.py",
           "    status, out = run(opts)\n    if opts.history:\n        keep(out)",
           "    status, out = run(opts)",
           "tests/test_history.py::test_a_run_adds_itself_unless_told_not_to"),
    Mutant("changes-p-not-from-the-shuffles", "harness/osmeter/history/changes.py",
           "beaten += np.nanmax(scores(rng.permutation(x), min_size)) >= top - 1e-12",
           "beaten += 0 * (np.nanmax(scores(rng.permutation(x), min_size)) >= top - 1e-12)",
           "tests/test_history.py::test_change_points_keep_their_false_alarm_rate_and_find_planted_shifts"),
    Mutant("changes-right-end-not-searched", "harness/osmeter/history/changes.py",
           "kap = np.arange(t + min_size, n + 1)", "kap = np.arange(n, n + 1)",
           "tests/test_history.py::test_change_points_keep_their_false_alarm_rate_and_find_planted_shifts"),
    Mutant("page-change-line-on-the-run-before", "harness/osmeter/history/page.py",
           'xx = x(_t(c.after["time"]))', 'xx = x(_t(c.before["time"]))',
           "tests/test_history.py::test_the_page_shows_each_series_and_its_change_points_in_chromium",
           slow=True),  # it makes the planted history of 15 runs again (about 35 s)
    Mutant("decide-good-before-it-is-shown", "harness/osmeter/cli/cmd_decide.py",
           "is_good = worse <= threshold and not is_bad", "is_good = not is_bad",
           "tests/test_history.py::test_git_bisect_run_osmeter_decide_names_the_commit_that_made_it_slower"),
    Mutant("window-floor-ignores-the-timer-step", "bench/common/timing.c",
           "double steps = osm_timer.step_ticks * 100.0;", "double steps = 0;",
           "tests/test_tree_build.py::test_aarch64_timer_states_its_resolution"),
]

# ----------------------------------------------------------------- running

def _restore(saved: dict[str, str]) -> None:
    for rel, text in saved.items():
        path = ROOT / rel
        if path.read_text() != text:
            path.write_text(text)


def recover() -> None:
    """A journal left by a runner that was killed: its originals go back."""
    if JOURNAL.is_file():
        saved = json.loads(JOURNAL.read_text())
        _restore(saved)
        JOURNAL.unlink()
        print(f"mutants: restored {', '.join(saved)} from a killed run's journal", file=sys.stderr)


def make() -> subprocess.CompletedProcess:
    return subprocess.run(["make", "-s", "-j2", "-C", str(ROOT), "all"], capture_output=True, text=True)


def quick_run() -> Path:
    """build/quick-run when it was made by this very tree; else one now."""
    sys.path.insert(0, str(ROOT / "tests"))
    from conftest import QUICK_STAMP, sources_stamp

    want = sources_stamp()
    stamp = QUICK / QUICK_STAMP
    if stamp.is_file() and stamp.read_text().strip() == want:
        return QUICK
    print("mutants: no quick run of this tree in build/quick-run; making one (a few minutes) ...", flush=True)
    with tempfile.TemporaryDirectory(dir=ROOT / "build") as tmp:
        out = Path(tmp) / "run"
        r = subprocess.run([str(ROOT / "osmeter"), "run", "--preset", "quick", "--no-report", "--out", str(out)],
                           capture_output=True, text=True)
        if r.returncode != 0:
            sys.exit(f"mutants: the quick run failed:\n{r.stdout[-2000:]}{r.stderr[-2000:]}")
        (out / QUICK_STAMP).write_text(want + "\n")
        shutil.rmtree(QUICK, ignore_errors=True)
        shutil.move(str(out), QUICK)
    return QUICK


def _why(output: str) -> str:
    """The first assertion line of a failing run, to show what caught it."""
    for line in output.splitlines():
        if line.startswith("E "):
            return line[1:].strip()[:160]
    return output.strip().splitlines()[-1][:160] if output.strip() else ""


def run_one(m: Mutant, env: dict) -> tuple[str, str]:
    """(outcome, detail): caught, SURVIVED, unchecked (its tests skipped), ERROR."""
    path = ROOT / m.file
    text = path.read_text()
    if text.count(m.old) != 1:
        return "ERROR", f"the snippet occurs {text.count(m.old)} times in {m.file} (the list is stale)"
    JOURNAL.parent.mkdir(exist_ok=True)
    JOURNAL.write_text(json.dumps({m.file: text}))
    try:
        path.write_text(text.replace(m.old, m.new))
        if m.file.endswith((".c", ".h")):
            b = make()
            if b.returncode != 0:
                return "ERROR", "the mutant does not build: " + b.stderr.strip()[-300:]
        r = subprocess.run([PY, "-m", "pytest", "-q", "-rs", "-p", "no:cacheprovider", "-x",
                            *m.tests.split()], capture_output=True, text=True, cwd=ROOT, env=env)
    finally:
        _restore({m.file: text})
        JOURNAL.unlink(missing_ok=True)
    out = r.stdout + r.stderr
    tail = out.strip().splitlines()[-1] if out.strip() else ""
    if r.returncode == 0:
        if re.search(r"\bpassed\b", tail):
            return "SURVIVED", tail
        return "unchecked", tail + " " + " ".join(ln for ln in out.splitlines() if ln.startswith("SKIPPED"))[:300]
    if r.returncode == 1 and re.search(r"\bfailed\b", tail) and not re.search(r"\berrors?\b", tail):
        return "caught", _why(out)
    return "ERROR", f"pytest exit {r.returncode}: {tail}\n{out[-1500:]}"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("-k", default="", help="only the mutants whose name contains this")
    ap.add_argument("--list", action="store_true", help="list the mutants and their tests")
    ap.add_argument("--ci", action="store_true",
                    help="leave out the mutants marked slow (CI's budget of a few minutes; make mutants runs them all)")
    args = ap.parse_args()
    chosen = [m for m in MUTANTS if args.k in m.name and not (args.ci and m.slow)]
    if args.ci:
        print(f"mutants: CI's subset: {len(chosen)} of {len(MUTANTS)}; "
              f"{sum(m.slow for m in MUTANTS)} slow ones are left to make mutants", flush=True)
    if args.list:
        for m in chosen:
            print(f"{m.name:36s} {m.file}  ->  {m.tests}")
        return 0
    if not chosen:
        print(f"mutants: none named like {args.k!r}", file=sys.stderr)
        return 2

    def interrupted(signum, frame):
        raise KeyboardInterrupt

    for s in (signal.SIGTERM, signal.SIGHUP):
        signal.signal(s, interrupted)
    recover()
    t0 = time.monotonic()
    b = make()
    if b.returncode != 0:
        print(f"mutants: the unchanged tree does not build:\n{b.stderr}", file=sys.stderr)
        return 1
    env = dict(os.environ)
    if any(m.quick for m in chosen):
        env["OSMETER_TEST_QUICK_RUN"] = str(quick_run())
    env.pop("OSMETER_TEST_QUICK_RUN_SAVE", None)
    results = []
    rebuilt = False
    try:
        for m in chosen:
            t = time.monotonic()
            outcome, detail = run_one(m, env)
            rebuilt |= m.file.endswith((".c", ".h"))
            results.append((m, outcome))
            print(f"{outcome:9s} {m.name:36s} {time.monotonic() - t:5.1f} s  {detail}", flush=True)
    except KeyboardInterrupt:
        print("mutants: interrupted; the source is restored", file=sys.stderr)
        return 130
    finally:
        recover()
        if rebuilt:
            make()  # the probes of the unchanged source again
    bad = [(m, o) for m, o in results if o in ("SURVIVED", "ERROR")]
    unchecked = sum(o == "unchecked" for _, o in results)
    print(f"mutants: {len(results)} in {time.monotonic() - t0:.0f} s: "
          f"{sum(o == 'caught' for _, o in results)} caught, {unchecked} unchecked (their tests skipped here), "
          f"{len(bad)} survived or broken")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
