"""The rows a GPU is needed for: the unit tests, the receipts, the CPU against
cuBLAS, several ranks on one GPU, speed and the digest, the fidelity to jax and
the reference JAX job, and the freeze rows. gpu_check_plan.py orders them and
gives each its estimated seconds.

Standard library only, Python 3.8 or newer, as all of the runner.
"""

import os
import re
import subprocess
import sys

from gpu_check_run import (PRECISIONS, REPO, SCRIPT_DIR, TOLERANCE, first_field, last_error, leading_number,
                           output_of, progress, read_text, run_logged, steps_per_second)


# ---- GPU unit tests ------------------------------------------------------------
# The one name pattern of the tests that need no GPU and skip where one is
# (GTEST_SKIP when a device is visible): every other skip on a GPU is a FAIL.
# tests/e2e/gpu/kit_rows_test.py holds cuda_test's sources to it.
GPU_ABSENT_TESTS = "*.NoGpu*"


def skipped_tests(text):
    """The names gtest lists after '[  SKIPPED ]', without its summary line."""
    return re.findall(r"^\[  SKIPPED \] (\S+\.\S+)", text, re.M)


def row_unit_tests(checks):
    """cuda_test without the tests that need no GPU; any skip is a FAIL, and every skip is named."""
    log = checks.path("cuda_test.log")
    # DMLP_GPU_KIT: the kit's programs meet the device's NCCL, which no kit job needs to match.
    environment = dict(os.environ, DMLP_GPU_KIT="1" if checks.kit else "0")
    status = run_logged(["timeout", "-k", "5", checks.job_timeout, os.path.join(checks.bin, "cuda_test"),
                         "--gtest_filter=-" + GPU_ABSENT_TESTS], log, env=environment, status=True)
    text = read_text(log)
    passed = re.search(r"^\[  PASSED  \] (\d*) test", text, re.M)
    skipped = sorted(set(skipped_tests(text)))
    checks.note("skipped gtests (cuda_test, filter -%s): %s" % (GPU_ABSENT_TESTS, " ".join(skipped) or "none"))
    nccl = re.search(r"^nccl: (.*)$", text, re.M)
    if status == 0 and passed and not skipped:
        checks.record("unit tests", "PASS", "%s passed%s" % (passed.group(1), "; " + nccl.group(1) if nccl else ""))
    else:
        interesting = [line for line in text.splitlines() if re.search(r"^\[  FAILED  \]|Failure|error", line)]
        progress("\n".join(interesting[:20]))
        checks.record("unit tests", "FAIL", "rc=%d%s; see cuda_test.log" % (
            status, "; skipped: " + " ".join(skipped) if skipped else ""))


# ---- 1-rank jobs ----------------------------------------------------------------
def rows_receipts(checks):
    """Each precision's job twice: byte-identical receipts, dmlp-verify PASS."""
    for precision in PRECISIONS:
        ok, detail = True, ""
        names = ["cuda-%s-%s" % (precision, run) for run in "ab"]
        for name in names:
            # tf32 is cuBLAS's (GEMM=ordered computes in fp32 and refuses it).
            extra = ("GEMM=cublas",) if precision == "tf32" else ()
            if checks.run_job(name, "cuda", precision, checks.steps, extra=extra) != 0:
                ok, detail = False, "job %s failed: %s" % (name, last_error(checks.path(name + ".stderr")))
                break
            if not checks.verify(checks.path(name)):
                ok, detail = False, "dmlp-verify %s not PASS" % name
        if ok:
            first, second = (checks.path(name) for name in names)
            rate = checks.job_steps_per_s[precision] = steps_per_second(checks.path(names[0] + ".stdout"))
            difference = checks.first_difference(os.path.join(first, "rank-0.jsonl"),
                                                 os.path.join(second, "rank-0.jsonl"))
            if difference is not None:
                ok, detail = False, "receipts differ: " + difference
            elif not checks.verify(first, "--against", second):
                ok, detail = False, "dmlp-verify --against not PASS"
            else:
                detail = "%s steps x2: receipts byte-identical, dmlp-verify PASS; %s steps/s" % (checks.steps, rate)
        checks.record("receipts " + precision, "PASS" if ok else "FAIL", detail)


def rows_cpu_vs_cublas(checks):
    """GEMM=cublas against PLATFORM=cpu, which share no summation order: the
    per-step losses of GPU_CHECK_CPU_STEPS steps within the tolerance per
    precision (run_gpu_checks.sh says how it was measured)."""
    if checks.run_job("cpu-fp32", "cpu", "fp32", checks.cpu_steps) != 0:
        checks.record("cpu job", "FAIL", last_error(checks.path("cpu-fp32.stderr")))
        return
    if not checks.verify(checks.path("cpu-fp32")):
        checks.record("cpu job", "FAIL", "dmlp-verify cpu-fp32 not PASS")
    for precision in PRECISIONS:
        check, name = "cpu vs cublas " + precision, "cublas-" + precision
        if checks.run_job(name, "cuda", precision, checks.cpu_steps, extra=("GEMM=cublas",)) != 0:
            checks.record(check, "FAIL", "job %s failed: %s" % (name, last_error(checks.path(name + ".stderr"))))
            continue
        with open(checks.path("compare.log"), "a") as log:
            status, comparison = output_of(
                [sys.executable, os.path.join(SCRIPT_DIR, "compare_losses.py"), checks.path(name + "/rank-0.jsonl"),
                 checks.path("cpu-fp32/rank-0.jsonl"), checks.cpu_steps, *TOLERANCE[precision]], stderr=log)
        checks.record(check, "PASS" if status == 0 else "FAIL", "%s (tol %s, step 1 %s)" % (
            comparison, *TOLERANCE[precision]))


# ---- several ranks on the one GPU ------------------------------------------------
def row_ranks_on_one_gpu(checks):
    """NCCL refuses two ranks on one device; COLLECTIVES=gloo stages the slices
    through host memory instead, and with DATA_SHARDS fixed the bytes must not
    depend on the number of ranks. Older programs lack the variable (it is a
    string in the program when it is parsed)."""
    check = "ranks 1/2/4 on 1 GPU"
    with open(os.path.join(checks.bin, "dmlp-train"), "rb") as program:
        if b"COLLECTIVES" not in program.read():
            checks.record(check, "SKIP", "dmlp-train does not know COLLECTIVES (no COLLECTIVES=gloo yet)")
            return
    ok, detail = True, ""
    for ranks in ("1", "2", "4"):
        name = "gloo-" + ranks
        if checks.run_job(name, "cuda", "fp32", checks.steps, ranks, ("COLLECTIVES=gloo", "DATA_SHARDS=4")) != 0:
            ok, detail = False, "job %s failed: %s" % (name, last_error(checks.path(name + ".stderr")))
            break
        if not checks.verify(checks.path(name)):
            ok, detail = False, "dmlp-verify %s not PASS" % name
            break
    if ok:
        for ranks in ("2", "4"):
            for file in ("metrics.jsonl", "state.safetensors"):
                difference = checks.first_difference(checks.path("gloo-1/" + file),
                                                     checks.path("gloo-%s/%s" % (ranks, file)), with_errors=True)
                if difference is not None:
                    ok, detail = False, "%s differs, 1 vs %s ranks: %s" % (file, ranks, difference)
    if ok:
        detail = ("%s steps, DATA_SHARDS=4: every run PASS, metrics.jsonl + state.safetensors byte-identical"
                  % checks.steps)
    checks.record(check, "PASS" if ok else "FAIL", detail)


# ---- benchmark and the digest's threads -------------------------------------------
def rows_speed(checks):
    """gpu_bench: the update against the cuBLAS floor (goal <= 1.3x, never a failure) and the digest's figures."""
    output, errors = checks.path("gpu_bench.out"), checks.path("gpu_bench.err")
    with open(output, "w") as out, open(errors, "w") as err:
        status = subprocess.run(["timeout", "-k", "5", checks.job_timeout, os.path.join(checks.bin, "gpu_bench"),
                                 "--precision", "both"], stdout=out, stderr=err).returncode
    if status != 0:
        checks.record("gpu_bench", "FAIL", last_error(errors))
        return
    text = read_text(output)

    def value(precision, name):
        return first_field(text, "%s.%s=" % (precision, name))

    for precision in PRECISIONS:
        update, floor = value(precision, "update_ms"), value(precision, "floor_update_ms")
        ratio = "%.2f" % (leading_number(update) / leading_number(floor)) if leading_number(floor) else "n/a"
        goal = "PASS" if ratio != "n/a" and float(ratio) <= 1.3 else "MISS"
        checks.record("speed " + precision, goal, "update %s ms = %sx floor %s ms (%s TFLOP/s); GEMMs alone %s ms" % (
            update, ratio, floor, value(precision, "sgemm_8192_tflops"), value(precision, "update_gemms_only_ms")))
    checks.record("digest", "INFO", "image %s GB: copy %s GB/s, sha256 %s GB/s, step +%s%% with the pipelined digest"
                  % (value("fp32", "image_gb"), value("fp32", "snapshot_copy_gb_per_s"),
                     value("fp32", "sha256_gb_per_s"), value("fp32", "digest_overhead_pct")))


def row_ordered_gemm(checks):
    """gpu_bench --ordered-gemm: dmlp's ordered SGEMM (GEMM=ordered) beside cuBLAS
    fp32 and tf32 at the update's shapes. Figures, no goal: PASS when they were
    measured, FAIL when the benchmark fails or prints no total."""
    output = checks.path("ordered_gemm.out")
    status = run_logged(["timeout", "-k", "5", checks.job_timeout, os.path.join(checks.bin, "gpu_bench"),
                         "--ordered-gemm"], output, status=True)
    total = first_field(read_text(output), "ordered_gemm_total ")
    if status != 0 or not total:
        checks.record("ordered gemm", "FAIL", "rc=%d: %s" % (status, last_error(output)))
        return
    fields = dict(field.split("=", 1) for field in total.split() if "=" in field)
    checks.record("ordered gemm", "PASS", "update's GEMMs: ordered %s ms (%s GFLOP/s) = %sx cuBLAS fp32 %s ms; "
                  "tf32 %s ms; FP32 floor %s ms (per-GEMM lines: ordered_gemm.out)" % (
                      fields.get("ordered_ms"), fields.get("ordered_gflops"), fields.get("ratio_to_cublas_fp32"),
                      fields.get("cublas_fp32_ms"), fields.get("cublas_tf32_ms"), fields.get("floor_ms")))


def row_digest_threads(checks):
    """Digest throughput against its thread count K, one pipeline and 8 at once
    (the target runs 8 ranks per host), and the GPU step with/without it."""
    status, detail = checks.row_script("digest_row.sh", checks.bin, checks.path("digest_sweep.out"),
                                       checks.job_timeout)
    checks.record("digest threads", status, detail)


# ---- the reference's samples and init, and the reference JAX job -------------------
def row_fidelity(checks):
    """dmlp's draws on this GPU must be jax's CPU bits; jax's own GPU bits
    against its CPU's are reported (fidelity_row.sh)."""
    status, detail = checks.row_script("fidelity_row.sh", checks.bin, checks.work, checks.job_timeout, "gpu")
    checks.record("fidelity jax", status, detail)


def rows_versus_jax(checks):
    """The reference JAX job on the same GPU at both precisions; faster than it is the goal."""
    if os.environ.get("GPU_CHECK_SKIP_REFERENCE", "0") == "1":
        checks.record("reference", "SKIP", "GPU_CHECK_SKIP_REFERENCE=1")
        return
    if not os.path.isfile(os.path.join(checks.reference_dir, "train.py")):
        # The comparison with JAX is part of the check: without the job it failed.
        checks.record("reference", "FAIL", "no reference job (train.py) in %s (set REFERENCE_DIR)"
                      % checks.reference_dir)
        return
    for precision in PRECISIONS:
        name = "reference-" + precision
        environment = dict(os.environ, REFERENCE_PYTHON=os.path.join(SCRIPT_DIR, "python_jax_cuda.sh"),
                           FEATURES="512", WIDTH="2048", LAYERS="3", CLASSES="10", BATCH="4096",
                           MICROBATCHES="8", STEPS=checks.reference_steps, NUM_PROCESSES="1",
                           OUT_DIR=checks.path(name), LOG_DIR=checks.path(name + "-logs"),
                           REFERENCE_DIR=checks.reference_dir)
        if precision == "fp32":
            # JAX's GPU default for float32 matmuls is TF32; "highest" is full fp32.
            environment["JAX_DEFAULT_MATMUL_PRECISION"] = "highest"
        log = checks.path(name + ".out")
        command = ["timeout", "-k", "10", checks.job_timeout, "bash",
                   os.path.join(REPO, "bench/reference/run_reference.sh")]
        if not run_logged(command, log, env=environment):
            tail = read_text(log).splitlines()[-2:]
            checks.record("vs JAX " + precision, "FAIL",
                          "reference did not run: " + "".join(line + " " for line in tail))
            continue
        jax = first_field(read_text(log), "reference_steps_per_s=")
        # dmlp's figure is measured the same way (METRIC line times, step 1 excluded).
        dmlp = checks.job_steps_per_s.get(precision) or "n/a"
        if leading_number(dmlp) > 0 and leading_number(jax) > 0:
            speedup = "%.2f" % (leading_number(dmlp) / leading_number(jax))
        else:
            speedup = "n/a"
        checks.record("vs JAX " + precision, "PASS" if leading_number(speedup) > 1 else "MISS",
                      "dmlp %s steps/s, JAX %s steps/s (%sx)" % (dmlp, jax, speedup))


# ---- frozen and restored -----------------------------------------------------------
# The frozen job must outlive the freeze: its steps come from its rate (the
# receipts row's, else a short calibration job), so that it runs about
# FREEZE_JOB_SECONDS whatever the GPU; never fewer than FREEZE_MIN_STEPS.
FREEZE_JOB_SECONDS = 15
FREEZE_MIN_STEPS = 20
FREEZE_MICROBATCHES = "8"


def freeze_steps(checks):
    """STEPS for a frozen job of about FREEZE_JOB_SECONDS at this GPU's rate."""
    rate = leading_number(checks.job_steps_per_s.get("fp32", ""))
    if rate <= 0:
        checks.run_job("freeze-calibration", "cuda", "fp32", 4)
        rate = leading_number(steps_per_second(checks.path("freeze-calibration.stdout")))
        checks.job_steps_per_s.setdefault("fp32", "%.3f" % rate if rate > 0 else "n/a")
    return max(FREEZE_MIN_STEPS, int(rate * FREEZE_JOB_SECONDS + 0.5))


def criu_folder(checks):
    """The kit's criu/; without a kit, tools/criu.sh bundles one the same way (DMLP_CRIU_DIR to reuse one)."""
    if checks.kit:
        return os.path.join(checks.kit, "criu")
    criu_dir = os.environ.get("DMLP_CRIU_DIR") or checks.path("criu")
    helper = os.path.join(REPO, "tools", "criu.sh")
    if not os.access(os.path.join(criu_dir, "criu"), os.X_OK) and os.access(helper, os.X_OK):
        sys.stderr.flush()
        subprocess.run([helper, "--bundle", criu_dir], stdout=sys.stderr)
    return criu_dir


def row_freeze(checks, check, ranks, *settings):
    """One job on the one GPU: CUDA checkpoint, CRIU dump of the whole job, down
    longer than its heartbeat, CRIU restore, CUDA restore (tests/gpu/freeze_row.sh):
    PASS byte-identical, SKIP where a tool or the kernel refuses, FAIL where dmlp is wrong."""
    steps = freeze_steps(checks)
    environment = dict(os.environ, FREEZE_ROW_PORT=checks.take_port(), FREEZE_ROW_TIMEOUT=checks.job_timeout)
    with open(checks.path("freeze.log"), "a") as log:
        status, detail = checks.row_script("freeze_row.sh", checks.bin, criu_folder(checks), checks.path("freeze"),
                                           "cuda-" + ranks, ranks, "cuda", "STEPS=%d" % steps,
                                           "MICROBATCHES=" + FREEZE_MICROBATCHES, *settings,
                                           env=environment, stderr=log)
    checks.record(check, status, "STEPS=%d; %s" % (steps, detail))


def row_freeze_one_rank(checks):
    row_freeze(checks, "freeze 1 rank", "1")


def row_freeze_two_ranks(checks):
    row_freeze(checks, "freeze 2 ranks gloo", "2", "COLLECTIVES=gloo", "DATA_SHARDS=2")
